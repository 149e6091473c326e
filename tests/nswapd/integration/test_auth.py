# SPDX-License-Identifier: GPL-2.0-only
"""Authentication (pre-shared keys, mutual proofs, tagged frames), the psk
file and its reload, and the isolation of areas between identities."""
import os
import signal
import socket
import subprocess
import threading

import pytest

from conftest import NSWAPD, auth, key_of, p, page, psk_file, wait_for


@pytest.fixture
def secure(servers, tmp_path):
    """A server with keys for alice, bob and the peer server srv."""
    path = psk_file(tmp_path, ["alice", "bob"], peers=["srv"])
    s = servers("--psk-file", path)
    s.psk_path = path
    return s


def assert_closed(c):
    with pytest.raises((p.ProtocolError, ConnectionError, socket.timeout)):
        c.recv_reply()


def raw_hello(s, identity, role=p.ROLE_CLIENT, device=1, flags=None):
    """HELLO by hand: (client, header of the reply, payload, our nonce)."""
    c = s.client(device, hello=False)
    nc = os.urandom(32)
    c.send_raw(p.hello_frame(1, device, role, identity, nc, flags))
    h, payload = c.recv_reply()
    return c, h, payload, nc


def test_authenticated_roundtrip(secure):
    with secure.client(3, **auth("alice")) as c:
        assert c.info.epoch != 0 and c.info.held == 0
        c.put(0, 1, [page("a", i) for i in range(3)])
        assert c.get(0, 3, 1) == [page("a", i) for i in range(3)]
        assert c.status().held == 3
        c.retain_begin(1)
        assert c.retain([(0, 1), (5, 1)]) == [1]
        assert c.retain_end(1) == (2, 1)
    secure.wait_log(r"client of area [0-9a-f]{8} ready \(authenticated\)")


def test_wrong_key_is_refused_with_auth(secure):
    """The server checks Pc: an AUTH made with the wrong key gets AUTH,
    untagged, and the connection closes."""
    c, h, payload, nc = raw_hello(secure, "alice")
    assert h.status == p.ST_OK and h.len == p.HELLO_REPLY_LEN
    (ns, ps), info = p.parse_hello_reply(payload)
    assert info == p.Info(0, 0, 0, 0, 0)              # the info is left zero
    args = (nc, ns, p.ROLE_CLIENT, 1, "alice")
    assert ps == p.proof(key_of("alice"), p.LABEL_SERVER, *args)
    c.send_raw(p.auth_frame(2, p.proof(key_of("wrong"), p.LABEL_CLIENT, *args)))
    h, payload = c.recv_reply()
    assert h.status == p.ST_AUTH and h.opcode == p.OP_AUTH and payload == b""
    assert_closed(c)
    c.close()
    # the Client class: the server's proof does not match our (wrong) key
    with pytest.raises(p.AuthError, match="proof is wrong"):
        secure.client(1, identity="alice", psk=key_of("not-alice"))
    secure.wait_log("AUTH with a wrong proof; replying AUTH and closing")


@pytest.mark.parametrize("identity,role,flags,why", [
    ("mallory", p.ROLE_CLIENT, None, "unknown identity"),
    ("", p.ROLE_CLIENT, 0, "HELLO without authentication"),
    ("alice", p.ROLE_PEER, None, "not marked peer"),
    ("alice", p.ROLE_CLIENT, 0, "HELLO without authentication"),
])
def test_hello_refused(secure, identity, role, flags, why):
    c, h, payload, _ = raw_hello(secure, identity, role, flags=flags)
    assert h.status == p.ST_AUTH and payload == b""
    assert_closed(c)
    c.close()
    secure.wait_log(why)


def test_insecure_server_refuses_auth_and_client_never_talks(servers):
    s = servers()
    with pytest.raises(p.AuthError):
        s.client(1, **auth("alice"))
    s.wait_log("asks to authenticate, but this server has no keys")


