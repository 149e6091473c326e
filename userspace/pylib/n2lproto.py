"""The Nswap2L Network RAM wire protocol (nswap-net/n2l-proto.h) in Python.

Frames are a 48-byte little-endian header and ``header.len`` bytes of
payload. This module packs and parses headers and payloads, mirrors
``n2l_payload_len()``, and has a blocking client (``Client``) that speaks
to ``nswapd`` and can answer the server's own MOVED and RETURN requests.
The same pieces serve to write small test servers (``read_frame``,
``reply_frame``, ``parse_hello``).

Example::

    with Client.connect("127.0.0.1:7077", client_id=1) as c:
        c.put(key=0, vers=1, pages=[b"\\x01" * PAGE_SIZE])
        assert c.get(key=0, count=1, vers=1) == [b"\\x01" * PAGE_SIZE]
"""

import collections
import select
import socket
import struct
import time

MAGIC = 0x504C324E
VERSION = 1
PAGE_SIZE = 4096
MAX_PAGES = 256
TOKEN_LEN = 32
ADDR_LEN = 64

OP_HELLO, OP_PUT, OP_GET, OP_INVAL, OP_STATUS, OP_FREE_ALL, OP_PEER_PUT, \
    OP_MOVED, OP_RETURN = range(1, 10)
OP_MAX = OP_RETURN
OP_NAMES = {OP_HELLO: "HELLO", OP_PUT: "PUT", OP_GET: "GET", OP_INVAL: "INVAL",
            OP_STATUS: "STATUS", OP_FREE_ALL: "FREE_ALL",
            OP_PEER_PUT: "PEER_PUT", OP_MOVED: "MOVED", OP_RETURN: "RETURN"}

F_REPLY = 0x0001

ST_OK, ST_FULL, ST_STALE, ST_INVALID, ST_AUTH, ST_VERSION, ST_NOHELLO, \
    ST_DRAINING = range(8)
ST_MAX = ST_DRAINING
ST_NAMES = ["OK", "FULL", "STALE", "INVALID", "AUTH", "VERSION", "NOHELLO",
            "DRAINING"]

ROLE_CLIENT, ROLE_PEER = 0, 1
SERVER_NORMAL, SERVER_DRAINING = 0, 1

HDR = struct.Struct("<IBBHQQIIIIII")    # struct n2l_hdr
HELLO = struct.Struct("<QII32s")        # struct n2l_hello
INFO = struct.Struct("<QQQII")          # struct n2l_info
KV = struct.Struct("<QII")              # struct n2l_kv
PEER = struct.Struct("<Q")              # struct n2l_peer
HDR_LEN = HDR.size
assert HDR_LEN == 48 and HELLO.size == 48 and INFO.size == 32 and KV.size == 16


class ProtocolError(Exception):
    """The other side broke the protocol, or the connection ended."""


class StatusError(Exception):
    """A reply with a status other than OK."""

    def __init__(self, hdr):
        self.hdr = hdr
        self.status = hdr.status
        super().__init__(f"{OP_NAMES.get(hdr.opcode, hdr.opcode)} id {hdr.id}: "
                         f"{status_name(hdr.status)}")


def status_name(st):
    return ST_NAMES[st] if 0 <= st <= ST_MAX else f"status{st}"


Header = collections.namedtuple(
    "Header", "magic version opcode flags id key count vers status free_pages "
              "len reserved")
Info = collections.namedtuple("Info", "capacity free held state")


def header(opcode, id=0, key=0, count=0, vers=0, status=0, free_pages=0,
           length=0, flags=0, magic=MAGIC, version=VERSION, reserved=0):
    return Header(magic, version, opcode, flags, id, key, count, vers, status,
                  free_pages, length, reserved)


def pack_header(h):
    return HDR.pack(*h)


def unpack_header(data):
    return Header(*HDR.unpack(bytes(data[:HDR_LEN])))


def payload_len(h):
    """The payload length a frame with header h must carry, or -1 if the
    header is invalid: n2l_payload_len() of n2l-proto.h."""
    if (h.magic != MAGIC or h.version != VERSION or h.flags & ~F_REPLY or
            not OP_HELLO <= h.opcode <= OP_MAX or h.count > MAX_PAGES):
        return -1
    reply = h.flags & F_REPLY
    if reply and h.status > ST_MAX:
        return -1
    if reply and h.status != ST_OK:
        return 0
    pages, kvs = h.count * PAGE_SIZE, h.count * KV.size
    op = h.opcode
    if op == OP_HELLO:
        return INFO.size if reply else HELLO.size
    if op == OP_STATUS:
        return INFO.size if reply else 0
    if op == OP_FREE_ALL:
        return 0
    if not h.count:
        return -1
    return {OP_PUT: 0 if reply else pages,
            OP_GET: pages if reply else 0,
            OP_INVAL: 0 if reply else kvs,
            OP_PEER_PUT: 0 if reply else PEER.size + kvs + pages,
            OP_MOVED: 0 if reply else kvs + ADDR_LEN,
            OP_RETURN: 0 if reply else kvs + pages}[op]


