# SPDX-License-Identifier: GPL-2.0-only
"""Logon keys for nswap2l's table features (psk:, encrypt:), through
libkeyutils (keyutils' keyctl calls the same). A logon key's payload never
comes back to userspace; the target copies it when its table is loaded.
"""
import ctypes

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