def test_fake_server_without_the_key_is_refused(tmp_path):
    """A server that does not have alice's key cannot produce Ps: the
    Python client refuses it before it sends anything of its own."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(1)
    got = {}

    def fake():
        s, _ = lst.accept()
        sc = p.ServerConn(s, {"alice": key_of("not-alice")})
        try:
            sc.handshake(p.pack_info(100, 100, 0))
        except p.ProtocolError as e:
            got["err"] = e
        s.close()

    t = threading.Thread(target=fake, daemon=True)
    t.start()
    with pytest.raises(p.AuthError, match="proof is wrong"):
        p.Client.connect(f"127.0.0.1:{lst.getsockname()[1]}", 1, **auth("alice"))
    t.join(10)
    assert "err" in got            # the client hung up without AUTH
    lst.close()


def tagged_client(s, name="alice", device=1):
    return s.client(device, **auth(name))


@pytest.mark.parametrize("how", ["forged", "replayed", "reordered", "untagged", "truncated"])
def test_bad_tags_close_at_once(secure, how):
    c = tagged_client(secure)
    c.put(0, 1, [page("t")])
    f1, f2 = p.status_frame(100), p.get_frame(101, 0, 1, 1)
    if how == "forged":
        t = bytearray(c.tx.tag(f1))
        t[3] ^= 1
        c.send_raw(f1 + bytes(t))
    elif how == "replayed":
        data = f1 + c.tx.tag(f1)
        c.send_raw(data)
        assert p.parse_info(c.wait(100)[1]).held == 1
        c.send_raw(data)
    elif how == "reordered":
        t1, t2 = c.tx.tag(f1), c.tx.tag(f2)
        c.send_raw(f2 + t2 + f1 + t1)
    elif how == "untagged":
        c.send_raw(f1 + f2)        # f2's header where f1's tag should be
    else:
        c.send_raw(f1 + c.tx.tag(f1)[:10])
        c.sock.shutdown(socket.SHUT_WR)
    if how == "truncated":
        # the server waits for the rest, then sees the end mid-frame
        assert_closed(c)
        secure.wait_log("in the middle of a frame")
    else:
        with pytest.raises((p.ProtocolError, ConnectionError)):
            c.recv_reply()        # no reply at all: closed at once
        secure.wait_log("a frame whose tag does not verify")
    c.close()
    with tagged_client(secure) as again:     # the area is untouched
        assert again.get(0, 1, 1) == [page("t")]


def test_server_tags_checked_by_client(secure):
    """The client checks every tag of the server's frames too."""
    c = tagged_client(secure)
    c.rx.seq += 1                 # as if a server frame had been dropped
    with pytest.raises(p.ProtocolError, match="tag"):
        c.status()
    c.close()


def run_nswapd(*args):
    return subprocess.run([NSWAPD, "--listen", "127.0.0.1:0", *map(str, args)],
                          capture_output=True, text=True, timeout=30)


def test_psk_file_errors(tmp_path):
    good = psk_file(tmp_path, ["alice"])
    os.chmod(good, 0o640)
    r = run_nswapd("--psk-file", good)
    assert r.returncode == 2 and "chmod 600" in r.stderr, r.stderr
    bad = tmp_path / "bad"
    k1, k2 = key_of("a").hex(), key_of("b").hex()
    for text, want in [("# keys\n\nalice 00112233\n", "bad:3: the key is not 64 hex digits"),
                       ("alice " + "zz" * 32 + "\n", "bad:1: the key is not 64 hex digits"),
                       ("alice " + k1 + " client\n", "bad:1: third word is not 'peer'"),
                       ("alice\n", "bad:1: expected"),
                       ("a " + k1 + "\na " + k2 + "\n", "bad:2: identity listed twice"),
                       ("x" * 65 + " " + k1 + "\n", "bad:1: identity longer than 64"),
                       ("# nothing\n", "no identities")]:
        bad.write_text(text)
        os.chmod(bad, 0o600)
        r = run_nswapd("--psk-file", bad)
        assert r.returncode == 2 and want in r.stderr, (text, r.stderr)
        assert k1 not in r.stderr and k2 not in r.stderr
    r = run_nswapd("--psk-file", good, "--insecure")
    assert r.returncode == 2
    os.chmod(good, 0o600)
    r = run_nswapd("--psk-file", good, "--identity", "nobody", "--peer", "127.0.0.1:9")
    assert r.returncode == 2 and "--identity is not in it" in r.stderr
    r = run_nswapd("--psk-file", good, "--peer", "127.0.0.1:9")
    assert r.returncode == 2 and "need --identity" in r.stderr