def frame(h, payload=b""):
    """Header (with len set to the payload's length) + payload, as bytes."""
    return pack_header(h._replace(len=len(payload))) + bytes(payload)


def _pages(pages):
    data = b"".join(pages) if not isinstance(pages, (bytes, bytearray)) else bytes(pages)
    if len(data) % PAGE_SIZE:
        raise ValueError("pages must be whole 4 KiB pages")
    return data


def split_pages(data):
    return [bytes(data[i:i + PAGE_SIZE]) for i in range(0, len(data), PAGE_SIZE)]


def pack_kvs(kvs):
    return b"".join(KV.pack(k, v, 0) for k, v in kvs)


def parse_kvs(data, count):
    return [KV.unpack_from(data, i * KV.size)[:2] for i in range(count)]


def pack_addr(addr):
    raw = addr.encode()
    if len(raw) >= ADDR_LEN:
        raise ValueError("address too long")
    return raw.ljust(ADDR_LEN, b"\0")


def parse_addr(data):
    return bytes(data[:ADDR_LEN]).split(b"\0", 1)[0].decode()


def parse_info(data):
    cap, free, held, state, _ = INFO.unpack(bytes(data[:INFO.size]))
    return Info(cap, free, held, state)


def pack_info(capacity, free, held, state=SERVER_NORMAL):
    return INFO.pack(capacity, free, held, state, 0)


def pack_hello(client_id, role=ROLE_CLIENT, token=b""):
    return HELLO.pack(client_id, role, 0, bytes(token).ljust(TOKEN_LEN, b"\0")[:TOKEN_LEN])


def parse_hello(data):
    """(client_id, role, token)"""
    cid, role, _, token = HELLO.unpack(bytes(data[:HELLO.size]))
    return cid, role, token


# Requests, as whole frames (bytes).

def hello_frame(id, client_id, role=ROLE_CLIENT, token=b""):
    return frame(header(OP_HELLO, id=id), pack_hello(client_id, role, token))


def put_frame(id, key, vers, pages):
    data = _pages(pages)
    return frame(header(OP_PUT, id=id, key=key, count=len(data) // PAGE_SIZE,
                        vers=vers), data)


def get_frame(id, key, count, vers):
    return frame(header(OP_GET, id=id, key=key, count=count, vers=vers))


def inval_frame(id, kvs):
    return frame(header(OP_INVAL, id=id, count=len(kvs)), pack_kvs(kvs))


def status_frame(id):
    return frame(header(OP_STATUS, id=id))


def free_all_frame(id):
    return frame(header(OP_FREE_ALL, id=id))


def peer_put_frame(id, client_id, kvs, pages):
    data = _pages(pages)
    assert len(data) == len(kvs) * PAGE_SIZE
    return frame(header(OP_PEER_PUT, id=id, count=len(kvs)),
                 PEER.pack(client_id) + pack_kvs(kvs) + data)


def moved_frame(id, kvs, addr):
    return frame(header(OP_MOVED, id=id, count=len(kvs)), pack_kvs(kvs) + pack_addr(addr))


def return_frame(id, kvs, pages):
    data = _pages(pages)
    return frame(header(OP_RETURN, id=id, count=len(kvs)), pack_kvs(kvs) + data)


def reply_frame(req, status=ST_OK, free_pages=0, payload=b""):
    """The reply to request header req: same id, opcode, key, count, vers."""
    if status != ST_OK:
        payload = b""
    return frame(req._replace(flags=F_REPLY, status=status, free_pages=free_pages,
                              reserved=0), payload)


# Parsing server requests (MOVED, RETURN, PEER_PUT).

def parse_moved(h, payload):
    """(list of (key, vers), peer address)"""
    return parse_kvs(payload, h.count), parse_addr(payload[h.count * KV.size:])


def parse_return(h, payload):
    """list of (key, vers, page)"""
    kvs = parse_kvs(payload, h.count)
    pages = split_pages(payload[h.count * KV.size:])
    return [(k, v, p) for (k, v), p in zip(kvs, pages)]


def parse_peer_put(h, payload):
    """(client_id, list of (key, vers, page))"""
    (cid,) = PEER.unpack_from(payload)
    return cid, parse_return(h, payload[PEER.size:])


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ProtocolError(f"connection closed ({len(buf)} of {n} bytes read)")
        buf += chunk
    return bytes(buf)


def is_error_reply(h):
    """A reply with a failure status and no payload. The server answers
    INVALID even to a header that n2l_payload_len() rejects (an unknown
    opcode, count > MAX_PAGES), echoing it; such a reply carries nothing
    to read, so it is safe to accept."""
    return (h.magic == MAGIC and h.version == VERSION and h.flags == F_REPLY and
            ST_OK < h.status <= ST_MAX and h.len == 0)


