# SPDX-License-Identifier: GPL-2.0-only
"""Capacity that follows the node, and giving pages up without losing any:
MOVED to a peer, RETURN to the client, draining on SIGTERM."""
import signal
import time

from conftest import auth, free_port, key_of, p, page, psk_file, wait_for

MB = 256    # pages


def fill(c, n, seed="f", vers=1):
    """n pages at keys 0..n-1, in frames of at most 256 pages."""
    for k in range(0, n, p.MAX_PAGES):
        m = min(p.MAX_PAGES, n - k)
        assert c.put(k, vers, [page(seed, k + i) for i in range(m)]) == p.ST_OK


def answer_all(c, want_pages, op, status=p.ST_OK, timeout=20.0):
    """Answer the server's requests of kind op until want_pages pages came;
    returns their (key, vers, payload info)."""
    got = []
    n = 0
    while n < want_pages:
        req = c.next_server_request(timeout)
        assert req is not None, f"got {n} of {want_pages} pages by {p.OP_NAMES[op]}"
        assert req.hdr.opcode == op and not req.hdr.flags & p.F_REPLY
        assert 1 <= req.hdr.count <= p.MAX_PAGES
        if op == p.OP_MOVED:
            kvs, addr = p.parse_moved(req.hdr, req.payload)
            got += [(k, v, addr) for k, v in kvs]
        else:
            got += p.parse_return(req.hdr, req.payload)
        n += req.hdr.count
        c.answer(req, status)
    return got


def held(s, cid):
    return s.status(cid).held


def test_shrink_by_sighup_moves_pages_to_peer(servers):
    peer = servers("--max-mb", 64, name="peer")
    a = servers(config=f"max_mb = 4\nreserve_mb = 0\npeer = {peer.addr}\n", name="a")
    with a.client(0xc1) as c:
        assert c.status().capacity == 4 * MB
        fill(c, 3 * MB, "m")
        a.reload(f"max_mb = 1\nreserve_mb = 0\npeer = {peer.addr}\n")
        moved = answer_all(c, 2 * MB, p.OP_MOVED)
        assert len(moved) == 2 * MB
        assert {addr for _, _, addr in moved} == {peer.addr}
        assert sorted(k for k, _, _ in moved) == list(range(2 * MB))   # oldest first
        wait_for(lambda: c.status().held == MB, what="held to drop to 256")
        assert c.status().capacity == MB
        # the rest is still here; the moved pages are on the peer
        assert c.get(2 * MB, MB, 1) == [page("m", 2 * MB + i) for i in range(MB)]
        assert c.get(0, 1, 1) is None
    with peer.client(0xc1) as pc:
        assert pc.info.held == 2 * MB
        for k in range(0, 2 * MB, p.MAX_PAGES):
            assert pc.get(k, p.MAX_PAGES, 1) == [page("m", k + i) for i in range(p.MAX_PAGES)]
    a.wait_log(r"512 pages|256 pages moved to peer")


def test_moved_pages_served_until_ok_and_new_versions_wait(servers):
    """Pages being moved are still served until the client's OK; while the
    server is over capacity a new version finds no room (FULL), and an
    INVAL of a moved page meanwhile leaves nothing for the OK to drop."""
    peer = servers(name="peer")
    a = servers(config=f"max_mb = 2\npeer = {peer.addr}\n", name="a")
    with a.client(0xc2) as c:
        fill(c, 2 * MB, "o")
        a.reload(f"max_mb = 1\npeer = {peer.addr}\n")
        req = c.next_server_request(20)
        assert req.hdr.opcode == p.OP_MOVED
        kvs, _ = p.parse_moved(req.hdr, req.payload)
        k0, v0 = kvs[0]
        assert c.get(k0, 1, v0) == [page("o", k0)]
        assert c.put(k0, 2, [page("rewritten")]) == p.ST_FULL
        c.inval([(k0, v0)])
        c.answer(req)
        rest = answer_all(c, MB - req.hdr.count, p.OP_MOVED) if req.hdr.count < MB else []
        assert len(rest) + req.hdr.count == MB
        wait_for(lambda: c.status().held == MB, what="held to settle")
        assert c.get(k0, 1, v0) is None


def test_no_peer_returns_pages(servers):
    a = servers(config="max_mb = 3\n")
    with a.client(0xd1) as c:
        fill(c, 3 * MB, "r")
        a.reload("max_mb = 1\n")
        # the first answer is a refusal: the pages stay and come again later
        first = c.next_server_request(20)
        assert first.hdr.opcode == p.OP_RETURN
        c.answer(first, p.ST_FULL)
        a.wait_log("keeping them, retrying later")
        assert c.status().held + 0 >= 2 * MB
        returned = answer_all(c, 2 * MB, p.OP_RETURN)
        for k, v, data, seal in returned:
            assert v == 1 and data == page("r", k) and seal == p.seal_of(k, v, data)
        assert sorted(r[0] for r in returned) == list(range(2 * MB))
        wait_for(lambda: c.status().held == MB, what="pages to be handed back")
        assert c.get(0, 1, 1) is None
        assert c.get(2 * MB, MB, 1) == [page("r", 2 * MB + i) for i in range(MB)]


