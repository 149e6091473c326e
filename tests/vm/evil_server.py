#!/usr/bin/env python3
"""A page server for tests that speaks protocol v2 correctly, or breaks it
on purpose, so that the kernel client can be shown to survive. Built on
userspace/pylib/n2lproto.py.

  evil_server.py --listen ADDR:PORT --mode MODE [--capacity PAGES]
                 [--after N] [--times N] [--on OPS] [--lie-free N]
                 [--psk-file FILE]

Modes (each starts misbehaving after --after good requests, counted over
every connection, so that the device first stores pages there and a
reconnect does not make the server good again):
  good         a correct, minimal server
  garbage      answers with random bytes
  wrong-id     answers with an id no request has
  wrong-len    answers a GET with a payload shorter than announced, or
               announces an absurd length
  bad-magic    answers with a header of the wrong magic
  wrong-data   answers a GET with the right header for another request's
               key (the reply does not match its request)
  flip-bytes   answers a GET with the right header and the stored seal,
               but page bytes flipped
  other-slot   answers a GET with another stored page (and that page's
               seal) under the right header
  old-version  answers a GET with an older stored version of the page
               (and its seal); INVAL keeps old versions for that
  silent       stops answering (and reading) but keeps the connection open
  bad-tag      (with --psk-file) answers with the right frame under a tag
               with one bit flipped: an on-path attacker's forgery
  replay       (with --psk-file) answers with the last frame it sent, its
               tag as it was: an on-path attacker's replay
The GET modes answer other requests correctly, and a GET correctly when
they have nothing to swap in.

--times N misbehaves on N requests only (after --after good ones), then
serves well again: a client must recover from one bad frame.

--on OPS (names, comma-separated: PUT,GET) counts and misbehaves on those
requests only: the client's STATUS every second makes the count of all
requests a matter of time, and an attack on the third PUT lands among
the writes, however long the device took to come up.

--lie-free N reports N more free pages than it has, so that clients send
PUTs it must refuse with FULL. --psk-file FILE ("<identity> <64 hex>
[peer]" lines) makes it authenticate clients, as nswapd does with keys,
and tag every frame after that; without it, it is a server without keys.

The kernel must drop the connection (ratelimited error), never oops, and
never complete a read with data that did not come from a correct reply.
"""
import argparse
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "userspace", "pylib"))
import n2lproto as p  # noqa: E402

GET_MODES = ("flip-bytes", "other-slot", "old-version")


class Store:
    """Pages by area (identity, device) and key: {vers: (page, seal)}."""

    def __init__(self, capacity, lie=0):
        self.capacity = capacity
        self.lie = lie
        self.areas = {}          # area -> {key: {vers: (page, seal)}}
        self.old = {}            # area -> {key: {vers: (page, seal)}}: INVAL'ed
        self.recon = {}          # area -> (gen, set of (key, vers) marked)
        self.lock = threading.Lock()
        self.served = 0
        self.epoch = int.from_bytes(os.urandom(8), "little") or 1

    def serve_well(self, after, times):
        """Whether the next request gets a correct answer (and count it):
        the first after ones do, then times ones do not (0: none do)."""
        with self.lock:
            self.served += 1
            return self.served <= after or (times and self.served > after + times)

    def used(self):
        return sum(len(v) for a in self.areas.values() for v in a.values())

    def free(self):
        return max(self.capacity - self.used(), 0) + self.lie

    def held(self, area):
        return sum(len(v) for v in self.areas.get(area, {}).values())

    def info(self, area):
        return p.pack_info(self.capacity, self.free(), self.held(area), epoch=self.epoch)