def read_frame(sock, strict=False):
    """One frame: (Header, payload bytes). Checks the header first, as the
    protocol requires, and raises ProtocolError if it is invalid (unless it
    is an error reply without payload and not strict)."""
    h = unpack_header(recv_exact(sock, HDR_LEN))
    want = payload_len(h)
    if (want < 0 or want != h.len) and (strict or not is_error_reply(h)):
        raise ProtocolError(f"invalid header {h}")
    return h, recv_exact(sock, h.len) if h.len else b""


ServerRequest = collections.namedtuple("ServerRequest", "hdr payload")


class Client:
    """A blocking connection to one server, as one client id (or as a peer
    server with role=ROLE_PEER). Requests may be pipelined with the send_*
    methods and collected with wait(); replies may arrive in any order.
    MOVED and RETURN requests from the server that arrive meanwhile are
    queued; take them with next_server_request() and answer with answer().
    Methods raise StatusError on a non-OK reply unless told otherwise."""

    def __init__(self, sock, client_id=0, timeout=10.0):
        self.sock = sock
        self.client_id = client_id
        self.sock.settimeout(timeout)
        self.next_id = 1
        self.replies = {}
        self.server_requests = collections.deque()
        self.free_pages = None
        self.info = None

    @classmethod
    def connect(cls, addr, client_id=0, token=b"", role=ROLE_CLIENT, timeout=10.0,
                hello=True):
        """Connect to "a.b.c.d:port" or "[v6]:port" and say HELLO."""
        host, port = split_addr(addr)
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(fam, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(timeout)
        sock.connect((host, port))
        c = cls(sock, client_id, timeout)
        if hello:
            c.hello(client_id, token, role)
        return c

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def _id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def _recv_one(self):
        h, payload = read_frame(self.sock)
        if h.flags & F_REPLY:
            self.free_pages = h.free_pages
            self.replies[h.id] = (h, payload)
        else:
            self.server_requests.append(ServerRequest(h, payload))

    def wait(self, id, check=True):
        """The reply to request id: (Header, payload)."""
        while id not in self.replies:
            self._recv_one()
        h, payload = self.replies.pop(id)
        if check and h.status != ST_OK:
            raise StatusError(h)
        return h, payload

    def recv_reply(self):
        """Whatever reply comes next (for tests of error replies)."""
        while not self.replies:
            self._recv_one()
        id = next(iter(self.replies))
        return self.replies.pop(id)

    # pipelined sends: each returns the request id
    def send_put(self, key, vers, pages):
        i = self._id()
        self.send_raw(put_frame(i, key, vers, pages))
        return i

    def send_get(self, key, count, vers):
        i = self._id()
        self.send_raw(get_frame(i, key, count, vers))
        return i

    def send_inval(self, kvs):
        i = self._id()
        self.send_raw(inval_frame(i, kvs))
        return i

    # blocking requests
    def hello(self, client_id, token=b"", role=ROLE_CLIENT, check=True):
        i = self._id()
        self.client_id = client_id
        self.send_raw(hello_frame(i, client_id, role, token))
        h, payload = self.wait(i, check)
        self.info = parse_info(payload) if h.status == ST_OK else None
        return h.status if not check else self.info

    def put(self, key, vers, pages, check=True):
        """Status of PUT: ST_OK, ST_FULL or ST_DRAINING; raises on others if check."""
        h, _ = self.wait(self.send_put(key, vers, pages), check=False)
        if check and h.status not in (ST_OK, ST_FULL, ST_DRAINING):
            raise StatusError(h)
        return h.status

    def get(self, key, count, vers):
        """The pages, or None if the server says STALE."""
        h, payload = self.wait(self.send_get(key, count, vers), check=False)
        if h.status == ST_STALE:
            return None
        if h.status != ST_OK:
            raise StatusError(h)
        return split_pages(payload)

    def inval(self, kvs):
        self.wait(self.send_inval(kvs))

    def status(self):
        i = self._id()
        self.send_raw(status_frame(i))
        return parse_info(self.wait(i)[1])

    def free_all(self):
        i = self._id()
        self.send_raw(free_all_frame(i))
        self.wait(i)

    def peer_put(self, client_id, kvs, pages, check=True):
        i = self._id()
        self.send_raw(peer_put_frame(i, client_id, kvs, pages))
        return self.wait(i, check=False)[0].status

    # the server's own requests
    def next_server_request(self, timeout=10.0):
        """The next MOVED or RETURN from the server, or None after timeout.
        Replies that arrive meanwhile are kept for wait()."""
        deadline = time.monotonic() + timeout
        while not self.server_requests:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            readable, _, _ = select.select([self.sock], [], [], left)
            if readable:
                self._recv_one()
        return self.server_requests.popleft()

    def answer(self, req, status=ST_OK):
        self.send_raw(reply_frame(req.hdr, status))


def split_addr(addr):
    """("host", port) of "a.b.c.d:port" or "[v6]:port"."""
    if addr.startswith("["):
        host, _, port = addr[1:].partition("]:")
    else:
        host, _, port = addr.rpartition(":")
    return host, int(port)
