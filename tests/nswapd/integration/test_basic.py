# SPDX-License-Identifier: GPL-2.0-only
"""Requests and replies: HELLO, PUT, GET, INVAL, STATUS, FREE_ALL, versions,
seals, reconciliation, epochs, options."""

import socket
import threading

import pytest

from conftest import p, page, wait_for


def pages(seed, n):
    return [page(seed, i) for i in range(n)]


def test_roundtrip_256_pages(servers):
    s = servers()
    with s.client(0x1234) as c:
        assert c.info.held == 0 and c.info.state == p.SERVER_NORMAL
        data = pages("a", 256)
        assert c.put(1000, 7, data) == p.ST_OK
        assert c.get(1000, 256, 7) == data
        assert c.get(1100, 10, 7) == data[100:110]
        st = c.status()
        assert st.held == 256
        assert st.free == st.capacity - 256
        assert c.free_pages == min(st.free, 2**32 - 1)


def test_reply_echoes_request(servers):
    s = servers()
    with s.client(5) as c:
        i = c.send_put(77, 9, pages("e", 3))
        h, payload = c.wait(i)
        assert (h.opcode, h.id, h.key, h.count, h.vers, h.flags, h.len) == \
            (p.OP_PUT, i, 77, 3, 9, p.F_REPLY, 0)
        i = c.send_get(77, 3, 9)
        h, payload = c.wait(i)
        assert (h.opcode, h.id, h.key, h.count, h.vers, h.len) == \
            (p.OP_GET, i, 77, 3, 9, 3 * (p.PAGE_SIZE + p.SEAL_LEN))
        # 48-bit versions travel whole
        assert c.put(5, p.VERS_MAX, pages("v", 1)) == p.ST_OK
        assert c.get(5, 1, p.VERS_MAX) == pages("v", 1)


def test_pipelined_requests(servers):
    s = servers()
    with s.client(7) as c:
        puts = [c.send_put(k * 16, k + 1, pages(k, 16)) for k in range(40)]
        gets = [c.send_get(k * 16, 16, k + 1) for k in range(40)]
        stale = c.send_get(0, 16, 99)
        for i in puts:
            c.wait(i)
        for k, i in reversed(list(enumerate(gets))):
            assert p.split_sealed(c.wait(i)[1], 16)[0] == pages(k, 16)
        assert c.wait(stale, check=False)[0].status == p.ST_STALE
        assert c.status().held == 640


def test_full_stores_nothing(servers):
    s = servers("--min-mb", 1, "--max-mb", 1)     # 256 pages
    with s.client(1) as c:
        assert c.status().capacity == 256
        assert c.put(0, 1, pages("x", 200)) == p.ST_OK
        assert c.put(1000, 1, pages("y", 100)) == p.ST_FULL
        assert c.get(1000, 1, 1) is None
        assert c.free_pages == 56
        st = c.status()
        assert (st.held, st.free) == (200, 56)
        # the same (key, vers) is replaced in place: 150 replaced + 56 new fit
        assert c.put(50, 1, pages("z", 206)) == p.ST_OK
        st = c.status()
        assert (st.held, st.free) == (256, 0)
        assert c.get(50, 206, 1) == pages("z", 206)
        assert c.get(0, 50, 1) == pages("x", 200)[:50]
        assert c.put(300, 1, pages("w", 1)) == p.ST_FULL
        # a new version is another page: no room for it
        assert c.put(0, 2, pages("v", 1)) == p.ST_FULL
        assert c.put(0, 1, pages("v", 256)) == p.ST_OK   # all replaced
    with s.client(2) as other:
        assert other.put(0, 1, pages("o", 1)) == p.ST_FULL
        assert other.status().held == 0


def test_stale_on_version_mismatch(servers):
    s = servers()
    with s.client(3) as c:
        c.put(10, 5, pages("s", 4))
        assert c.get(10, 4, 6) is None
        assert c.get(10, 4, 4) is None
        assert c.get(10, 5, 5) is None       # key 14 missing
        c.put(12, 6, pages("t", 1))          # key 12 also has version 6 now
        assert c.get(10, 4, 5) == pages("s", 4)
        assert c.get(12, 1, 6) == pages("t", 1)
        assert c.get(11, 2, 6) is None


def test_versions_late_put_never_replaces_newer(servers):
    """Several versions of one key live side by side: a PUT that arrives
    late (an older version) adds its page and destroys nothing; INVAL
    drops exactly the (key, vers) it names."""
    s = servers()
    with s.client(3) as c:
        assert c.put(7, 20, [page("new")]) == p.ST_OK
        assert c.put(7, 19, [page("late")]) == p.ST_OK
        assert c.get(7, 1, 20) == [page("new")]
        assert c.get(7, 1, 19) == [page("late")]
        assert c.status().held == 2
        assert c.put(7, 19, [page("late2")]) == p.ST_OK    # same (key, vers): replaced
        assert c.get(7, 1, 19) == [page("late2")] and c.status().held == 2
        c.inval([(7, 19)])
        assert c.get(7, 1, 19) is None
        assert c.get(7, 1, 20) == [page("new")]
        c.inval([(7, 20)])
        assert c.status().held == 0


