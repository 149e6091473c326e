#!/usr/bin/env python3
"""A scripted page server: a correct, minimal page server that, told to,
misbehaves in one named way at a moment the test chooses, so that a test
can reproduce a fault of the kernel client deterministically.

  scripted_server.py --listen ADDR:PORT [--capacity PAGES] [BEHAVIOUR] [--armed]

Behaviours (one per server). Each waits for SIGUSR1 (the trigger) unless
--armed is given; the server logs "trigger: <behaviour>" when it starts
and "<behaviour>: done ..." when it is over, so that a test can wait for
it in the log (n2llab.Process.read_log).

  --replay-moved PEER   move every page of the client to the nswapd at
                        PEER as a real server would (HELLO as a PEER,
                        PEER_PUT, then MOVED naming PEER), and after each
                        OK send the very same MOVED again
  --replay-return       hand every page back (RETURN), and after each OK
                        hand the same pages back again
  --moved-to ADDR       send MOVED naming ADDR for every page, without
                        putting them anywhere (a peer the client cannot
                        reach); on OK drop them, as a server would
  --close-after-request send RETURN of the client's first pages and close
                        the connection at once; on the next connection,
                        once the client has reconciled, send that RETURN
                        again (as nswapd does: a request dies with its
                        connection); on later connections, every reply to
                        no request of that connection is logged as
                        "STRAY REPLY"
  --store-then-drop     store the next PUT, then close the connection
                        without replying
  --reorder-puts        hold the next PUT until another PUT of one of its
                        keys arrives (at most --hold-s), then store and
                        answer the later one first
  --early-reply         answer every PUT OK as soon as its header is
                        read, then (after --early-delay-s) read its pages
                        and store them
  --slow-puts N:S       wait S seconds before each of the next N PUTs
  --late-invals N:S     answer each of the next N INVALs S seconds late
                        (dropping its pages then), serving every other
                        request meanwhile
  --until-reconcile     with --late-invals: answer them as soon as the
                        client begins reconciling (RETAIN_BEGIN), if that
                        comes before the S seconds
  --hand-back           hand the pages of --pages back (RETURN) once, as a
                        server that shrinks: asked again every 0.5 s while
                        the client answers FULL (at most --tries times);
                        on OK they are dropped and the server donates that
                        much less
  --move-to-peer PEER   the same, but moved to the nswapd at PEER (PEER_PUT,
                        then MOVED naming PEER; both again after a FULL)

  --pages FIRST:N       the pages --hand-back and --move-to-peer give up:
                        those of slots [FIRST, FIRST+N) (default: all)
  --refuse-puts K:N     answer FULL to every PUT of a key in K..K+N-1,
                        while still reporting free pages (a server whose
                        memory ran out)

SIGUSR2 pauses (and resumes) every connection: nothing is read or
answered, the connections stay open (--pause-on-signal is the same
server with nothing else scripted).

It speaks protocol version 3 without keys (as nswapd --insecure): a
client's namespace is the (identity, device) of its HELLO, and the store
keeps versions of a key side by side with their seals, as nswapd's does
(a PUT never replaces another version; INVAL and RETAIN name versions).
Its HELLO answer carries an epoch drawn at start, so that a restarted
scripted server is known to have lost its pages.

Protocol details live in userspace/pylib/n2lproto.py; this file holds
the behaviours only.
"""
import argparse
import os
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "userspace", "pylib"))
import n2lproto as p  # noqa: E402

BATCH = p.MAX_PAGES
EPOCH = int.from_bytes(os.urandom(8), "little") | 1


def log(msg):
    print(f"{time.strftime('%H:%M:%S')} scripted_server: {msg}", file=sys.stderr, flush=True)


