#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Writes the seed corpus of fuzz-frames.c: scripts (see its header) with
valid frames of every opcode, both directions, the give-up paths, the
handshake with keys, and sessions the harness has authenticated (mode 2,
one frame per chunk so that each gets its tag). Run from anywhere;
rewrites nswap-net/fuzz/corpus/seed-*."""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "userspace", "pylib"))
import n2lproto as p  # noqa: E402


def feed(conn, data):
    out = b""
    while True:        # chunks of at most 65535 bytes
        chunk, data = data[:65535], data[65535:]
        out += bytes([conn]) + struct.pack("<H", len(chunk)) + chunk
        if not data:
            return out


def frames(conn, *fs):
    """One chunk per frame (each gets its own tag in mode 2)."""
    return b"".join(feed(conn, f) for f in fs)


def capacity(n):
    return bytes([3, n])


def tick(units):
    return bytes([4, units])


def drain():
    return bytes([5])


def close(conn):
    return bytes([6, conn])


def answer(status=p.ST_OK, info=None):
    return bytes([7, status]) + (info or b"")


def pages(n, seed=0):
    return [bytes([(seed + i) & 0xff]) * p.PAGE_SIZE for i in range(n)]


INSECURE, KEYS, AUTHED = b"\0", b"\1", b"\2"
INFO = p.pack_info(1000, 1000, 0)
HELLO = p.hello_frame(1, 0x42)
PEER_HELLO = p.hello_frame(1, 0x99, role=p.ROLE_PEER)
PEER_UP = feed(2, b"") + answer(p.ST_OK, INFO) + answer(p.ST_OK, INFO)
AUTH_HELLO = p.hello_frame(1, 7, identity="client", nonce=b"\x33" * 32)
PEER_AUTH_HELLO = p.hello_frame(1, 0, role=p.ROLE_PEER, identity="peer", nonce=b"\x44" * 32)


def put(i, key, vers, n, seed=0):
    return p.put_frame(i, key, vers, pages(n, seed))


insecure = {
    "hello": feed(0, HELLO),
    "put-get": feed(0, HELLO + put(2, 10, 1, 4) + p.get_frame(3, 10, 4, 1)
                    + p.get_frame(4, 10, 4, 2)),
    "versions": feed(0, HELLO + put(2, 10, 5, 2) + put(3, 10, 4, 2, 1) + p.get_frame(4, 10, 2, 4)
                     + p.inval_frame(5, [(10, 5)]) + p.get_frame(6, 10, 2, 5)),
    "inval": feed(0, HELLO + put(2, 0, 5, 2) + p.inval_frame(3, [(0, 5), (1, 4), (7, 1)])),
    "status": feed(0, HELLO + p.status_frame(2)),
    "free-all": feed(0, HELLO + put(2, 0, 1, 3) + p.free_all_frame(3)),
    "retain": feed(0, HELLO + put(2, 0, 1, 4) + p.retain_begin_frame(3, 9)
                   + p.retain_frame(4, [(0, 1), (2, 1), (9, 9)]) + put(5, 20, 1, 1)
                   + p.retain_end_frame(6, 8) + p.retain_end_frame(7, 9)),
    "peer-put": feed(1, PEER_HELLO + p.peer_put_frame(2, "", 0x42, [(0, 1), (1, 1)], pages(2))
                     + p.status_frame(3))
                + feed(0, HELLO + p.get_frame(2, 0, 2, 1) + p.retain_frame(3, [(0, 1)])) + tick(30),
    "client-moved": feed(0, HELLO + p.moved_frame(2, [(0, 1)], "10.0.0.1:7077")),
    "client-return": feed(0, HELLO + p.return_frame(2, [(0, 1)], pages(1))),
    "every-reply": feed(0, HELLO + b"".join(
        p.reply_frame(p.header(op, id=9, count=1 if p.op_counts(op) else 0))
        for op in range(1, p.OP_MAX + 1))),
    "full": capacity(8) + feed(0, HELLO + put(2, 0, 1, 4) + put(3, 100, 1, 4) + put(4, 3, 2, 4))
            + feed(1, p.hello_frame(1, 0x43) + put(2, 0, 1, 2)),
    "reconnect": feed(0, HELLO + put(2, 0, 1, 2)) + close(0)
                 + feed(0, HELLO + p.get_frame(2, 0, 2, 1)) + close(0) + tick(30),
    "return": feed(0, HELLO + put(2, 0, 1, 8)) + capacity(3) + answer(p.ST_OK)
              + answer(p.ST_FULL) + tick(6) + answer(p.ST_OK),
    "return-timeout": feed(0, HELLO + put(2, 0, 1, 4)) + capacity(1) + tick(60)
                      + feed(0, p.reply_frame(p.header(p.OP_RETURN, id=1, count=3))),
    "moved": PEER_UP + feed(0, HELLO + put(2, 0, 1, 8)) + capacity(2)
             + answer(p.ST_OK) + feed(0, put(3, 1, 2, 1)) + answer(p.ST_OK),
    "moved-refused": PEER_UP + feed(0, HELLO + put(2, 0, 1, 8)) + capacity(2)
                     + answer(p.ST_OK) + answer(p.ST_FULL) + answer(p.ST_OK),
    "peer-full": PEER_UP + feed(0, HELLO + put(2, 0, 1, 8)) + capacity(2)
                 + answer(p.ST_FULL) + answer(p.ST_OK),
    "peer-refuses-hello": feed(2, b"") + answer(p.ST_AUTH) + feed(0, HELLO + put(2, 0, 1, 2))
                          + capacity(0) + answer(p.ST_OK),
    "drain": PEER_UP + feed(0, HELLO + put(2, 0, 1, 4)) + drain()
             + feed(0, put(3, 9, 1, 1)) + answer(p.ST_OK) + answer(p.ST_OK),
    "drain-twice": feed(0, HELLO + put(2, 0, 1, 1)) + close(0) + drain() + drain(),
    "bad-version": feed(0, HELLO[:4] + b"\x01" + HELLO[5:]),
    "truncated": feed(0, HELLO + put(2, 0, 1, 2)[:5000]),
    "garbage": feed(1, b"GET / HTTP/1.1\r\n\r\n" + bytes(range(256))),
    "unknown-op": feed(0, HELLO + p.pack_header(p.header(14, id=3))),
    "preauth-big": feed(0, p.put_frame(1, 0, 1, pages(2))),
    "auth-to-insecure": feed(0, AUTH_HELLO),
    "pipelined": feed(0, HELLO + b"".join(put(i + 2, i * 2, i, 1, i) for i in range(6))
                      + b"".join(p.get_frame(i + 10, i * 2, 1, i) for i in range(6))),
    "peer-conn-request": feed(2, p.status_frame(5)),
    "many-gets": feed(0, HELLO + put(2, 0, 1, 4) + b"".join(
        p.get_frame(i + 3, 0, 4, 1) for i in range(300))),
}
keys = {
    "hello-auth": feed(0, AUTH_HELLO) + feed(0, p.auth_frame(2, b"\0" * 32)),
    "hello-noauth": feed(0, HELLO),
    "hello-unknown": feed(0, p.hello_frame(1, 7, identity="nobody", nonce=b"\1" * 32)),
    "peer-hello": feed(1, PEER_AUTH_HELLO),
    "client-as-peer": feed(1, p.hello_frame(1, 0, role=p.ROLE_PEER, identity="client")),
    "auth-early": feed(0, p.auth_frame(1, b"\0" * 32)),
    "peer-secure": feed(2, b"") + answer(p.ST_OK, INFO) + tick(1),
}
authed = {
    "put-get": frames(0, put(3, 10, 1, 4), p.get_frame(4, 10, 4, 1), p.status_frame(5)),
    "retain": frames(0, put(3, 0, 1, 4), p.retain_begin_frame(4, 2),
                     p.retain_frame(5, [(0, 1), (1, 1), (8, 8)]), put(6, 30, 2, 1),
                     p.retain_end_frame(7, 2), p.get_frame(8, 30, 1, 2)),
    "inval-free": frames(0, put(3, 0, 1, 2), p.inval_frame(4, [(0, 1)]), p.free_all_frame(5)),
    "return": frames(0, put(3, 0, 1, 8)) + capacity(3) + answer(p.ST_OK)
              + frames(0, p.reply_frame(p.header(p.OP_RETURN, id=1, count=5))),
    "second-hello": frames(0, HELLO),
    "bad-tag": feed(0, p.status_frame(3) + p.status_frame(4)),
}
seeds = {}
for prefix, mode, group in (("", INSECURE, insecure), ("keys-", KEYS, keys), ("authed-", AUTHED, authed)):
    for name, data in group.items():
        seeds[prefix + name] = mode + data

out = os.path.join(HERE, "corpus")
os.makedirs(out, exist_ok=True)
for name in os.listdir(out):
    if name.startswith("seed-"):
        os.remove(os.path.join(out, name))
for name, data in seeds.items():
    with open(os.path.join(out, f"seed-{name}"), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {out}")
