# SPDX-License-Identifier: GPL-2.0-only
"""Keys bound to a server (n2l-proto.h): a server that holds only the
identity's key bound to its own address proves which server it is, so a
donor cannot pose as another of the client's donors."""
import pytest

from conftest import auth, free_port, key_of, p, page

# HMAC-SHA256 under the key 01 02 .. 20 of "n2l2-server-key" and
# "10.1.0.5:7070", each NUL-padded (16 and 64 bytes), as `openssl dgst
# -sha256 -mac HMAC -macopt hexkey:0102..20` computes it.
VECTOR = "5a431b8fcdcc9b641bbb3f4834d191e24d5876e51e7f1e823798078636f97a6e"


def test_bound_key_known_answer():
    assert p.bound_key(bytes(range(1, 33)), "10.1.0.5:7070").hex() == VECTOR


@pytest.mark.parametrize("given,canonical", [
    ("10.1.0.5:7070", "10.1.0.5:7070"),
    ("010.001.0.5:07070", "10.1.0.5:7070"),          # decimal, as the table reads it
    ("[FD00:0:0:0::12]:7077", "[fd00::12]:7077"),
    ("[2001:db8:0:1:1:1:1:1]:1", "[2001:db8:0:1:1:1:1:1]:1"),  # one 0 stays
    (("::1", 9, 0, 0), "[::1]:9"),                    # as getpeername() gives it
])
def test_canonical_addr(given, canonical):
    assert p.canonical_addr(given) == canonical


@pytest.mark.parametrize("bad", ["10.1.0.256:1", "10.1.0:1", "10.1.0.5:0", "[fd00::g]:1"])
def test_canonical_addr_refuses(bad):
    with pytest.raises((ValueError, OSError)):
        p.canonical_addr(bad)


def bound_server(servers, tmp_path, name, bound_to=None):
    """A server on a port chosen now, holding alice's key bound to its own
    address (or to bound_to)."""
    addr = f"127.0.0.1:{free_port()}"
    path = str(tmp_path / f"{name}.psk")
    p.write_psk_file(path, {"alice": p.bound_key(key_of("alice"), bound_to or addr)})
    return servers("--psk-file", path, listen=addr, name=name)


def test_key_bound_to_the_servers_address_authenticates(servers, tmp_path):
    s = bound_server(servers, tmp_path, "a")
    with s.client(1, **auth("alice")) as c:
        assert c.key_bound
        c.put(0, 1, [page("b", i) for i in range(4)])
        assert c.get(0, 4, 1) == [page("b", i) for i in range(4)]
    s.wait_log(r"client of area [0-9a-f]{8} ready \(authenticated\)")


def test_server_with_the_identitys_own_key_still_authenticates(servers, tmp_path):
    path = str(tmp_path / "psk")
    p.write_psk_file(path, {"alice": key_of("alice")})
    with servers("--psk-file", path).client(1, **auth("alice")) as c:
        assert not c.key_bound
        assert c.status().held == 0


def test_server_cannot_answer_for_another(servers, tmp_path):
    """A donor that holds its own bound key answers at another donor's
    address (as if it had taken that address over): its proof fits
    neither our key nor the key bound to the address we called, and we
    hang up before sending anything of our own."""
    other = bound_server(servers, tmp_path, "other")
    s = bound_server(servers, tmp_path, "poser", bound_to=other.addr)
    with pytest.raises(p.AuthError, match="neither our key nor one bound"):
        s.client(1, **auth("alice"))
    with other.client(1, **auth("alice")) as c:
        assert c.key_bound