class Store:
    """(client, key, vers) -> (page, seal); client is (identity, device)."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.pages = {}
        self.retained = {}          # client -> (generation, set of (key, vers))
        self.lock = threading.Lock()

    def free(self):
        return max(self.capacity - len(self.pages), 0)

    def held(self, client):
        with self.lock:
            return sum(1 for c, _, _ in self.pages if c == client)

    def put(self, client, key, vers, pages, seals, force=False):
        """False (nothing stored) if there is no room."""
        with self.lock:
            fresh = sum(1 for i in range(len(pages)) if (client, key + i, vers) not in self.pages)
            if fresh > self.free() and not force:
                return False
            for i, page in enumerate(pages):
                self.pages[(client, key + i, vers)] = (page, seals[i])
            return True

    def get(self, client, key, count, vers):
        """(pages, seals), or None if one of them is not here."""
        with self.lock:
            got = [self.pages.get((client, key + i, vers)) for i in range(count)]
        if any(g is None for g in got):
            return None
        return [g[0] for g in got], [g[1] for g in got]

    def drop(self, client, kvs):
        """Drop each (key, vers) stored; how many were."""
        with self.lock:
            return sum(self.pages.pop((client, k, v), None) is not None for k, v in kvs)

    def free_all(self, client):
        with self.lock:
            keys = [k for k in self.pages if k[0] == client]
            for k in keys:
                del self.pages[k]
        return len(keys)

    def retain_begin(self, client, gen):
        with self.lock:
            self.retained[client] = (gen, set())

    def retain(self, client, kvs):
        """The indices of the (key, vers) not stored."""
        with self.lock:
            kept = self.retained.get(client, (None, set()))[1]
            kept.update(kvs)
            return [i for i, (k, v) in enumerate(kvs) if (client, k, v) not in self.pages]

    def retain_end(self, client, gen):
        """(dropped, held): what a current generation did not retain goes."""
        with self.lock:
            cur, kept = self.retained.get(client, (None, set()))
            dropped = 0
            if cur == gen:
                del self.retained[client]
                for c, k, v in [e for e in self.pages if e[0] == client]:
                    if (k, v) not in kept:
                        del self.pages[(c, k, v)]
                        dropped += 1
            return dropped, sum(1 for c, _, _ in self.pages if c == client)

    def pages_of(self, client):
        """[(key, vers, page, seal)] of the client, by key."""
        with self.lock:
            return sorted((k, v, pg, sl) for (c, k, v), (pg, sl) in self.pages.items()
                          if c == client)


def count_seconds(arg):
    """--slow-puts and --late-invals' N:S as (N, S); (0, 0.0) if not given."""
    if not arg:
        return 0, 0.0
    n, s = arg.split(":")
    return int(n), float(s)


class Server:
    def __init__(self, args):
        self.args = args
        self.store = Store(args.capacity)
        self.trigger = threading.Event()
        self.claimed = threading.Lock()
        self.paused = False
        self.armed = False          # for the behaviours that act on a PUT
        self.sent_ids = set()       # ids of our requests, on any connection
        self.resend = None          # --close-after-request: the batch to send again
        self.slow_left, self.slow_s = count_seconds(args.slow_puts)
        self.late_left, self.late_s = count_seconds(args.late_invals)
        # --refuse-puts: (first key, keys)
        self.refused = tuple(int(x) for x in args.refuse_puts.split(":")) \
            if args.refuse_puts else (0, 0)
        self.behaviour = next((b for b in ("replay_moved", "replay_return", "moved_to",
                                           "close_after_request", "store_then_drop",
                                           "reorder_puts", "early_reply", "slow_puts",
                                           "late_invals", "hand_back", "move_to_peer",
                                           "refuse_puts")
                               if getattr(args, b)), None)

    def fire(self):
        """The trigger: an action to run on a client connection, or a
        behaviour armed for the next PUTs."""
        log(f"trigger: {self.behaviour}")
        if self.behaviour is None:
            return
        if self.behaviour in ("store_then_drop", "reorder_puts", "early_reply", "slow_puts",
                              "late_invals", "refuse_puts"):
            self.armed = True
        else:
            self.trigger.set()