def test_returns_answered_one_at_a_time_never_time_out(servers):
    """The kernel client answers a server's MOVED and RETURN one at a
    time, in the order they came (one event work a server), and a
    server sends an area up to 4 at once: the last waits for the three
    before it. So each answer restarts the clock of those behind it on
    its connection, and a client that answers each within
    request_timeout_s gets every batch, however many wait. Before, each
    clock ran from its send: two servers shrinking together under writes
    (test_chaos) saw RETURNs time out while the client answered the ones
    before them, the pages it took back stayed on the server too, and
    the server stayed over its capacity."""
    a = servers(config="max_mb = 5\nreserve_mb = 0\nrequest_timeout_s = 2\n")
    with a.client(0xd4) as c:
        fill(c, 5 * MB, "q")
        a.reload("max_mb = 1\nreserve_mb = 0\nrequest_timeout_s = 2\n")
        n = 0
        while n < 4 * MB:
            req = c.next_server_request(20)
            assert req is not None and req.hdr.opcode == p.OP_RETURN, n
            time.sleep(1.2)     # each answer well within 2 s of the last
            c.answer(req)
            n += req.hdr.count
        wait_for(lambda: c.status().held == MB, what="pages to be handed back")
    assert "no reply to RETURN" not in a.log(), a.log()
    assert "late RETURN reply" not in a.log(), a.log()


def test_page_stored_again_while_returned_outlives_the_ok(servers):
    """A page the client stores again (the same key and version: a repair
    copy made from another server's) after the server offered it back
    is a new copy: the client's OK to the RETURN, decided before, drops
    only what was offered and not rewritten since."""
    a = servers(config="max_mb = 2\n")
    with a.client(0xd3) as c:
        fill(c, 2 * MB, "s")
        a.reload("max_mb = 1\n")
        req = c.next_server_request(20)
        assert req is not None and req.hdr.opcode == p.OP_RETURN
        k0, v0, data, _ = p.parse_return(req.hdr, req.payload)[0]
        assert c.put(k0, v0, [data]) == p.ST_OK
        c.answer(req)
        if req.hdr.count < MB:
            answer_all(c, MB - req.hdr.count, p.OP_RETURN)
        assert c.get(k0, 1, v0) == [page("s", k0)]


def test_full_peer_then_return(servers):
    """A peer with room for part of the excess takes that; the rest goes back."""
    peer = servers("--min-mb", 1, "--max-mb", 1, name="peer")
    a = servers(config=f"max_mb = 3\npeer = {peer.addr}\n", name="a")
    with a.client(0xd2) as c:
        fill(c, 3 * MB, "p")
        a.reload(f"max_mb = 1\npeer = {peer.addr}\n")
        moved = returned = 0
        while moved + returned < 2 * MB:
            req = c.next_server_request(20)
            assert req is not None
            if req.hdr.opcode == p.OP_MOVED:
                moved += req.hdr.count
            else:
                assert req.hdr.opcode == p.OP_RETURN
                returned += req.hdr.count
            c.answer(req)
        assert moved == MB and returned == MB
        wait_for(lambda: c.status().held == MB, what="held to drop")
    assert held(peer, 0xd2) == MB


def test_disconnected_client_keeps_pages(servers):
    a = servers(config="max_mb = 2\n")
    c = a.client(0xd3)
    fill(c, 2 * MB, "g")
    c.close()
    a.wait_log("disconnected: keeping its 512 pages")
    a.reload("max_mb = 1\n")
    a.wait_log(r"cannot give up 256 more pages: 512 pages of 1 clients that are not connected")
    with a.client(0xd3) as c:      # back: now it can be told
        returned = answer_all(c, MB, p.OP_RETURN)
        assert len(returned) == MB
        wait_for(lambda: c.status().held == MB, what="held to drop")


