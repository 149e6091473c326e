# SPDX-License-Identifier: GPL-2.0-only
"""Bad input: the server answers INVALID where it can, closes that
connection, never crashes, and keeps serving everyone else."""
import os
import socket
import struct

import pytest

from conftest import p, page


def assert_closed(c):
    with pytest.raises((p.ProtocolError, ConnectionError)):
        c.recv_reply()


def assert_serves(s, cid=999):
    """A healthy server: another connection does a full round trip."""
    assert s.alive()
    with s.client(cid) as c:
        c.put(0, 1, [page("alive")])
        assert c.get(0, 1, 1) == [page("alive")]


def raw_header(length=0, **kw):
    return p.pack_header(p.header(length=length, **kw))


def test_garbage(servers):
    s = servers()
    with s.client(1) as keep:
        keep.put(0, 1, [page("k")])
        for blob in (os.urandom(48), os.urandom(5000), b"\0" * 48, b"GET / HTTP/1.0\r\n\r\n" * 4):
            c = s.client(2, hello=False)
            c.send_raw(blob)
            assert_closed(c)
            c.close()
        # garbage after a good HELLO too
        c = s.client(3)
        c.send_raw(os.urandom(100))
        assert_closed(c)
        c.close()
        assert keep.get(0, 1, 1) == [page("k")]
    s.wait_log("bad magic")
    assert_serves(s)


def test_truncated_frames(servers):
    s = servers()
    cases = [p.put_frame(2, 0, 1, [page(1)] * 8)[:48 + 3 * 4096 + 17],   # mid-payload
             p.hello_frame(1, 5)[:20],                                   # mid-header
             p.hello_frame(1, 5)[:60]]
    for i, data in enumerate(cases):
        c = s.client(10 + i, hello=(i == 0))
        c.send_raw(data)
        c.sock.shutdown(socket.SHUT_WR)
        c.close()
    s.wait_log("in the middle of a frame")
    assert_serves(s)


@pytest.mark.parametrize("what,hdr,after_hello,status", [
    ("count > max", dict(opcode=p.OP_PUT, count=p.MAX_PAGES + 1, length=p.page_bytes(p.MAX_PAGES + 1)), True, p.ST_INVALID),
    ("INVAL count > max", dict(opcode=p.OP_INVAL, count=p.MAX_KVS + 1, length=16 * (p.MAX_KVS + 1)), True, p.ST_INVALID),
    ("huge len", dict(opcode=p.OP_STATUS, length=0xFFFFFFFF), True, p.ST_INVALID),
    ("len too short", dict(opcode=p.OP_PUT, count=2, length=4096), True, p.ST_INVALID),
    ("len without seals", dict(opcode=p.OP_PUT, count=2, length=8192), True, p.ST_INVALID),
    ("unknown opcode", dict(opcode=99), True, p.ST_INVALID),
    ("opcode 0", dict(opcode=0), True, p.ST_INVALID),
    ("count 0 GET", dict(opcode=p.OP_GET, count=0), True, p.ST_INVALID),
    ("count on STATUS", dict(opcode=p.OP_STATUS, count=1), True, p.ST_INVALID),
    ("bad flags", dict(opcode=p.OP_STATUS, flags=0x8000), True, p.ST_INVALID),
    ("status in a request", dict(opcode=p.OP_STATUS, status=1), True, p.ST_INVALID),
    ("free_pages in a request", dict(opcode=p.OP_STATUS, free_pages=1), True, p.ST_INVALID),
    ("vers over 48 bits", dict(opcode=p.OP_GET, count=1, vers=1 << 48), True, p.ST_INVALID),
    ("key wraps", dict(opcode=p.OP_GET, key=2**64 - 1, count=2), True, p.ST_INVALID),
    ("wrong version after HELLO", dict(opcode=p.OP_STATUS, version=1), True, p.ST_INVALID),
    ("wrong version HELLO", dict(opcode=p.OP_HELLO, version=1, length=112), False, p.ST_VERSION),
    ("reply instead of request", dict(opcode=p.OP_PUT, flags=p.F_REPLY, count=1), True, p.ST_INVALID),
    ("reply before HELLO", dict(opcode=p.OP_MOVED, flags=p.F_REPLY, count=1), False, p.ST_NOHELLO),
    ("PUT before HELLO", dict(opcode=p.OP_PUT, count=256, length=p.page_bytes(256)), False, p.ST_NOHELLO),
    ("AUTH without keys", dict(opcode=p.OP_AUTH, length=32), False, p.ST_NOHELLO),
    ("MOVED from a client", dict(opcode=p.OP_MOVED, count=1, length=16 + 64), True, p.ST_INVALID),
    ("PEER_PUT from a client", dict(opcode=p.OP_PEER_PUT, count=1, length=72 + 16 + 4096 + 16), True, p.ST_INVALID),
    ("second HELLO", dict(opcode=p.OP_HELLO, length=112), True, p.ST_INVALID),
])
def test_bad_header(servers, what, hdr, after_hello, status):
    s = servers()
    with s.client(1) as keep:
        keep.put(0, 1, [page("k")])
        c = s.client(2, hello=after_hello)
        length = hdr.get("length", 0)
        data = raw_header(id=42, **hdr)
        # before HELLO, or with a header that does not pass, the server
        # answers on the header alone; a valid one waits for its payload
        valid = p.payload_len(p.unpack_header(data)) == length
        c.send_raw(data + (b"\0" * length if valid and after_hello else b""))
        h, payload = c.recv_reply()
        assert h.status == status, what
        assert h.id == 42 and h.flags == p.F_REPLY and h.len == 0 and payload == b""
        assert_closed(c)
        c.close()
        assert keep.get(0, 1, 1) == [page("k")]
    assert_serves(s)