def test_seals_returned_as_received(servers):
    s = servers()
    with s.client(3) as c:
        seals = [bytes([i]) * 16 for i in range(3)]
        assert c.put(100, 4, pages("q", 3), seals=seals) == p.ST_OK
        assert c.get_sealed(100, 3, 4) == (pages("q", 3), seals)
        assert c.get_sealed(101, 2, 4) == (pages("q", 3)[1:], seals[1:])


def test_reconciliation(servers):
    """RETAIN_BEGIN g / RETAIN / RETAIN_END g drop exactly the claimed
    pages not marked in g; pages PUT after BEGIN survive; a stale END does
    nothing; the bitmap names the entries not stored."""
    s = servers()
    with s.client(0x31) as c:
        c.put(0, 1, pages("r", 8))                     # keys 0..7, vers 1
        c.put(3, 2, [page("r2")])                      # key 3 vers 2 too
        c.retain_begin(5)
        missing = c.retain([(0, 1), (1, 1), (3, 2), (9, 1), (2, 7), (4, 1)])
        assert missing == [3, 4]
        c.put(20, 1, [page("after")])                  # PUT after BEGIN 5
        c.retain_begin(6)                              # a new generation
        assert c.retain([(0, 1), (1, 1), (3, 2), (4, 1)]) == []
        c.put(21, 1, [page("after6")])                 # PUT after BEGIN 6: kept
        assert c.retain_end(5) == (0, 11)              # stale: nothing happens
        assert c.status().held == 11
        dropped, held = c.retain_end(6)
        assert (dropped, held) == (6, 5)               # 2, 3@1, 5, 6, 7, 20 go
        for k, v in [(0, 1), (1, 1), (3, 2), (4, 1), (21, 1)]:
            assert c.get(k, 1, v) is not None, (k, v)
        for k, v in [(2, 1), (3, 1), (5, 1), (20, 1)]:
            assert c.get(k, 1, v) is None, (k, v)
        assert c.retain_end(6) == (0, 5)               # over: nothing more
        assert c.status().held == 5


def test_reconciliation_closes_the_areas_older_connections(servers):
    """A client reconciles each new connection; its older ones are
    abandoned. A PUT still buffered on one of them and read after
    RETAIN_BEGIN would carry the new generation's mark and survive its
    RETAIN_END, a page the client does not know of: the older connections
    close at RETAIN_BEGIN, unread. Other areas' connections stay."""
    s = servers()
    old = s.client(0x5a)
    other = s.client(0x5b)
    new = s.client(0x5a)
    assert old.put(0, 1, [page("listed")]) == p.ST_OK
    new.retain_begin(9)
    try:
        late = old.put(1, 1, [page("abandoned")])
    except (ConnectionError, p.ProtocolError, OSError):
        late = None
    assert new.retain([(0, 1)]) == []
    assert new.retain_end(9) == (0, 1), "a page of an abandoned connection survived"
    assert new.get(1, 1, 1) is None
    assert late is None, "a PUT on an abandoned connection was served"
    assert other.put(0, 1, [page("other")]) == p.ST_OK
    for c in (old, other, new):
        c.close()


def test_epoch_stable_then_new_after_restart(servers):
    s = servers(name="e1")
    with s.client(1) as c:
        e = c.info.epoch
        assert e != 0
        assert c.status().epoch == e
    with s.client(2) as c:
        assert c.info.epoch == e
    s.stop()
    s2 = servers(name="e2")
    with s2.client(1) as c:
        assert c.info.epoch not in (0, e)
        assert c.status().epoch == c.info.epoch


def test_inval_right_and_wrong_version(servers):
    s = servers()
    with s.client(4) as c:
        c.put(0, 5, pages("i", 4))
        c.inval([(0, 5), (1, 4), (99, 1), (2, 5)])
        assert c.get(0, 1, 5) is None
        assert c.get(1, 1, 5) == [page("i", 1)]
        assert c.get(2, 1, 5) is None
        assert c.get(3, 1, 5) == [page("i", 3)]
        assert c.status().held == 2


def test_free_all_and_clients_apart(servers):
    s = servers()
    with s.client(10) as a, s.client(11) as b:
        a.put(0, 1, pages("a", 8))
        b.put(0, 1, pages("b", 8))
        assert b.get(0, 8, 1) == pages("b", 8)
        a.free_all()
        assert a.status().held == 0
        assert a.get(0, 1, 1) is None
        assert b.status().held == 8