def test_sighup_reloads_keys(servers, tmp_path):
    path = psk_file(tmp_path, ["alice", "carol"])
    s = servers("--psk-file", path)
    a = tagged_client(s, "alice")
    carol = tagged_client(s, "carol")
    a.put(0, 1, [page("a")])
    with pytest.raises(p.AuthError):
        tagged_client(s, "bob")
    # bob added, alice removed, carol's key changed
    p.write_psk_file(path, {"bob": key_of("bob"), "carol": key_of("carol-2")})
    s.signal(signal.SIGHUP)
    s.wait_log(r"keys reloaded: 2 connections closed")
    with pytest.raises((p.ProtocolError, ConnectionError)):
        a.status()
    with pytest.raises((p.ProtocolError, ConnectionError)):
        carol.status()
    a.close()
    carol.close()
    with tagged_client(s, "bob") as b:
        assert b.status().held == 0
    with pytest.raises(p.AuthError):
        tagged_client(s, "alice")
    with s.client(1, identity="carol", psk=key_of("carol-2")) as c:
        assert c.status().held == 0
    # a reload that fails keeps the old keys
    os.chmod(path, 0o644)
    s.signal(signal.SIGHUP)
    s.wait_log(r"reload failed: .*chmod 600 it; keeping the old configuration and keys")
    with tagged_client(s, "bob") as b:
        assert b.status().held == 0


def test_areas_isolated_between_identities(secure):
    """bob, naming alice's device id, reaches only his own area: he can
    read, overwrite, invalidate and free nothing of alice's."""
    dev = 0x1234
    with tagged_client(secure, "alice", dev) as a, tagged_client(secure, "bob", dev) as b:
        a.put(0, 1, [page("alice", i) for i in range(4)])
        assert b.info.held == 0 and b.status().held == 0
        assert b.get(0, 1, 1) is None
        assert b.put(0, 1, [page("bob")]) == p.ST_OK
        b.inval([(1, 1), (2, 1)])
        b.retain_begin(1)
        assert b.retain([(3, 1)]) == [0]
        b.retain_end(1)
        b.free_all()
        assert a.get(0, 4, 1) == [page("alice", i) for i in range(4)]
        assert a.status().held == 4
        # a client identity cannot PEER_PUT
        assert b.peer_put("alice", dev, [(0, 9)], [page("x")]) == p.ST_INVALID
    with pytest.raises(p.AuthError):
        secure.client(dev, role=p.ROLE_PEER, **auth("bob"))
    # a peer's PEER_PUT never replaces alice's claimed page
    with secure.client(0, role=p.ROLE_PEER, **auth("srv")) as srv:
        assert srv.peer_put("alice", dev, [(0, 1), (9, 1)], [page("evil"), page("nine")]) == p.ST_OK
        assert srv.peer_put("mallory", dev, [(0, 1)], [page("m")]) == p.ST_FULL
        assert srv.status().held == 0
    with tagged_client(secure, "alice", dev) as a:
        assert a.get(0, 1, 1) == [page("alice", 0)]
        assert a.get(9, 1, 1) == [page("nine")]
        assert a.status().held == 5


def test_logs_name_no_identity_device_key_or_nonce(secure):
    dev = 0xfedcba9876543210
    nonce = bytes(range(100, 132))
    c = secure.client(dev, hello=False)
    c.hello(dev, identity="alice", psk=key_of("alice"), nonce=nonce)
    c.put(5, 1, [page("l")])
    c.free_all()
    c.close()
    c, h, _, _ = raw_hello(secure, "mallory-the-unknown", device=dev)
    c.close()
    with secure.client(0, role=p.ROLE_PEER, **auth("srv")) as srv:
        srv.peer_put("alice", dev, [(0, 1)], [page("x")])
    secure.wait_log("area [0-9a-f]{8}: client disconnected")
    secure.wait_log("peer stored 1 pages of area")
    log = secure.log()
    for secret in ["alice", "mallory", "srv ", f"{dev:x}", f"{dev:016x}", str(dev),
                   key_of("alice").hex(), nonce.hex()]:
        assert secret not in log, secret