def test_capacity_follows_meminfo(servers):
    a = servers("--reserve-mb", 10, "--max-mb", 64, "--min-mb", 1,
                meminfo_kb=1024)
    with a.client(0xe1) as c:
        assert c.status().capacity == MB                # the node is short: min_mb
        a.set_meminfo(14 * 1024)
        wait_for(lambda: c.status().capacity == 4 * MB, what="capacity 4 MB")
        a.set_meminfo(30 * 1024)
        wait_for(lambda: c.status().capacity == 20 * MB, what="capacity to grow to 20 MB")
        a.set_meminfo(1 << 30)
        wait_for(lambda: c.status().capacity == 64 * MB, what="capacity to stop at max_mb")
        fill(c, 2 * MB, "c")
        a.set_meminfo(11 * 1024)            # 1 MB above the reserve: used + 1 MB
        wait_for(lambda: c.status().capacity == 3 * MB, what="capacity used + 1 MB")
        assert c.put(2 * MB, 1, [page(i) for i in range(MB)]) == p.ST_OK
        a.set_meminfo(10 * 1024)            # exactly the reserve: capacity = used
        wait_for(lambda: c.status().capacity == 3 * MB and c.status().free == 0,
                 what="capacity = used")
        assert c.status().held == 3 * MB
        assert c.next_server_request(0.3) is None      # nothing to give up