class Conn(threading.Thread):
    def __init__(self, sock, store, mode, after, psks, log, on=None):
        super().__init__(daemon=True)
        self.sc = p.ServerConn(sock, psks)
        self.store, self.mode, self.log = store, mode, log
        self.after, self.times = after
        self.on = on            # the opcodes counted and misbehaved on; None: all
        self.area = None
        self.tamper = None      # bad-tag: applied to the frames handle() sends

    def reply(self, h, status=p.ST_OK, payload=b"", **override):
        free = min(self.store.free(), 2**32 - 1)
        if self.tamper is not None:
            override["tamper"] = self.tamper
        self.sc.reply(h, status, payload, free_pages=free, **override)

    def pages(self):
        return self.store.areas.setdefault(self.area, {})

    # misbehaviour
    def misbehave(self, h, payload):
        mode, op, count = self.mode, h.opcode, h.count
        if mode in GET_MODES:
            return op == p.OP_GET and self.swap_get(h)
        self.log(f"misbehaving ({mode}) on op {op}")
        if mode == "garbage":
            self.sc.sock.sendall(os.urandom(p.HDR_LEN + 4096))
        elif mode == "wrong-id":
            self.reply(h, payload=self.filler(h), id=h.id ^ 0x5A5A5A5A00)
        elif mode == "wrong-len":
            if op == p.OP_GET:
                self.reply(h, payload=b"\x55" * (p.page_bytes(count) - 100),
                           len=p.page_bytes(count))
            else:
                self.reply(h, len=0x7FFFFFF0)
        elif mode == "bad-magic":
            self.reply(h, magic=0xDEADBEEF)
        elif mode == "wrong-data":
            self.reply(h, key=h.key + 1, payload=b"\xAA" * len(self.filler(h)))
        elif mode == "silent":
            time.sleep(3600)
        elif mode == "bad-tag":
            self.handle(h, payload, tamper=lambda d: d[:-1] + bytes([d[-1] ^ 1]))
        elif mode == "replay":
            if self.sc.last_sent is None:
                return False
            self.sc.sock.sendall(self.sc.last_sent)
        return True

    @staticmethod
    def filler(h):
        """Zeroes as long as the OK reply's payload to h must be."""
        return b"\0" * max(p.payload_len(p.reply_header(h)), 0)

    def swap_get(self, h):
        """A GET answered with the right header and wrong contents; False
        if there is nothing to swap in (then it is answered correctly)."""
        with self.store.lock:
            area = self.pages()
            got = [area.get(h.key + i, {}).get(h.vers) for i in range(h.count)]
            if any(g is None for g in got):
                return False
            if self.mode == "flip-bytes":
                out = [(bytes(b ^ 0xFF for b in pg[:64]) + pg[64:], s) for pg, s in got]
            elif self.mode == "other-slot":
                others = [(k, v) for k, vs in area.items() for v in vs
                          if not h.key <= k < h.key + h.count]
                if not others:
                    return False
                k, v = others[0]
                out = [area[k][v]] * h.count
            else:
                out = []
                old = self.store.old.get(self.area, {})
                for i in range(h.count):
                    vs = {**old.get(h.key + i, {}), **area.get(h.key + i, {})}
                    older = [v for v in vs if v < h.vers]
                    if not older:
                        return False
                    out.append(vs[max(older)])
        self.log(f"misbehaving ({self.mode}) on GET of {h.count} pages at {h.key}")
        self.reply(h, payload=b"".join(pg for pg, _ in out) + b"".join(s for _, s in out))
        return True

    def run(self):
        try:
            hello = self.sc.handshake(lambda hl: self.store.info((p.parse_identity(hl.identity), hl.device)))
            self.area = (self.sc.identity, hello.device)
            while True:
                h, payload = self.sc.read_frame()
                if (self.mode != "good" and (self.on is None or h.opcode in self.on)
                        and not self.store.serve_well(self.after, self.times)):
                    if self.misbehave(h, payload):
                        continue
                self.handle(h, payload)
        except (p.ProtocolError, ConnectionError, OSError) as e:
            self.log(f"connection closed: {e}")
        finally:
            self.sc.sock.close()

    def handle(self, h, payload, tamper=None):
        self.tamper = tamper
        try:
            self.serve(h, payload)
        finally:
            self.tamper = None

    def serve(self, h, payload):
        st, op = self.store, h.opcode
        if h.flags & p.F_REPLY:
            return
        with st.lock:
            area = self.pages()
            if op == p.OP_STATUS:
                self.reply(h, payload=st.info(self.area))
            elif op == p.OP_PUT:
                pages, seals = p.split_sealed(payload, h.count)
                keys = [h.key + i for i in range(h.count)]
                new = sum(1 for k in keys if h.vers not in area.get(k, {}))
                if new > st.free() - st.lie:
                    self.reply(h, p.ST_FULL)
                    return
                for k, pg, s in zip(keys, pages, seals):
                    area.setdefault(k, {})[h.vers] = (pg, s)
                    self.mark(k, h.vers)
                self.reply(h)
            elif op == p.OP_GET:
                got = [area.get(h.key + i, {}).get(h.vers) for i in range(h.count)]
                if any(g is None for g in got):
                    self.reply(h, p.ST_STALE)
                else:
                    self.reply(h, payload=b"".join(g[0] for g in got) + b"".join(g[1] for g in got))
            elif op == p.OP_INVAL:
                for k, v in p.parse_kvs(payload, h.count):
                    self.drop(area, k, v)
                self.reply(h)
            elif op == p.OP_FREE_ALL:
                area.clear()
                self.reply(h)
            elif op == p.OP_RETAIN_BEGIN:
                st.recon[self.area] = (h.key, set())
                self.reply(h)
            elif op == p.OP_RETAIN:
                kvs = p.parse_kvs(payload, h.count)
                missing = [i for i, (k, v) in enumerate(kvs) if v not in area.get(k, {})]
                for k, v in kvs:
                    self.mark(k, v)
                self.reply(h, payload=p.pack_bitmap(missing, h.count))
            elif op == p.OP_RETAIN_END:
                dropped = 0
                gen, marked = st.recon.get(self.area, (None, None))
                if gen == h.key:
                    del st.recon[self.area]
                    for k in list(area):
                        for v in list(area[k]):
                            if (k, v) not in marked:
                                self.drop(area, k, v)
                                dropped += 1
                self.reply(h, payload=p.RETAINED.pack(dropped, st.held(self.area)))
            else:
                self.reply(h, p.ST_INVALID)

    def mark(self, k, v):
        r = self.store.recon.get(self.area)
        if r:
            r[1].add((k, v))

    def drop(self, area, k, v):
        vs = area.get(k, {})
        if v in vs:
            if self.mode == "old-version":
                self.store.old.setdefault(self.area, {}).setdefault(k, {})[v] = vs[v]
            del vs[v]
            if not vs:
                del area[k]


