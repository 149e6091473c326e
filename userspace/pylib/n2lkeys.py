# SPDX-License-Identifier: GPL-2.0-only
"""Logon keys for nswap2l's table features (psk:, encrypt:), through
libkeyutils (keyutils' keyctl calls the same). A logon key's payload never
comes back to userspace; the target copies it when its table is loaded.

And the rule that refuses keys too weak to use, nswapd's (its keycheck.h
says why it is this rule and how rarely it refuses a random key): every
tool that reads a key from a file, or writes one, applies it.
tests/nswapd/keycheck-vectors.txt holds both to the same answers.
"""
import ctypes
import hashlib
import hmac
import socket

KEY_SPEC_SESSION_KEYRING = -3
KEY_SPEC_USER_KEYRING = -4
KEYCTL_JOIN_SESSION_KEYRING = 1

_lib = None


def _keyutils():
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("libkeyutils.so.1", use_errno=True)
        _lib.add_key.restype = ctypes.c_int32
        _lib.add_key.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                                 ctypes.c_size_t, ctypes.c_int32]
        _lib.keyctl_join_session_keyring.restype = ctypes.c_int32
        _lib.keyctl_join_session_keyring.argtypes = [ctypes.c_char_p]
    return _lib


def add_logon_key(desc, payload, keyring=KEY_SPEC_USER_KEYRING):
    """A logon key, as `keyctl padd logon desc @u` would add it; its serial."""
    r = _keyutils().add_key(b"logon", desc.encode(), payload, len(payload), keyring)
    if r < 0:
        raise OSError(ctypes.get_errno(), f"add_key logon {desc}")
    return r


def private_session():
    """Join a new anonymous session keyring, which this process and its
    children alone search: keys added there end with them."""
    if _keyutils().keyctl_join_session_keyring(None) < 0:
        raise OSError(ctypes.get_errno(), "keyctl join session keyring")


# What a refusal tells the user to run instead.
MAKE_ONE = "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'"
_MAX_VALUES = 8
_MAX_PERIOD = 16


def weakness(key):
    """Why key (bytes) is too weak to use, or None: in the words of
    nswapd's keycheck_weakness()."""
    if len(set(key)) <= _MAX_VALUES:
        return "its bytes take 8 or fewer distinct values"
    if len({(b - a) & 0xff for a, b in zip(key, key[1:])}) <= _MAX_VALUES:
        return "the steps between neighbouring bytes take 8 or fewer distinct values"
    if any(key[:-p] == key[p:] for p in range(1, min(_MAX_PERIOD, len(key) - 1) + 1)):
        return "it repeats itself every 16 bytes or fewer"
    return None


def refusal(key, where):
    """None if key is strong enough, else the message that refuses it;
    where is "file:line"."""
    why = weakness(key)
    return why and f"{where}: the key is too weak ({why}): make a random one with: {MAKE_ONE}"


# Keys bound to a server (n2l-proto.h): a server may hold, instead of an
# identity's key, HMAC-SHA256(key, "n2l2-server-key" || its address),
# both NUL-padded; then it cannot answer in another server's place.
BOUND_LABEL = b"n2l2-server-key"
BOUND_NAME_LEN = 64     # N2L_ADDR_LEN


def split_addr(addr):
    """("host", port) of "a.b.c.d:port" or "[v6]:port"; ValueError if it
    has no port."""
    host, sep, port = (addr[1:].partition("]:") if addr.startswith("[")
                       else addr.rpartition(":"))
    if not sep:
        raise ValueError(f"{addr!r}: no port")
    return host, int(port)


def canonical_addr(addr):
    """A server's name as keys are bound to it: "a.b.c.d:port", or
    "[v6]:port" with v6 as RFC 5952 writes it, as the kernel's status line
    and nswapd print it. Takes "host:port" or a (host, port, ...) pair as
    getpeername() gives it."""
    try:
        host, port = split_addr(addr) if isinstance(addr, str) else addr[:2]
        host = host.partition("%")[0]
        if ":" in host:
            v6 = socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, host))
            host = f"[{v6}]"
        else:
            # Decimal octets, leading zeros allowed, as the kernel's table reads them.
            octets = host.split(".")
            if len(octets) != 4 or not all(o.isdigit() and int(o) < 256 for o in octets):
                raise ValueError
            host = ".".join(str(int(o)) for o in octets)
        if not 0 < port < 65536:
            raise ValueError
    except (ValueError, OSError):
        raise ValueError(f"{addr!r}: not a.b.c.d:port or [v6]:port") from None
    return f"{host}:{port}"


def bound_key(key, name):
    """The identity's key bound to the server named name (canonical)."""
    name = name.encode()
    if len(name) > BOUND_NAME_LEN:
        raise ValueError(f"server name longer than {BOUND_NAME_LEN} bytes: {name!r}")
    return hmac.new(bytes(key), BOUND_LABEL.ljust(16, b"\0") + name.ljust(BOUND_NAME_LEN, b"\0"),
                    hashlib.sha256).digest()