def test_reconnect_finds_pages(servers):
    s = servers()
    c = s.client(0xfeed)
    c.put(500, 3, pages("r", 64))
    c.close()
    s.wait_log(r"area [0-9a-f]{8}: client disconnected: keeping its 64 pages")
    with s.client(0xfeed) as c:
        assert c.info.held == 64
        assert c.get(500, 64, 3) == pages("r", 64)
    with s.client(0xbeef) as other:
        assert other.info.held == 0
        assert other.get(500, 1, 3) is None


def test_client_timeout_drops_pages(servers):
    s = servers("--client-timeout-s", 1)
    c = s.client(0x77)
    c.put(0, 1, pages("t", 5))
    c.close()
    s.wait_log(r"area [0-9a-f]{8}: client gone for 1 s: dropping its 5 pages")
    with s.client(0x77) as c:
        assert c.info.held == 0
        assert c.get(0, 1, 1) is None


def test_request_before_hello(servers):
    s = servers()
    for frame in (p.status_frame(1), p.put_frame(1, 0, 1, [page(0)]),
                  p.get_frame(1, 0, 1, 1)):
        c = s.client(1, hello=False)
        c.send_raw(frame)
        h, payload = c.recv_reply()
        assert h.status == p.ST_NOHELLO and h.id == 1 and payload == b""
        with pytest.raises((p.ProtocolError, ConnectionError)):
            c.recv_reply()
        c.close()
    s.wait_log("request before HELLO")


def test_insecure_logs_a_warning(servers):
    s = servers()
    s.wait_log(r"warn: --insecure: no authentication")


def test_ipv6(servers):
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    s = servers(listen="[::1]:0")
    assert s.addr.startswith("[::1]:")
    with s.client(6) as c:
        c.put(0, 1, pages("6", 2))
        assert c.get(0, 2, 1) == pages("6", 2)


def test_many_clients_at_once(servers):
    s = servers("--max-conns-per-addr", 64)
    errors = []

    def work(cid):
        try:
            with s.client(cid) as c:
                for r in range(5):
                    c.put(r * 8, r, pages(cid, 8))
                for r in range(5):
                    assert c.get(r * 8, 8, r) == pages(cid, 8)
        except Exception as e:  # noqa: BLE001
            errors.append(f"{cid}: {e!r}")

    threads = [threading.Thread(target=work, args=(100 + i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    with s.client(1) as c:
        assert c.status().free == c.status().capacity - 40 * 40


def test_slow_reader_is_throttled_not_dropped(servers):
    """Replies pile up while the client does not read: the server stops
    reading from it, serves others, and resumes once the client reads."""
    s = servers()
    with s.client(8) as c, s.client(9) as other:
        c.put(0, 1, pages("big", 256))
        ids = [c.send_get(0, 256, 1) for _ in range(48)]   # 48 MiB of replies
        other.put(0, 1, pages("o", 4))
        assert other.get(0, 4, 1) == pages("o", 4)
        s.wait_log(r"reading paused")
        want = pages("big", 256)
        for i in ids:
            assert p.split_sealed(c.wait(i)[1], 256)[0] == want
        assert c.status().held == 256


def test_bad_options_exit_2(tmp_path):
    from conftest import NSWAPD
    import subprocess
    conf = tmp_path / "bad.conf"
    conf.write_text("max_mb = 4\nbogus_key = 1\n")
    for args in (["--bogus"], ["--max-mb", "x"], ["--listen", "localhost:1"],
                 ["--peer", "1.2.3.4"], ["--log-level", "loud"],
                 ["--min-mb", "8", "--max-mb", "4"], ["--config", str(conf)],
                 ["--config", str(tmp_path / "missing.conf")],
                 ["--psk-file", str(tmp_path / "missing")], [],
                 ["--insecure", "--auth-token-file", str(conf)],
                 ["--insecure", "--identity", "me"]):
        r = subprocess.run([NSWAPD] + args, capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (args, r.stderr)
        assert r.stderr.startswith("error: "), (args, r.stderr)
    r = subprocess.run([NSWAPD, "--insecure", "--auth-token-file", "x"], capture_output=True, text=True)
    assert "replaced by psk_file" in r.stderr
    r = subprocess.run([NSWAPD], capture_output=True, text=True)
    assert "--insecure" in r.stderr
    r = subprocess.run([NSWAPD, "--insecure", "--config", str(conf)], capture_output=True, text=True)
    assert "bad.conf:2: unknown key 'bogus_key'" in r.stderr
    r = subprocess.run([NSWAPD, "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--max-mb" in r.stdout and "--psk-file" in r.stdout
    assert "auth-token" not in r.stdout


def test_config_file_and_command_line(servers, tmp_path):
    s = servers("--max-mb", 2, config="# comment\nmax-mb = 1\nmin_mb=1\n\nlog_level = debug\n")
    with s.client(1) as c:
        assert c.status().capacity == 512          # the command line wins