def test_unknown_role_flags_and_peer_requests(servers):
    s = servers()
    for hello in (struct.pack("<IIQ32s64s", 7, 0, 1, b"", b""),       # role 7
                  struct.pack("<IIQ32s64s", 0, 2, 1, b"", b""),       # unknown flag
                  struct.pack("<IIQ32s64s", 0, 0, 1, b"", b"me")):    # identity, no auth
        c = s.client(1, hello=False)
        c.send_raw(p.frame(p.header(p.OP_HELLO, id=1), hello))
        assert c.recv_reply()[0].status == p.ST_INVALID
        c.close()
    # a peer may not PUT as a client
    c = s.client(5, role=p.ROLE_PEER)
    assert c.put(0, 1, [page(1)], check=False) == p.ST_INVALID
    c.close()
    assert_serves(s)


def test_peer_put_semantics(servers):
    """PEER_PUT stores unclaimed pages in the named area, all or nothing,
    never replacing a claimed page; GET and INVAL see them; RETAIN claims
    them; a reconciliation keeps them."""
    s = servers("--min-mb", 1, "--max-mb", 1)
    with s.client(0x55) as owner:
        owner.put(0, 9, [page("new")])
        owner.put(1, 3, [page("mine1")])
    with s.client(77, role=p.ROLE_PEER) as peer:
        assert peer.peer_put("", 0x55, [(0, 3), (1, 3), (2, 3)],
                             [page("old0"), page("peer1"), page("old2")]) == p.ST_OK
        assert peer.peer_put("", 0x56, [(k, 1) for k in range(254)],
                             [page(k) for k in range(254)]) == p.ST_FULL
        assert peer.status().held == 0
    with s.client(0x55) as owner:
        assert owner.status().held == 4
        assert owner.get(0, 1, 9) == [page("new")]
        assert owner.get(0, 1, 3) == [page("old0")]
        assert owner.get(1, 1, 3) == [page("mine1")]      # claimed: not replaced
        assert owner.get(2, 1, 3) == [page("old2")]
        owner.retain_begin(1)
        assert owner.retain([(0, 9), (1, 3)]) == []
        assert owner.retain_end(1) == (0, 4)              # unclaimed survive
        owner.retain_begin(2)
        assert owner.retain([(0, 9), (1, 3), (0, 3)]) == []   # claims (0, 3)
        assert owner.retain_end(2) == (0, 4)
        owner.inval([(2, 3)])                             # INVAL sees unclaimed
        assert owner.get(2, 1, 3) is None
        owner.retain_begin(3)
        assert owner.retain([(0, 9)]) == []
        assert owner.retain_end(3) == (2, 1)              # (0, 3) is claimed now
    with s.client(0x56) as other:
        assert other.info.held == 0


def test_unclaimed_pages_expire(servers):
    """After unclaimed_timeout_s, not client_timeout_s (an hour here):
    they are only copies that their client did not claim."""
    s = servers("--unclaimed-timeout-s", 1, "--client-timeout-s", 3600)
    with s.client(0x57) as owner:
        owner.put(0, 1, [page("own")])
        with s.client(77, role=p.ROLE_PEER) as peer:
            assert peer.peer_put("", 0x57, [(5, 1), (6, 1)], [page(5), page(6)]) == p.ST_OK
            assert peer.peer_put("", 0x58, [(0, 1)], [page(0)]) == p.ST_OK
        assert owner.status().held == 3
        owner.retain([(6, 1)])                            # claimed: stays
        s.wait_log(r"2 unclaimed pages expired", timeout=60)
        assert owner.get(5, 1, 1) is None
        assert owner.get(6, 1, 1) == [page(6)]
        assert owner.status().held == 2
    with s.client(0x58) as other:                         # never connected
        assert other.info.held == 0


def test_client_reply_to_unknown_request(servers):
    s = servers()
    c = s.client(1)
    c.send_raw(p.reply_frame(p.header(p.OP_RETURN, id=12345, count=1)))
    h, _ = c.recv_reply()
    assert h.status == p.ST_INVALID
    c.close()
    assert_serves(s)