def ops(names):
    """--on's opcodes, from their names."""
    by_name = {v: k for k, v in p.OP_NAMES.items()}
    try:
        return {by_name[n] for n in names.split(",")}
    except KeyError as e:
        raise argparse.ArgumentTypeError(f"no request {e}; one of {', '.join(by_name)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--mode", default="good")
    ap.add_argument("--after", type=int, default=0)
    ap.add_argument("--times", type=int, default=0)
    ap.add_argument("--on", type=ops, help="PUT,GET...: count and misbehave on these only")
    ap.add_argument("--capacity", type=int, default=65536)
    ap.add_argument("--lie-free", type=int, default=0)
    ap.add_argument("--psk-file")
    a = ap.parse_args()
    psks = p.load_psk_file(a.psk_file) if a.psk_file else None
    host, port = a.listen.rsplit(":", 1)
    srv = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host.strip("[]"), int(port)))
    srv.listen(16)
    store = Store(a.capacity, a.lie_free)

    def log(msg):
        print(f"evil_server[{a.mode}]: {msg}", file=sys.stderr, flush=True)

    log(f"listening on {a.listen}" + (" with keys" if psks else ""))
    while True:
        s, _ = srv.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        Conn(s, store, a.mode, (a.after, a.times), psks, log, a.on).start()


if __name__ == "__main__":
    main()
