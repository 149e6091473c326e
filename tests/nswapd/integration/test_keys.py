# SPDX-License-Identifier: GPL-2.0-only
"""Weak keys: nswapd refuses them at start and on reload, and the Python
rule (n2lkeys, used by n2lctl's n2ltab and by n2lproto's psk files) says
of every shared vector what nswapd's keycheck.c says, word for word."""
import os
import signal
import subprocess

import pytest

from conftest import NSWAPD, ROOT, auth, key_of, p, psk_file

import n2lkeys

VECTORS = os.path.join(ROOT, "tests", "nswapd", "keycheck-vectors.txt")
MAKE_ONE = "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'"
ZERO = "00" * 32
COUNTER = bytes(range(32)).hex()


def vectors():
    with open(VECTORS) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                key, want = line.rstrip("\n").split(" ", 1)
                yield bytes.fromhex(key), want


def test_python_rule_agrees_with_the_shared_vectors():
    got = [(k.hex(), n2lkeys.weakness(k) or "strong") for k, _ in vectors()]
    assert got == [(k.hex(), want) for k, want in vectors()]
    assert len(got) >= 15


def test_random_keys_pass():
    """Each is refused with probability below 2^-106."""
    assert not [k for k in (os.urandom(32) for _ in range(20000)) if n2lkeys.weakness(k)]


def write_psk(path, lines):
    with open(path, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    os.chmod(path, 0o600)


def run_nswapd(*args):
    return subprocess.run([NSWAPD, "--listen", "127.0.0.1:0", *map(str, args)],
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("key,why", [
    (ZERO, "its bytes take 8 or fewer distinct values"),
    (COUNTER, "the steps between neighbouring bytes take 8 or fewer distinct values"),
    ("6769dd1d41f41557db7cd1670e714942" * 2, "it repeats itself every 16 bytes or fewer"),
])
def test_nswapd_refuses_a_weak_key_at_start(tmp_path, key, why):
    path = str(tmp_path / "psk")
    write_psk(path, ["# keys", f"alice {key_of('alice').hex()}", f"bob {key} peer"])
    r = run_nswapd("--psk-file", path)
    assert r.returncode == 2, r.stderr
    assert f"error: {path}:3: the key is too weak ({why}): make a random one with: " \
           f"{MAKE_ONE}" in r.stderr, r.stderr
    assert key not in r.stderr and key[8:40] not in r.stderr


def test_nswapd_keeps_its_keys_when_a_reload_brings_a_weak_one(servers, tmp_path):
    path = psk_file(tmp_path, ["alice"])
    s = servers("--psk-file", path)
    c = s.client(1, **auth("alice"))
    write_psk(path, [f"alice {ZERO}"])
    s.signal(signal.SIGHUP)
    s.wait_log(rf"reload failed: {path}:1: the key is too weak \(its bytes take 8 or fewer "
               r"distinct values\): make a random one with: head -c 32 /dev/urandom.*; "
               r"keeping the old configuration and keys")
    assert c.status().held == 0                     # still connected
    c.close()
    with s.client(1, **auth("alice")) as again:     # the old key still works
        assert again.status().held == 0
    assert ZERO not in s.log()


def test_n2lproto_psk_files_refuse_weak_keys(tmp_path):
    path = str(tmp_path / "psk")
    write_psk(path, [f"alice {key_of('alice').hex()}", "", f"bob {COUNTER}"])
    with pytest.raises(ValueError, match=rf"^{path}:3: the key is too weak \(the steps "):
        p.load_psk_file(path)
    with pytest.raises(ValueError, match=r":2: the key is too weak \(its bytes take 8 "):
        p.write_psk_file(path, {"alice": key_of("alice"), "bob": bytes(32)})
    p.write_psk_file(path, {"alice": key_of("alice"), "srv": (key_of("srv"), True)})
    assert p.load_psk_file(path) == {"alice": (key_of("alice"), False),
                                     "srv": (key_of("srv"), True)}
