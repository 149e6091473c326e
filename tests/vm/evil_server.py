#!/usr/bin/env python3
"""A page server for tests that speaks the protocol correctly, or breaks
it on purpose, so that the kernel client can be shown to survive.

  evil_server.py --listen ADDR:PORT --mode MODE [--capacity PAGES]

Modes (each starts misbehaving after --after good requests, counted over
every connection, so that the device first stores pages there and a
reconnect does not make the server good again):
  good       a correct, minimal server
  garbage    answers with random bytes
  wrong-id   answers with an id no request has
  wrong-len  answers a GET with a payload shorter than announced, or
             announces an absurd length
  bad-magic  answers with a header of the wrong magic
  wrong-data answers a GET with the right header for another request's
             key (the reply does not match its request)
  silent     stops answering (and reading) but keeps the connection open

--lie-free N reports N more free pages than it has, so that clients send
PUTs it must refuse with FULL.

The kernel must drop the connection (ratelimited error), never oops, and
never complete a read with data that did not come from a correct reply.
"""
import argparse
import os
import socket
import struct
import sys
import threading
import time

HDR = struct.Struct("<IBBHQQIIIIII")
MAGIC = 0x504C324E
VERSION = 1
PAGE = 4096
OP_HELLO, OP_PUT, OP_GET, OP_INVAL, OP_STATUS, OP_FREE_ALL = 1, 2, 3, 4, 5, 6
F_REPLY = 1
ST_OK, ST_FULL, ST_STALE, ST_INVALID = 0, 1, 2, 3
INFO = struct.Struct("<QQQII")


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


class Store:
    def __init__(self, capacity, lie=0):
        self.capacity = capacity
        self.lie = lie
        self.pages = {}  # (client, key) -> (vers, bytes)
        self.lock = threading.Lock()
        self.served = 0

    def serve_well(self, after):
        """Whether the next request gets a correct answer (and count it)."""
        with self.lock:
            self.served += 1
            return self.served <= after

    def free(self):
        return max(self.capacity - len(self.pages), 0) + self.lie


class Conn(threading.Thread):
    def __init__(self, sock, store, mode, after, log):
        super().__init__(daemon=True)
        self.sock, self.store, self.mode, self.after, self.log = sock, store, mode, after, log
        self.client = None

    def reply(self, h, status=ST_OK, payload=b"", **override):
        magic, _, op, _, rid, key, count, vers = h[:8]
        fields = dict(magic=MAGIC, version=VERSION, op=op, flags=F_REPLY, id=rid,
                      key=key, count=count, vers=vers, status=status,
                      free=self.store.free(), len=len(payload))
        fields.update(override)
        self.sock.sendall(HDR.pack(fields["magic"], fields["version"], fields["op"],
                                   fields["flags"], fields["id"], fields["key"],
                                   fields["count"], fields["vers"], fields["status"],
                                   fields["free"], fields["len"], 0) + payload)

    def misbehave(self, h, op, count):
        mode = self.mode
        self.log(f"misbehaving ({mode}) on op {op}")
        if mode == "garbage":
            self.sock.sendall(os.urandom(HDR.size + 4096))
        elif mode == "wrong-id":
            self.reply(h, id=h[4] ^ 0x5A5A5A5A00)
        elif mode == "wrong-len":
            if op == OP_GET:
                self.reply(h, payload=b"\x55" * (count * PAGE - 100), len=count * PAGE)
            else:
                self.reply(h, len=0x7FFFFFF0)
        elif mode == "bad-magic":
            self.reply(h, magic=0xDEADBEEF)
        elif mode == "wrong-data":
            self.reply(h, key=h[5] + 1, payload=b"\xAA" * (count * PAGE) if op == OP_GET else b"")
        elif mode == "silent":
            time.sleep(3600)
        return True

    def run(self):
        try:
            while True:
                raw = recv_exact(self.sock, HDR.size)
                h = HDR.unpack(raw)
                magic, version, op, flags, rid, key, count, vers, status, free, length, _ = h
                if magic != MAGIC or version != VERSION or length > (1 << 21):
                    self.log("bad frame from client")
                    return
                payload = recv_exact(self.sock, length) if length else b""
                if op != OP_HELLO and self.mode != "good" and \
                        not self.store.serve_well(self.after):
                    self.misbehave(h, op, count)
                    continue
                self.handle(h, op, key, count, vers, payload)
        except (ConnectionError, OSError):
            pass
        finally:
            self.sock.close()

    def handle(self, h, op, key, count, vers, payload):
        st = self.store
        if op == OP_HELLO:
            self.client = struct.unpack_from("<Q", payload)[0]
            self.reply(h, payload=INFO.pack(st.capacity, st.free(), 0, 0, 0))
        elif op == OP_STATUS:
            with st.lock:
                held = sum(1 for c, _ in st.pages if c == self.client)
            self.reply(h, payload=INFO.pack(st.capacity, st.free(), held, 0, 0))
        elif op == OP_PUT:
            with st.lock:
                new = sum(1 for i in range(count) if (self.client, key + i) not in st.pages)
                if new > st.free() - st.lie:
                    self.reply(h, ST_FULL)
                    return
                for i in range(count):
                    st.pages[(self.client, key + i)] = (vers, payload[i * PAGE:(i + 1) * PAGE])
            self.reply(h)
        elif op == OP_GET:
            with st.lock:
                got = [st.pages.get((self.client, key + i)) for i in range(count)]
            if any(g is None or g[0] != vers for g in got):
                self.reply(h, ST_STALE)
            else:
                self.reply(h, payload=b"".join(g[1] for g in got))
        elif op == OP_INVAL:
            with st.lock:
                for i in range(count):
                    k, v, _ = struct.unpack_from("<QII", payload, i * 16)
                    if st.pages.get((self.client, k), (None,))[0] == v:
                        del st.pages[(self.client, k)]
            self.reply(h)
        elif op == OP_FREE_ALL:
            with st.lock:
                for k in [k for k in st.pages if k[0] == self.client]:
                    del st.pages[k]
            self.reply(h)
        else:
            self.reply(h, ST_INVALID)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--mode", default="good")
    ap.add_argument("--after", type=int, default=0)
    ap.add_argument("--capacity", type=int, default=65536)
    ap.add_argument("--lie-free", type=int, default=0)
    a = ap.parse_args()
    host, port = a.listen.rsplit(":", 1)
    srv = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host.strip("[]"), int(port)))
    srv.listen(16)
    store = Store(a.capacity, a.lie_free)

    def log(msg):
        print(f"evil_server[{a.mode}]: {msg}", file=sys.stderr, flush=True)

    log(f"listening on {a.listen}")
    while True:
        s, _ = srv.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        Conn(s, store, a.mode, a.after, log).start()


if __name__ == "__main__":
    main()