def test_capacity_shrink_below_used_returns(servers):
    a = servers("--reserve-mb", 10, meminfo_kb=12 * 1024)
    with a.client(0xe2) as c:
        wait_for(lambda: c.status().capacity == 2 * MB, what="capacity 2 MB")
        fill(c, MB, "s")
        a.set_meminfo(10 * 1024 - 512)      # the node needs half a MB back
        returned = answer_all(c, MB // 2, p.OP_RETURN)
        assert len(returned) == MB // 2
        wait_for(lambda: c.status().held == MB // 2, what="half returned")


def test_sigterm_drain_moves_to_peer_and_exits_0(servers):
    peer = servers(name="peer")
    a = servers("--peer", peer.addr, name="a")
    with a.client(0xf1) as c:
        fill(c, 300, "d")
        a.signal(signal.SIGTERM)
        a.wait_log("draining")
        assert c.put(1000, 1, [page(0)]) == p.ST_DRAINING
        st = c.status()
        assert st.state == p.SERVER_DRAINING and st.free == 0
        assert c.get(0, 10, 1) == [page("d", i) for i in range(10)]   # still served
        moved = answer_all(c, 300, p.OP_MOVED)
        assert sorted(k for k, _, _ in moved) == list(range(300))
        assert a.wait_exit() == 0
    a.wait_log("drained: every page given up")
    with peer.client(0xf1) as pc:
        assert pc.get(0, 256, 1) == [page("d", i) for i in range(256)]
        assert pc.get(256, 44, 1) == [page("d", 256 + i) for i in range(44)]


def test_drain_without_peer_returns_then_exits_0(servers):
    a = servers()
    with a.client(0xf2) as c:
        fill(c, 10, "x")
        a.signal(signal.SIGINT)
        assert len(answer_all(c, 10, p.OP_RETURN)) == 10
        assert a.wait_exit() == 0


def test_drain_timeout_loses_pages_and_fails(servers):
    a = servers("--drain-timeout-s", 1)
    c = a.client(0xf3)
    fill(c, 10, "l")
    c.close()
    a.wait_log("disconnected")
    a.signal(signal.SIGTERM)
    assert a.wait_exit() != 0
    a.wait_log(r"drain timed out after 1 s: 10 pages lost")


def test_second_sigterm_exits_at_once(servers):
    a = servers()
    c = a.client(0xf4)
    fill(c, 10, "q")
    c.close()
    a.wait_log("disconnected")
    a.signal(signal.SIGTERM)
    a.wait_log("draining")
    a.signal(signal.SIGTERM)
    assert a.wait_exit(10) != 0
    a.wait_log("second signal: exiting now, 10 pages lost")


def test_bad_reload_keeps_old_config(servers):
    a = servers(config="max_mb = 2\n")
    with a.client(1) as c:
        a.reload("max_mb = lots\n")
        a.wait_log("reload failed")
        assert c.status().capacity == 2 * MB
        assert a.alive()


def test_moved_refused_then_returned(servers):
    """A client that answers MOVED with FULL (it does not trust the peer)
    gets its pages back by RETURN instead, so the server still shrinks."""
    peer = servers(name="peer")
    a = servers(config=f"max_mb = 2\npeer = {peer.addr}\n", name="a")
    with a.client(0xd5) as c:
        fill(c, 2 * MB, "n")
        a.reload(f"max_mb = 1\npeer = {peer.addr}\n")
        first = c.next_server_request(20)
        assert first.hdr.opcode == p.OP_MOVED
        c.answer(first, p.ST_FULL)
        a.wait_log("refused: handing pages back instead")
        returned = 0
        while returned < MB:
            req = c.next_server_request(20)
            assert req is not None and req.hdr.opcode == p.OP_RETURN
            for k, v, data, seal in p.parse_return(req.hdr, req.payload):
                assert data == page("n", k) and seal == p.seal_of(k, v, data)
            returned += req.hdr.count
            c.answer(req)
        wait_for(lambda: c.status().held == MB, what="held to drop")


def test_shrink_moves_to_authenticated_peer(servers, tmp_path):
    """Both servers with keys: a authenticates to the peer as identity
    "srv-a" (marked peer there), the pages land in the client's area on
    the peer, and the client reads them there with its own identity."""
    keys = psk_file(tmp_path, ["alice", "srv-a"], peers=["srv-a"])
    peer = servers("--psk-file", keys, name="peer")
    a = servers("--psk-file", keys, "--identity", "srv-a",
                config=f"max_mb = 2\nreserve_mb = 0\npeer = {peer.addr}\n", name="a")
    with a.client(0xa1, **auth("alice")) as c:
        fill(c, 2 * MB, "s")
        a.reload(f"max_mb = 1\nreserve_mb = 0\npeer = {peer.addr}\n")
        moved = answer_all(c, MB, p.OP_MOVED)
        assert {addr for _, _, addr in moved} == {peer.addr}
        wait_for(lambda: c.status().held == MB, what="held to drop")
    peer.wait_log(r"peer server ready \(authenticated\)")
    with peer.client(0xa1, **auth("alice")) as pc:
        assert pc.info.held == MB
        assert pc.get(0, p.MAX_PAGES, 1) == [page("s", i) for i in range(p.MAX_PAGES)]
        assert pc.retain([(k, 1) for k in range(MB)]) == []     # claimed now
    with peer.client(0xa1, **auth("srv-a")) as other:
        assert other.info.held == 0          # another identity's area


def peer_with_bound_keys(servers, tmp_path, bound_to=None):
    """A peer holding alice's key and srv-a's (as a peer) bound to its own
    address, or srv-a's bound to bound_to; and srv-a holding its own."""
    addr = f"127.0.0.1:{free_port()}"
    path = str(tmp_path / "peer.psk")
    p.write_psk_file(path, {
        "alice": p.bound_key(key_of("alice"), addr),
        "srv-a": (p.bound_key(key_of("srv-a"), bound_to or addr), True)})
    peer = servers("--psk-file", path, listen=addr, name="peer")
    keys = psk_file(tmp_path, ["alice", "srv-a"], name="a.psk")
    a = servers("--psk-file", keys, "--identity", "srv-a",
                config=f"max_mb = 2\nreserve_mb = 0\npeer = {peer.addr}\n", name="a")
    return peer, a


def shrink_by_half(a, peer, c, seed, op, timeout=15.0):
    """a holds 2 MiB of c's, then must keep 1: what c is asked about the
    other half, by MOVED (to peer) or RETURN."""
    fill(c, 2 * MB, seed)
    a.reload(f"max_mb = 1\nreserve_mb = 0\npeer = {peer.addr}\n")
    got = answer_all(c, MB, op, timeout=timeout)
    assert len(got) == MB
    return got


def test_shrink_moves_to_peer_holding_keys_bound_to_it(servers, tmp_path):
    """The peer has neither our key nor alice's, only theirs bound to its
    address: a proves to it as srv-a, the pages land there, and alice
    reads them there."""
    peer, a = peer_with_bound_keys(servers, tmp_path)
    with a.client(0xa3, **auth("alice")) as c:
        shrink_by_half(a, peer, c, "u", p.OP_MOVED)
    peer.wait_log(r"peer server ready \(authenticated\)")
    with peer.client(0xa3, **auth("alice")) as pc:
        assert pc.key_bound and pc.info.held == MB
        assert pc.get(0, p.MAX_PAGES, 1) == [page("u", i) for i in range(p.MAX_PAGES)]


def test_peer_with_a_key_bound_to_another_address_is_not_used(servers, tmp_path):
    """A peer whose key for us is bound to another address is not the
    peer we configured: a refuses its proof and the pages come back by
    RETURN."""
    peer, a = peer_with_bound_keys(servers, tmp_path, bound_to="127.0.0.1:9")
    with a.client(0xa4, **auth("alice")) as c:
        shrink_by_half(a, peer, c, "v", p.OP_RETURN, timeout=30)
    a.wait_log("its proof is wrong: it has neither our key nor one bound to its address")


def test_peer_without_our_key_is_not_used(servers, tmp_path):
    """A peer that does not know our identity refuses us: pages come back
    by RETURN."""
    keys_a = psk_file(tmp_path, ["alice", "srv-a"], name="a.psk")
    keys_peer = psk_file(tmp_path, ["alice"], name="peer.psk")
    peer = servers("--psk-file", keys_peer, name="peer")
    a = servers("--psk-file", keys_a, "--identity", "srv-a",
                config=f"max_mb = 2\nreserve_mb = 0\npeer = {peer.addr}\n", name="a")
    with a.client(0xa2, **auth("alice")) as c:
        shrink_by_half(a, peer, c, "t", p.OP_RETURN, timeout=30)
    peer.wait_log("HELLO from an unknown identity")
