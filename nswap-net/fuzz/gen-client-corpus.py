#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Writes the seed corpus of fuzz-client.c: a device of 4096 slots, then
valid frames a server sends (replies to each request the harness has in
flight, MOVED, RETURN), alone and as one stream. Run from anywhere;
rewrites nswap-net/fuzz/client-corpus/seed-*."""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "userspace", "pylib"))
import n2lproto as p  # noqa: E402

PAGE = b"\x5a" * p.PAGE_SIZE


def reply(op, key=0, count=0, vers=0, payload=b"", status=p.ST_OK):
    req = p.header(op, id=7, key=key, count=count, vers=vers)
    return p.reply_frame(req, status, 100, payload)


def seeds():
    info = p.pack_info(1000, 900, 3, epoch=0x1234)
    kvs = [(1, 2), (3, 4)]
    yield "status", reply(p.OP_STATUS, payload=info)
    yield "hello", reply(p.OP_HELLO, payload=p.pack_hello_reply(info=info))
    yield "auth", reply(p.OP_AUTH, payload=info)
    yield "put", reply(p.OP_PUT, 5, 3, 9)
    yield "put-full", reply(p.OP_PUT, 5, 3, 9, status=p.ST_FULL)
    yield "get", reply(p.OP_GET, 5, 3, 9, p.pack_pages([PAGE] * 3, [b"\1" * 16] * 3))
    yield "get-stale", reply(p.OP_GET, 5, 3, 9, status=p.ST_STALE)
    yield "inval", reply(p.OP_INVAL, 0, 17)
    yield "retain", reply(p.OP_RETAIN, 0, 100, payload=p.pack_bitmap([0, 63, 99], 100))
    yield "retain-end", reply(p.OP_RETAIN_END, 4, payload=p.RETAINED.pack(5, 6))
    yield "moved", p.moved_frame(1 << 48, kvs, "10.0.0.2:7070")
    yield "return", p.return_frame(1 << 48, kvs, [PAGE, PAGE], [b"\2" * 16] * 2)


def main():
    out = os.path.join(HERE, "client-corpus")
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.startswith("seed-"):
            os.unlink(os.path.join(out, f))
    device = struct.pack("<Q", 4096)
    stream = b""
    for name, frame in seeds():
        with open(os.path.join(out, f"seed-{name}"), "wb") as f:
            f.write(device + frame)
        stream += frame
    with open(os.path.join(out, "seed-stream"), "wb") as f:
        f.write(device + stream)


if __name__ == "__main__":
    main()