class Conn(threading.Thread):
    def __init__(self, srv, conn):
        super().__init__(daemon=True)
        self.srv, self.conn = srv, conn
        self.client = None
        self.tag = "(no hello yet)"
        self.active = False         # it carried a PUT or GET: the device's
        self.sent = set()           # ids of our requests on this connection
        self.replies = {}
        self.held_put = None        # --reorder-puts: (header, pages, deadline)
        self.resend_now = False     # the client has reconciled: send srv.resend
        self.late = []              # --late-invals: (due, header, entries)

    # -- frames in

    def step(self, timeout=0.1):
        """Handle at most one frame; False once the connection is over."""
        if self.held_put and time.monotonic() > self.held_put[2]:
            h, pages, _ = self.held_put
            self.held_put = None
            log(f"reorder-puts: no second PUT of key {h.key}: storing it now")
            self.store_put(h, pages)
        self.answer_late_invals()
        if self.srv.paused:
            time.sleep(timeout)
            return True
        if not self.conn.readable(timeout):
            return True
        h = self.conn.recv_header()
        if h.flags & p.F_REPLY:
            payload = self.conn.recv_payload(h)
            if h.id in self.sent:
                self.sent.discard(h.id)
                self.replies[h.id] = h
            else:
                log(f"STRAY REPLY on connection {self.conn.name}: {p.OP_NAMES.get(h.opcode)} "
                    f"id {h.id} status {p.status_name(h.status)} "
                    f"({'answers a request of an earlier connection' if h.id in self.srv.sent_ids else 'answers nothing we sent'})")
            return True
        return self.request(h)

    def request(self, h):
        st, op = self.srv.store, h.opcode
        if op == p.OP_PUT:
            return self.put(h)
        payload = self.conn.recv_payload(h)
        if op == p.OP_HELLO:
            return self.hello(h, payload)
        if self.client is None:
            self.conn.reply(h, p.ST_NOHELLO)
            return False
        if op == p.OP_STATUS:
            self.conn.reply_info(h, st.capacity, st.free(), st.held(self.client), epoch=EPOCH)
        elif op == p.OP_GET:
            self.active = True
            got = st.get(self.client, h.key, h.count, h.vers)
            if got is None:
                self.conn.reply(h, p.ST_STALE, free_pages=st.free())
            else:
                self.conn.reply_pages(h, *got, free_pages=st.free())
        elif op == p.OP_INVAL:
            self.inval(h, p.inval_kvs(h, payload))
        elif op == p.OP_FREE_ALL:
            n = st.free_all(self.client)
            log(f"connection {self.conn.name}: {self.tag}: FREE_ALL: {n} pages dropped")
            self.conn.reply(h, p.ST_OK, free_pages=st.free())
        elif op == p.OP_RETAIN_BEGIN:
            if self.srv.args.until_reconcile:
                self.answer_late_invals(everything=True)
            st.retain_begin(self.client, h.key)
            self.conn.reply(h, free_pages=st.free())
        elif op == p.OP_RETAIN:
            kvs = p.inval_kvs(h, payload)
            self.conn.reply(h, p.ST_OK, p.pack_bitmap(st.retain(self.client, kvs), len(kvs)),
                            free_pages=st.free())
        elif op == p.OP_RETAIN_END:
            dropped, held = st.retain_end(self.client, h.key)
            log(f"connection {self.conn.name}: {self.tag} reconciled: {dropped} pages dropped, "
                f"{held} held")
            self.conn.reply(h, p.ST_OK, p.RETAINED.pack(dropped, held), free_pages=st.free())
            self.resend_now = self.srv.resend is not None
        else:
            self.conn.reply(h, p.ST_INVALID)
            return False
        return True

    def inval(self, h, kvs):
        srv = self.srv
        if srv.armed and srv.behaviour == "late_invals" and srv.late_left > 0:
            srv.late_left -= 1
            log(f"late-invals: INVAL of {len(kvs)} pages: answering in {srv.late_s} s "
                f"({srv.late_left} more to delay)")
            self.late.append((time.monotonic() + srv.late_s, h, kvs))
            return
        self.drop_and_answer(h, kvs)

    def drop_and_answer(self, h, kvs):
        self.srv.store.drop(self.client, kvs)
        self.conn.reply(h, p.ST_OK, free_pages=self.srv.store.free())

    def answer_late_invals(self, everything=False):
        while self.late and (everything or self.late[0][0] <= time.monotonic()):
            _, h, kvs = self.late.pop(0)
            self.drop_and_answer(h, kvs)
            log(f"late-invals: INVAL of {len(kvs)} pages answered")

    def hello(self, h, payload):
        """Answers HELLO as nswapd --insecure does; False to end."""
        st = self.srv.store
        hello = p.parse_hello(payload)
        if self.client is not None or hello.flags & p.HELLO_AUTH or hello.role != p.ROLE_CLIENT:
            self.conn.reply(h, p.ST_AUTH if hello.flags & p.HELLO_AUTH else p.ST_INVALID)
            return False
        self.client = (p.parse_identity(hello.identity), hello.device)
        self.tag = f"area {self.client[0] or '-'}/{self.client[1]:x}"
        held = st.held(self.client)
        log(f"connection {self.conn.name}: {self.tag} hello ({held} pages held here)")
        info = p.pack_info(st.capacity, st.free(), held, epoch=EPOCH)
        self.conn.reply(h, p.ST_OK, p.pack_hello_reply(info=info), free_pages=st.free())
        return True

    def store_put(self, h, sealed, reply=True):
        ok = self.srv.store.put(self.client, h.key, h.vers, *sealed)
        if reply:
            self.conn.reply(h, p.ST_OK if ok else p.ST_FULL, free_pages=self.srv.store.free())
        return ok

    def put(self, h):
        srv = self.srv
        self.active = True
        if srv.armed and srv.behaviour == "early_reply":
            self.conn.reply(h, p.ST_OK, free_pages=srv.store.free())
            time.sleep(srv.args.early_delay_s)
            pages = p.put_pages(h, self.conn.recv_payload(h))
            srv.store.put(self.client, h.key, h.vers, *pages, force=True)
            return True
        pages = p.put_pages(h, self.conn.recv_payload(h))
        first, n = srv.refused
        if srv.armed and srv.behaviour == "refuse_puts" and \
                h.key < first + n and first < h.key + h.count:
            log(f"refuse-puts: PUT key {h.key} count {h.count} vers {h.vers}: FULL")
            self.conn.reply(h, p.ST_FULL, free_pages=srv.store.free())
            return True
        if srv.armed and srv.behaviour == "slow_puts" and srv.slow_left > 0:
            srv.slow_left -= 1
            log(f"slow-puts: PUT key {h.key} count {h.count} vers {h.vers}: "
                f"waiting {srv.slow_s} s ({srv.slow_left} more to slow down)")
            time.sleep(srv.slow_s)
            self.store_put(h, pages)
            log(f"slow-puts: PUT key {h.key} answered")
            return True
        if srv.armed and srv.behaviour == "store_then_drop":
            srv.armed = False
            srv.store.put(self.client, h.key, h.vers, *pages, force=True)
            log(f"store-then-drop: stored PUT key {h.key} count {h.count} vers {h.vers}, "
                f"closing without a reply")
            log("store-then-drop: done")
            return False
        if srv.armed and srv.behaviour == "reorder_puts":
            held = self.held_put
            if held is None:
                self.held_put = (h, pages, time.monotonic() + srv.args.hold_s)
                log(f"reorder-puts: holding PUT key {h.key} count {h.count} vers {h.vers}")
                return True
            hh = held[0]
            if h.key < hh.key + hh.count and hh.key < h.key + h.count:
                self.held_put = None
                srv.armed = False
                self.store_put(h, pages)
                self.store_put(hh, held[1])
                log(f"reorder-puts: stored PUT vers {h.vers} before PUT vers {hh.vers} "
                    f"of key {hh.key}")
                log("reorder-puts: done")
                return True
        self.store_put(h, pages)
        return True

    # -- our own requests

    def request_and_wait(self, send, what, timeout=60.0):
        """Send one of our requests (send() returns its id) and serve the
        connection until its reply; the reply's status, or None if the
        connection ended or the reply did not come in time."""
        rid = send()
        self.sent.add(rid)
        self.srv.sent_ids.add(rid)
        deadline = time.monotonic() + timeout
        while rid not in self.replies:
            if time.monotonic() > deadline or not self.step(0.1):
                log(f"{what}: no reply")
                return None
        return self.replies.pop(rid).status

    def until_ok(self, send, what, tries=120):
        """Our request again and again while the client says FULL."""
        for _ in range(tries):
            st = self.request_and_wait(send, what)
            if st != p.ST_FULL:
                return st
            time.sleep(0.5)
        return p.ST_FULL

    def batches(self):
        pages = self.srv.store.pages_of(self.client)
        return [pages[i:i + BATCH] for i in range(0, len(pages), BATCH)]

    def act(self):
        b = self.srv.behaviour
        getattr(self, b)()

    def replay_moved(self):
        peer_addr = self.srv.args.replay_moved
        moved = again = 0
        with p.Client.connect(peer_addr, role=p.ROLE_PEER) as peer:
            for batch in self.batches():
                kvs = [(k, v) for k, v, _, _ in batch]
                st = peer.peer_put(*self.client, kvs, [b[2] for b in batch], [b[3] for b in batch])
                if st != p.ST_OK:
                    log(f"replay-moved: PEER_PUT to {peer_addr}: {p.status_name(st)}")
                    continue
                st = self.until_ok(lambda: self.conn.send_moved(kvs, peer_addr), "MOVED")
                log(f"replay-moved: MOVED of {len(kvs)} pages to {peer_addr}: "
                    f"{p.status_name(st) if st is not None else 'no reply'}")
                if st != p.ST_OK:
                    continue
                moved += self.srv.store.drop(self.client, kvs)
                st = self.request_and_wait(lambda: self.conn.send_moved(kvs, peer_addr),
                                           "MOVED again")
                again += st is not None
                log(f"replay-moved: the same MOVED again: "
                    f"{p.status_name(st) if st is not None else 'no reply'}")
        log(f"replay-moved: done: {moved} pages moved, {again} MOVED replayed")

    def replay_return(self):
        returned = again = 0
        for batch in self.batches():
            kvs = [(k, v) for k, v, _, _ in batch]
            pages, seals = [b[2] for b in batch], [b[3] for b in batch]
            st = self.until_ok(lambda: self.conn.send_return(kvs, pages, seals), "RETURN")
            log(f"replay-return: RETURN of {len(kvs)} pages: "
                f"{p.status_name(st) if st is not None else 'no reply'}")
            if st != p.ST_OK:
                continue
            returned += self.srv.store.drop(self.client, kvs)
            st = self.request_and_wait(lambda: self.conn.send_return(kvs, pages, seals),
                                       "RETURN again")
            again += st is not None
            log(f"replay-return: the same RETURN again: "
                f"{p.status_name(st) if st is not None else 'no reply'}")
        log(f"replay-return: done: {returned} pages returned, {again} RETURN replayed")

    def serve_for(self, seconds):
        """Wait that long, serving the connection meanwhile (a client's
        reads must not wait for our pause)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self.step(0.05):
                raise ConnectionError("closed while we waited")

    def chosen_batches(self):
        """The batches of --pages: slots [FIRST, FIRST+N) of the client."""
        first, n = (int(x) for x in self.srv.args.pages.split(":")) if self.srv.args.pages \
            else (0, 1 << 62)
        pages = [pg for pg in self.srv.store.pages_of(self.client) if first <= pg[0] < first + n]
        return [pages[i:i + BATCH] for i in range(0, len(pages), BATCH)]

    def give_up(self, what, send):
        """Give the batches of --pages up with send(kvs, pages, seals) (the
        id of the request), asking again while the client says FULL; on
        OK drop them and donate that much less."""
        given = 0
        for batch in self.chosen_batches():
            kvs = [(k, v) for k, v, _, _ in batch]
            pages, seals = [b[2] for b in batch], [b[3] for b in batch]
            for _ in range(self.srv.args.tries):
                st = self.request_and_wait(lambda: send(kvs, pages, seals), what)
                log(f"{what}: {len(kvs)} pages from slot {kvs[0][0]}: "
                    f"{p.status_name(st) if st is not None else 'no reply'}")
                if st != p.ST_FULL:
                    break
                self.serve_for(0.5)
            if st == p.ST_OK:
                # (the client may have invalidated them first)
                self.srv.store.drop(self.client, kvs)
                self.srv.store.capacity -= len(kvs)
                given += len(kvs)
        log(f"{what}: done: {given} pages given up")

    def hand_back(self):
        self.give_up("hand-back", self.conn.send_return)

    def move_to_peer(self):
        peer_addr = self.srv.args.move_to_peer
        peer = []

        def peer_put(kvs, pages, seals):
            """PEER_PUT, on a new connection once the peer's has ended (it
            restarted since the last try)."""
            for last in (False, True):
                try:
                    if not peer:
                        peer.append(p.Client.connect(peer_addr, role=p.ROLE_PEER))
                    return peer[0].peer_put(*self.client, kvs, pages, seals)
                except (OSError, p.ProtocolError):
                    if peer:
                        peer.pop().close()
                    if last:
                        raise

        def send(kvs, pages, seals):
            st = peer_put(kvs, pages, seals)
            if st != p.ST_OK:
                log(f"move-to-peer: PEER_PUT to {peer_addr}: {p.status_name(st)}")
            return self.conn.send_moved(kvs, peer_addr)
        try:
            self.give_up("move-to-peer", send)
        finally:
            for c in peer:
                c.close()

    def moved_to(self):
        addr = self.srv.args.moved_to
        moved = refused = 0
        for batch in self.batches():
            kvs = [(k, v) for k, v, _, _ in batch]
            st = self.request_and_wait(lambda: self.conn.send_moved(kvs, addr), "MOVED")
            log(f"moved-to: MOVED of {len(kvs)} pages to {addr}: "
                f"{p.status_name(st) if st is not None else 'no reply'}")
            if st == p.ST_OK:
                moved += self.srv.store.drop(self.client, kvs)
            else:
                refused += len(kvs)
        log(f"moved-to: done: {moved} pages given up, {refused} kept")

    def close_after_request(self):
        batch = self.batches()[0]
        kvs = [(k, v) for k, v, _, _ in batch]
        rid = self.conn.send_return(kvs, [b[2] for b in batch], [b[3] for b in batch])
        self.srv.resend = batch
        self.sent.add(rid)
        self.srv.sent_ids.add(rid)
        log(f"close-after-request: RETURN id {rid} of {len(kvs)} pages sent; closing")
        # FIN after the RETURN, then read (and ignore) until the client
        # closes too: a close with unread data would reset the connection
        # and could destroy the RETURN on its way.
        self.conn.sock.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.conn.readable(deadline - time.monotonic()):
            if not self.conn.sock.recv(1 << 16):
                break
        self.conn.close()
        log("close-after-request: done")
        raise ConnectionError("closed on purpose")

    def resend_return(self):
        """The RETURN that died with its connection, on this one."""
        batch, self.srv.resend = self.srv.resend, None
        kvs = [(k, v) for k, v, _, _ in batch]
        st = self.until_ok(lambda: self.conn.send_return(kvs, [b[2] for b in batch],
                                                         [b[3] for b in batch]), "RETURN again")
        if st == p.ST_OK:
            self.srv.store.drop(self.client, kvs)
        log(f"close-after-request: RETURN sent again: "
            f"{p.status_name(st) if st is not None else 'no reply'}")

    # -- the connection

    def run(self):
        srv = self.srv
        try:
            while True:
                if srv.trigger.is_set() and self.active and srv.claimed.acquire(blocking=False):
                    srv.trigger.clear()
                    self.act()
                if self.resend_now:
                    self.resend_now = False
                    self.resend_return()
                if not self.step():
                    break
        except (ConnectionError, OSError, p.ProtocolError) as e:
            log(f"connection {self.conn.name}: ended: {e}")
        finally:
            self.conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", required=True)
    ap.add_argument("--capacity", type=int, default=65536, help="pages")
    ap.add_argument("--armed", action="store_true", help="no trigger needed")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--replay-moved", metavar="PEER")
    g.add_argument("--replay-return", action="store_true")
    g.add_argument("--moved-to", metavar="ADDR")
    g.add_argument("--close-after-request", action="store_true")
    g.add_argument("--store-then-drop", action="store_true")
    g.add_argument("--reorder-puts", action="store_true")
    g.add_argument("--early-reply", action="store_true")
    g.add_argument("--slow-puts", metavar="N:S")
    g.add_argument("--late-invals", metavar="N:S")
    g.add_argument("--refuse-puts", metavar="K:N")
    g.add_argument("--pause-on-signal", action="store_true")
    g.add_argument("--hand-back", action="store_true")
    g.add_argument("--move-to-peer", metavar="PEER")
    ap.add_argument("--until-reconcile", action="store_true")
    ap.add_argument("--pages", metavar="FIRST:N")
    ap.add_argument("--tries", type=int, default=120)
    ap.add_argument("--hold-s", type=float, default=20.0)
    ap.add_argument("--early-delay-s", type=float, default=0.3)
    a = ap.parse_args()

    srv = Server(a)
    signal.signal(signal.SIGUSR1, lambda *_: srv.fire())

    def pause(*_):
        srv.paused = not srv.paused
        log("paused" if srv.paused else "resumed")
    signal.signal(signal.SIGUSR2, pause)
    lsock = p.listen(a.listen)
    log(f"listening on {a.listen}, behaviour {srv.behaviour or 'none'}")
    if a.armed:
        srv.fire()
    while True:
        Conn(srv, p.accept(lsock)).start()


if __name__ == "__main__":
    main()
