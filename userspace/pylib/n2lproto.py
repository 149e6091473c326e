"""The Nswap2L Network RAM wire protocol, version 3 (nswap-net/n2l-proto.h),
in Python.

Frames are a 48-byte little-endian header, ``header.len`` bytes of payload
and, once a connection is authenticated, a 16-byte tag (ChaCha20-Poly1305
with no plaintext over header and payload, nonce = the frame's sequence
number in its direction). This module packs and parses headers and payloads,
mirrors ``n2l_payload_len()``, computes proofs, session keys and tags,
and has

* ``Client``: a blocking client that speaks to ``nswapd`` (insecure, or
  authenticated with an identity and its 32-byte pre-shared key), can be a
  peer server (role PEER, ``peer_put``), and answers the server's own
  MOVED and RETURN requests;
* ``ServerConn``: the server side of one connection, to write test servers
  with: read a frame (tags checked), answer HELLO/AUTH from a PSK table
  (``handshake``), send replies and requests (tags added);
* frame builders (``put_frame``, ``moved_frame``, ...) that return untagged
  frames as bytes, for raw tests and the fuzzer's corpus.

Pages travel with 16-byte seals that the server stores and returns as it
got them; ``seal_of()`` makes a deterministic one for tests.

Example::

    with Client.connect("127.0.0.1:7077", device=1, identity="node1",
                        psk=load_psk_file("/etc/nswapd/psk")["node1"][0]) as c:
        c.put(key=0, vers=1, pages=[b"\\x01" * PAGE_SIZE])
        assert c.get(key=0, count=1, vers=1) == [b"\\x01" * PAGE_SIZE]
"""

import collections
import hashlib
import hmac
import os
import select
import socket
import struct
import time

import n2lkeys
from n2lkeys import bound_key, canonical_addr, split_addr

MAGIC = 0x504C324E
VERSION = 3
PAGE_SIZE = 4096
SEAL_LEN = 16
TAG_LEN = 16
MAX_PAGES = 256
MAX_KVS = 4096
VERS_BITS = 48
VERS_MAX = (1 << VERS_BITS) - 1
ID_LEN = 64
NONCE_LEN = 32
MAC_LEN = 32
PSK_LEN = 32
ADDR_LEN = 64

(OP_HELLO, OP_PUT, OP_GET, OP_INVAL, OP_STATUS, OP_FREE_ALL, OP_PEER_PUT,
 OP_MOVED, OP_RETURN, OP_AUTH, OP_RETAIN_BEGIN, OP_RETAIN,
 OP_RETAIN_END) = range(1, 14)
OP_MAX = OP_RETAIN_END
OP_NAMES = {OP_HELLO: "HELLO", OP_PUT: "PUT", OP_GET: "GET", OP_INVAL: "INVAL",
            OP_STATUS: "STATUS", OP_FREE_ALL: "FREE_ALL",
            OP_PEER_PUT: "PEER_PUT", OP_MOVED: "MOVED", OP_RETURN: "RETURN",
            OP_AUTH: "AUTH", OP_RETAIN_BEGIN: "RETAIN_BEGIN",
            OP_RETAIN: "RETAIN", OP_RETAIN_END: "RETAIN_END"}

F_REPLY = 0x0001

ST_OK, ST_FULL, ST_STALE, ST_INVALID, ST_AUTH, ST_VERSION, ST_NOHELLO, \
    ST_DRAINING = range(8)
ST_MAX = ST_DRAINING
ST_NAMES = ["OK", "FULL", "STALE", "INVALID", "AUTH", "VERSION", "NOHELLO",
            "DRAINING"]

ROLE_CLIENT, ROLE_PEER = 0, 1
HELLO_AUTH = 0x0001
SERVER_NORMAL, SERVER_DRAINING = 0, 1

LABEL_SERVER = b"n2l2-server"
LABEL_CLIENT = b"n2l2-client"
LABEL_SESSION = b"n2l2-session"

HDR = struct.Struct("<IBBHQQQIIII")     # struct n2l_hdr
HELLO = struct.Struct("<IIQ32s64s")     # struct n2l_hello
CHALLENGE = struct.Struct("<32s32s")    # struct n2l_challenge
INFO = struct.Struct("<QQQQII")         # struct n2l_info
AUTH = struct.Struct("<32s")            # struct n2l_auth
TRANSCRIPT = struct.Struct("<16s32s32sIIQ64s")  # struct n2l_transcript
KV = struct.Struct("<QQ")               # struct n2l_kv
RETAINED = struct.Struct("<QQ")         # struct n2l_retained
PEER = struct.Struct("<64sQ")           # struct n2l_peer
HDR_LEN = HDR.size
HELLO_REPLY_LEN = CHALLENGE.size + INFO.size
assert HDR_LEN == 48 and HELLO.size == 112 and CHALLENGE.size == 64
assert INFO.size == 40 and AUTH.size == 32 and TRANSCRIPT.size == 160
assert KV.size == 16 and RETAINED.size == 16 and PEER.size == 72
assert HELLO_REPLY_LEN == 104


class ProtocolError(Exception):
    """The other side broke the protocol, or the connection ended."""


class AuthError(ProtocolError):
    """Authentication failed: refused by the server, or the server's proof
    is wrong (it does not have the key)."""


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
    "Header", "magic version opcode flags id key vers count status free_pages len")
Info = collections.namedtuple("Info", "epoch capacity free held state")
Hello = collections.namedtuple("Hello", "role flags device nonce identity")


def header(opcode, id=0, key=0, count=0, vers=0, status=0, free_pages=0,
           length=0, flags=0, magic=MAGIC, version=VERSION):
    return Header(magic, version, opcode, flags, id, key, vers, count, status,
                  free_pages, length)


def pack_header(h):
    return HDR.pack(*h)


def unpack_header(data):
    return Header(*HDR.unpack(bytes(data[:HDR_LEN])))


def max_count(op):
    """The most entries a frame of opcode op may carry."""
    return MAX_KVS if op in (OP_INVAL, OP_RETAIN) else MAX_PAGES


def op_counts(op):
    """Whether a frame of opcode op names count >= 1 entries or pages."""
    return op in (OP_PUT, OP_GET, OP_INVAL, OP_RETAIN, OP_PEER_PUT, OP_MOVED,
                  OP_RETURN)


def page_bytes(n):
    """n pages and their seals."""
    return n * (PAGE_SIZE + SEAL_LEN)


def payload_len(h):
    """The payload length a frame with header h must carry, or -1 if the
    header is invalid: n2l_payload_len() of n2l-proto.h."""
    op, count, reply = h.opcode, h.count, h.flags & F_REPLY
    if (h.magic != MAGIC or h.version != VERSION or h.flags & ~F_REPLY or
            not OP_HELLO <= op <= OP_MAX or count > max_count(op) or
            (op_counts(op) and not count) or (not op_counts(op) and count) or
            h.vers > VERS_MAX):
        return -1
    if not reply and (h.status or h.free_pages):
        return -1
    if reply and h.status > ST_MAX:
        return -1
    if reply and h.status != ST_OK:
        return 0
    kvs = count * KV.size
    if op == OP_HELLO:
        return HELLO_REPLY_LEN if reply else HELLO.size
    if op == OP_AUTH:
        return INFO.size if reply else AUTH.size
    if op == OP_STATUS:
        return INFO.size if reply else 0
    if op == OP_PUT:
        return 0 if reply else page_bytes(count)
    if op == OP_GET:
        return page_bytes(count) if reply else 0
    if op == OP_INVAL:
        return 0 if reply else kvs
    if op in (OP_FREE_ALL, OP_RETAIN_BEGIN):
        return 0
    if op == OP_RETAIN:
        return (count + 7) // 8 if reply else kvs
    if op == OP_RETAIN_END:
        return RETAINED.size if reply else 0
    if op == OP_PEER_PUT:
        return 0 if reply else PEER.size + kvs + page_bytes(count)
    if op == OP_MOVED:
        return 0 if reply else kvs + ADDR_LEN
    if op == OP_RETURN:
        return 0 if reply else kvs + page_bytes(count)
    return -1


def frame(h, payload=b""):
    """Header (with len set to the payload's length) + payload, as bytes
    (untagged: see Tagger for authenticated connections)."""
    return pack_header(h._replace(len=len(payload))) + bytes(payload)


# Pages and seals.

def seal_of(key, vers, page):
    """A deterministic 16-byte seal for tests (the server never looks at
    seals; the kernel uses a GCM tag or a CRC32C)."""
    return hashlib.blake2b(struct.pack("<QQ", key, vers) + bytes(page),
                           digest_size=SEAL_LEN).digest()


def _pages(pages):
    data = b"".join(pages) if not isinstance(pages, (bytes, bytearray)) else bytes(pages)
    if len(data) % PAGE_SIZE:
        raise ValueError("pages must be whole 4 KiB pages")
    return data


def split_pages(data):
    return [bytes(data[i:i + PAGE_SIZE]) for i in range(0, len(data), PAGE_SIZE)]


def pack_pages(pages, seals):
    """n pages, then their n seals (the layout of PUT, GET, RETURN, ...)."""
    data = _pages(pages)
    seals = b"".join(seals) if not isinstance(seals, (bytes, bytearray)) else bytes(seals)
    if len(seals) * PAGE_SIZE != len(data) * SEAL_LEN:
        raise ValueError("one 16-byte seal per page")
    return data + seals


def split_sealed(data, count):
    """(pages, seals) of n pages followed by n seals."""
    pages = split_pages(data[:count * PAGE_SIZE])
    s = data[count * PAGE_SIZE:]
    return pages, [bytes(s[i * SEAL_LEN:(i + 1) * SEAL_LEN]) for i in range(count)]


def pack_kvs(kvs):
    return b"".join(KV.pack(k, v) for k, v in kvs)


def parse_kvs(data, count):
    return [KV.unpack_from(data, i * KV.size) for i in range(count)]


def pack_addr(addr):
    raw = addr.encode()
    if len(raw) >= ADDR_LEN:
        raise ValueError("address too long")
    return raw.ljust(ADDR_LEN, b"\0")


def parse_addr(data):
    return bytes(data[:ADDR_LEN]).split(b"\0", 1)[0].decode()


def pack_identity(identity):
    """A NUL-padded 64-byte identity field (str or bytes; "" for none)."""
    raw = identity.encode() if isinstance(identity, str) else bytes(identity or b"")
    if len(raw) > ID_LEN:
        raise ValueError("identity longer than 64 bytes")
    return raw.ljust(ID_LEN, b"\0")


def parse_identity(data):
    return bytes(data[:ID_LEN]).rstrip(b"\0").decode(errors="replace")


def parse_info(data):
    return Info(*INFO.unpack(bytes(data[:INFO.size]))[:5])


def pack_info(capacity, free, held, state=SERVER_NORMAL, epoch=1):
    return INFO.pack(epoch, capacity, free, held, state, 0)


def pack_hello(device=0, role=ROLE_CLIENT, identity="", nonce=None, flags=None):
    """n2l_hello; flags default to HELLO_AUTH when an identity is given."""
    if flags is None:
        flags = HELLO_AUTH if identity else 0
    return HELLO.pack(role, flags, device, bytes(nonce or b"\0" * NONCE_LEN),
                      pack_identity(identity))


def parse_hello(data):
    role, flags, device, nonce, ident = HELLO.unpack(bytes(data[:HELLO.size]))
    return Hello(role, flags, device, nonce, ident)


def pack_hello_reply(info=None, nonce=b"", proof=b""):
    """n2l_hello_reply: a challenge (nonce, proof) or an info (bytes)."""
    ch = CHALLENGE.pack(bytes(nonce).ljust(NONCE_LEN, b"\0"),
                        bytes(proof).ljust(MAC_LEN, b"\0"))
    return ch + (bytes(info) if info is not None else b"\0" * INFO.size)


def parse_hello_reply(data):
    """((nonce, proof), Info)"""
    nonce, proof = CHALLENGE.unpack_from(data)
    return (nonce, proof), parse_info(data[CHALLENGE.size:])


def parse_retained(data):
    """(dropped, held) of RETAIN_END's reply."""
    return RETAINED.unpack(bytes(data[:RETAINED.size]))


def bitmap_bits(data, count):
    """The indices whose bit is set in a RETAIN reply (entries not stored)."""
    return [i for i in range(count) if data[i // 8] >> (i % 8) & 1]


def pack_bitmap(bits, count):
    out = bytearray((count + 7) // 8)
    for i in bits:
        out[i // 8] |= 1 << (i % 8)
    return bytes(out)


# Authentication: proofs, session keys, tags.

def transcript(label, client_nonce, server_nonce, role, device, identity):
    """struct n2l_transcript (label: bytes, at most 16, NUL-padded)."""
    return TRANSCRIPT.pack(label.ljust(16, b"\0"), bytes(client_nonce),
                           bytes(server_nonce), role, 0, device,
                           pack_identity(identity))


def proof(psk, label, client_nonce, server_nonce, role, device, identity):
    """HMAC-SHA256(psk, transcript(label, ...)): Ps, Pc, or Ks."""
    return hmac.new(bytes(psk), transcript(label, client_nonce, server_nonce, role,
                                           device, identity), hashlib.sha256).digest()


def session_keys(psk, client_nonce, server_nonce, role, device, identity):
    """(Kc2s, Ks2c)"""
    ks = proof(psk, LABEL_SESSION, client_nonce, server_nonce, role, device, identity)
    return (hmac.new(ks, b"n2l2-c2s", hashlib.sha256).digest(),
            hmac.new(ks, b"n2l2-s2c", hashlib.sha256).digest())


def server_key(psk, name, server_proof, *args):
    """The key the server's proof Ps was made with: the one bound to its
    name, else psk itself; None if neither."""
    for key in (bound_key(psk, name), bytes(psk)):
        if hmac.compare_digest(bytes(server_proof), proof(key, LABEL_SERVER, *args)):
            return key
    return None


class Tagger:
    """The frame tags of one direction of a connection: ChaCha20-Poly1305
    (RFC 8439) with no plaintext, header and payload as associated data,
    nonce = 4 zero bytes, then the sequence number (little-endian 64 bits),
    counted from 0."""

    def __init__(self, key, seq=0):
        from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
        self.aead = ChaCha20Poly1305(bytes(key))
        self.seq = seq

    def _tag(self, data, seq):
        return self.aead.encrypt(struct.pack("<IQ", 0, seq), b"", bytes(data))

    def tag(self, data):
        """The next frame's tag; the sequence number advances."""
        t = self._tag(data, self.seq)
        self.seq += 1
        return t

    def verify(self, data, tag):
        """Whether tag is the next frame's; advances only if it is."""
        if not hmac.compare_digest(self._tag(data, self.seq), bytes(tag)):
            return False
        self.seq += 1
        return True


def load_psk_file(path):
    """{identity: (key bytes, peer)} of a psk file ("<identity> <64 hex>
    [peer]" lines, '#' comments). A weak key is a ValueError, as nswapd
    refuses it."""
    table = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            key = bytes.fromhex(words[1])
            _check_key(key, f"{path}:{n}")
            table[words[0]] = (key, len(words) > 2 and words[2] == "peer")
    return table


def write_psk_file(path, table):
    """Writes {identity: key or (key, peer)} as a psk file, mode 600;
    refuses a weak key (ValueError) before it writes anything."""
    lines = []
    for ident, v in table.items():
        key, peer = v if isinstance(v, tuple) else (v, False)
        _check_key(bytes(key), f"{path}:{len(lines) + 1}")
        lines.append(f"{ident} {bytes(key).hex()}{' peer' if peer else ''}\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.writelines(lines)


def _check_key(key, where):
    weak = n2lkeys.refusal(key, where)
    if weak:
        raise ValueError(weak)


# Requests, as whole untagged frames (bytes).

def hello_frame(id, device=0, role=ROLE_CLIENT, identity="", nonce=None, flags=None):
    return frame(header(OP_HELLO, id=id), pack_hello(device, role, identity, nonce, flags))


def auth_frame(id, proof_bytes):
    return frame(header(OP_AUTH, id=id), AUTH.pack(bytes(proof_bytes)))


def _seals(key, vers, pages, seals):
    if seals is None:
        seals = [seal_of(key + i, vers, pg) for i, pg in enumerate(split_pages(_pages(pages)))]
    return seals


def put_frame(id, key, vers, pages, seals=None):
    data = _pages(pages)
    n = len(data) // PAGE_SIZE
    return frame(header(OP_PUT, id=id, key=key, count=n, vers=vers),
                 pack_pages(data, _seals(key, vers, data, seals)))


def get_frame(id, key, count, vers):
    return frame(header(OP_GET, id=id, key=key, count=count, vers=vers))


def inval_frame(id, kvs):
    return frame(header(OP_INVAL, id=id, count=len(kvs)), pack_kvs(kvs))


def status_frame(id):
    return frame(header(OP_STATUS, id=id))


def free_all_frame(id):
    return frame(header(OP_FREE_ALL, id=id))


def retain_begin_frame(id, gen):
    return frame(header(OP_RETAIN_BEGIN, id=id, key=gen))


def retain_frame(id, kvs):
    return frame(header(OP_RETAIN, id=id, count=len(kvs)), pack_kvs(kvs))


def retain_end_frame(id, gen):
    return frame(header(OP_RETAIN_END, id=id, key=gen))


def _kv_seals(kvs, pages, seals):
    if seals is None:
        seals = [seal_of(k, v, pg) for (k, v), pg in zip(kvs, split_pages(_pages(pages)))]
    return seals


def peer_put_frame(id, identity, device, kvs, pages, seals=None):
    data = _pages(pages)
    assert len(data) == len(kvs) * PAGE_SIZE
    return frame(header(OP_PEER_PUT, id=id, count=len(kvs)),
                 PEER.pack(pack_identity(identity), device) + pack_kvs(kvs)
                 + pack_pages(data, _kv_seals(kvs, data, seals)))


def moved_frame(id, kvs, addr):
    return frame(header(OP_MOVED, id=id, count=len(kvs)), pack_kvs(kvs) + pack_addr(addr))


def return_frame(id, kvs, pages, seals=None):
    data = _pages(pages)
    return frame(header(OP_RETURN, id=id, count=len(kvs)),
                 pack_kvs(kvs) + pack_pages(data, _kv_seals(kvs, data, seals)))


def reply_header(req, status=ST_OK, free_pages=0):
    """The reply header to request header req: same id, opcode, key, count,
    vers; len is set by frame()."""
    return req._replace(flags=F_REPLY, status=status, free_pages=free_pages)


def reply_frame(req, status=ST_OK, free_pages=0, payload=b""):
    """The reply to request header req, untagged (no payload unless OK)."""
    if status != ST_OK:
        payload = b""
    return frame(reply_header(req, status, free_pages), payload)


# Parsing the payloads of server requests (MOVED, RETURN, PEER_PUT).

def parse_moved(h, payload):
    """(list of (key, vers), peer address)"""
    return parse_kvs(payload, h.count), parse_addr(payload[h.count * KV.size:])


def parse_return(h, payload):
    """list of (key, vers, page, seal)"""
    kvs = parse_kvs(payload, h.count)
    pages, seals = split_sealed(payload[h.count * KV.size:], h.count)
    return [(k, v, pg, s) for (k, v), pg, s in zip(kvs, pages, seals)]


def parse_peer_put(h, payload):
    """(identity, device, list of (key, vers, page, seal))"""
    ident, device = PEER.unpack_from(payload)
    return parse_identity(ident), device, parse_return(h, payload[PEER.size:])


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
    opcode, count > max), echoing it; such a reply carries nothing to read,
    so it is safe to accept."""
    return (h.magic == MAGIC and h.version == VERSION and h.flags == F_REPLY and
            ST_OK < h.status <= ST_MAX and h.len == 0)


def is_untagged_refusal(h):
    """A refused AUTH: answered untagged although tags were expected."""
    return h.flags & F_REPLY and h.opcode == OP_AUTH and h.status == ST_AUTH


def read_frame(sock, strict=False, rx=None):
    """One frame: (Header, payload bytes). Checks the header first, as the
    protocol requires, and raises ProtocolError if it is invalid (unless it
    is an error reply without payload and not strict). With rx (a Tagger),
    the frame's tag is read and checked too (ProtocolError if wrong)."""
    raw = recv_exact(sock, HDR_LEN)
    h = unpack_header(raw)
    want = payload_len(h)
    if (want < 0 or want != h.len) and (strict or not is_error_reply(h)):
        raise ProtocolError(f"invalid header {h}")
    payload = recv_exact(sock, h.len) if h.len else b""
    if rx is not None and not (rx.seq == 0 and is_untagged_refusal(h)):
        tag = recv_exact(sock, TAG_LEN)
        if not rx.verify(raw + payload, tag):
            raise ProtocolError(f"frame tag does not verify ({OP_NAMES.get(h.opcode)})")
    return h, payload


def _random_nonce():
    return os.urandom(NONCE_LEN)


ServerRequest = collections.namedtuple("ServerRequest", "hdr payload")


class Client:
    """A blocking connection to one server, for one device (area) of one
    identity, or as a peer server with role=ROLE_PEER. Without identity and
    psk it says HELLO without authentication (an --insecure server); with
    them it authenticates both ways and tags every frame after that.
    Requests may be pipelined with the send_* methods and collected with
    wait(); replies may arrive in any order. MOVED and RETURN requests from
    the server that arrive meanwhile are queued; take them with
    next_server_request() and answer with answer(). Methods raise
    StatusError on a non-OK reply unless told otherwise."""

    def __init__(self, sock, device=0, timeout=10.0):
        self.sock = sock
        self.device = device
        self.sock.settimeout(timeout)
        self.next_id = 1
        self.replies = {}
        self.server_requests = collections.deque()
        self.free_pages = None
        self.info = None
        self.tx = self.rx = None
        self.identity = ""
        self.key_bound = False

    @classmethod
    def connect(cls, addr, device=0, identity=None, psk=None, role=ROLE_CLIENT,
                timeout=10.0, hello=True):
        """Connect to "a.b.c.d:port" or "[v6]:port" and say HELLO
        (authenticating if identity and psk are given)."""
        host, port = split_addr(addr)
        fam = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(fam, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(timeout)
        sock.connect((host, port))
        c = cls(sock, device, timeout)
        if hello:
            try:
                c.hello(device, role=role, identity=identity, psk=psk)
            except BaseException:
                c.close()
                raise
        return c

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        """Bytes as they are: no tag is added."""
        self.sock.sendall(data)

    def send_frame(self, data):
        """A whole frame (header + payload), tagged if the session is."""
        data = bytes(data)
        if self.tx is not None:
            data += self.tx.tag(data)
        self.sock.sendall(data)

    def _id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def _recv_one(self):
        h, payload = read_frame(self.sock, rx=self.rx)
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

    def _request(self, data_fn, check=True):
        i = self._id()
        self.send_frame(data_fn(i))
        return self.wait(i, check)

    # handshake
    def hello(self, device=0, role=ROLE_CLIENT, identity=None, psk=None, check=True,
              nonce=None):
        """HELLO (and AUTH with identity and psk). Returns the server's Info,
        or the status if not check and the server refused. Raises AuthError
        if the server's proof is wrong, or (check) if it refused."""
        self.device = device
        if not identity:
            h, payload = self._request(lambda i: hello_frame(i, device, role), check=False)
            if h.status != ST_OK:
                if check:
                    raise (AuthError if h.status == ST_AUTH else StatusError)(h)
                return h.status
            self.info = parse_hello_reply(payload)[1]
            return self.info
        self.identity = identity
        nc = nonce or _random_nonce()
        h, payload = self._request(lambda i: hello_frame(i, device, role, identity, nc),
                                   check=False)
        if h.status != ST_OK:
            if check:
                raise AuthError(f"HELLO refused: {status_name(h.status)}")
            return h.status
        (ns, ps), _ = parse_hello_reply(payload)
        args = (nc, ns, role, device, identity)
        key = server_key(psk, canonical_addr(self.sock.getpeername()), ps, *args)
        if key is None:
            self.close()
            raise AuthError("the server's proof is wrong: it has neither our key "
                            "nor one bound to its address")
        self.key_bound = key != bytes(psk)
        c2s, s2c = session_keys(key, *args)
        i = self._id()
        self.send_frame(auth_frame(i, proof(key, LABEL_CLIENT, *args)))
        self.tx, self.rx = Tagger(c2s), Tagger(s2c)
        h, payload = self.wait(i, check=False)
        if h.status != ST_OK:
            if check:
                raise AuthError(f"AUTH refused: {status_name(h.status)}")
            return h.status
        self.info = parse_info(payload)
        return self.info

    # pipelined sends: each returns the request id
    def send_put(self, key, vers, pages, seals=None):
        i = self._id()
        self.send_frame(put_frame(i, key, vers, pages, seals))
        return i

    def send_get(self, key, count, vers):
        i = self._id()
        self.send_frame(get_frame(i, key, count, vers))
        return i

    def send_inval(self, kvs):
        i = self._id()
        self.send_frame(inval_frame(i, kvs))
        return i

    # blocking requests
    def put(self, key, vers, pages, seals=None, check=True):
        """Status of PUT: ST_OK, ST_FULL or ST_DRAINING; raises on others if
        check. Seals default to seal_of() of each page."""
        h, _ = self.wait(self.send_put(key, vers, pages, seals), check=False)
        if check and h.status not in (ST_OK, ST_FULL, ST_DRAINING):
            raise StatusError(h)
        return h.status

    def get_sealed(self, key, count, vers):
        """(pages, seals), or None if the server says STALE."""
        h, payload = self.wait(self.send_get(key, count, vers), check=False)
        if h.status == ST_STALE:
            return None
        if h.status != ST_OK:
            raise StatusError(h)
        return split_sealed(payload, count)

    def get(self, key, count, vers, check_seals=True):
        """The pages, or None if the server says STALE. With check_seals,
        every seal must be seal_of() of its page (what put() sends)."""
        got = self.get_sealed(key, count, vers)
        if got is None:
            return None
        pages, seals = got
        if check_seals:
            for i, (pg, s) in enumerate(zip(pages, seals)):
                if s != seal_of(key + i, vers, pg):
                    raise ProtocolError(f"page {key + i} vers {vers}: wrong seal")
        return pages

    def inval(self, kvs):
        self._request(lambda i: inval_frame(i, kvs))

    def status(self):
        return parse_info(self._request(status_frame)[1])

    def free_all(self):
        self._request(free_all_frame)

    def retain_begin(self, gen):
        self._request(lambda i: retain_begin_frame(i, gen))

    def retain(self, kvs):
        """The indices of the entries of kvs that are not stored."""
        return bitmap_bits(self._request(lambda i: retain_frame(i, kvs))[1], len(kvs))

    def retain_end(self, gen):
        """(dropped, held)"""
        return parse_retained(self._request(lambda i: retain_end_frame(i, gen))[1])

    def peer_put(self, identity, device, kvs, pages, seals=None):
        """Status of PEER_PUT (role PEER connections)."""
        return self._request(lambda i: peer_put_frame(i, identity, device, kvs, pages, seals),
                             check=False)[0].status

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
        self.send_frame(reply_frame(req.hdr, status))


class ServerConn:
    """The server side of one connection, for test servers. psks is None
    for a server without keys (--insecure), else {identity: (key, peer)}
    or {identity: key} (see load_psk_file). handshake() answers HELLO (and
    AUTH); read_frame() and send_frame()/reply() then check and add tags."""

    def __init__(self, sock, psks=None, name=""):
        import threading
        self.sock = sock
        self.name = name
        self.psks = None if psks is None else {
            k: (v if isinstance(v, tuple) else (v, False)) for k, v in psks.items()}
        self.tx = self.rx = None
        self.last_sent = None
        self.hello = None
        self.identity = ""
        # Our own request ids: far from the client's, never reused.
        self.next_id = 1 << 48
        # One thread may answer requests while another sends our own.
        self.send_lock = threading.Lock()

    def fileno(self):
        return self.sock.fileno()

    def readable(self, timeout):
        """Whether a frame (or the end of the connection) is waiting."""
        r, _, _ = select.select([self.sock], [], [], timeout)
        return bool(r)

    def recv_header(self):
        """The next header alone, checked (ProtocolError if invalid), so
        that a test server may answer a request before reading it whole.
        Untagged connections only (a tag covers header and payload)."""
        assert self.rx is None, "recv_header() on a tagged connection"
        h = unpack_header(recv_exact(self.sock, HDR_LEN))
        want = payload_len(h)
        if want < 0 or want != h.len:
            raise ProtocolError(f"invalid header {h}")
        return h

    def recv_payload(self, h):
        return recv_exact(self.sock, h.len) if h.len else b""

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    def read_frame(self, strict=True):
        """(Header, payload); ProtocolError on an invalid header or tag."""
        return read_frame(self.sock, strict=strict, rx=self.rx)

    def send_frame(self, h, payload=b""):
        """A frame with header h (len set here), tagged once authenticated."""
        self.send_bytes(frame(h, payload))

    def send_bytes(self, data, tamper=None):
        """Bytes of one whole frame, tagged once authenticated; tamper, if
        given, rewrites the tagged frame before it goes (tests of an
        on-path attacker). The last frame sent stays in last_sent."""
        data = bytes(data)
        with self.send_lock:
            if self.tx is not None:
                data += self.tx.tag(data)
            if tamper is not None:
                data = tamper(data)
            self.last_sent = data
            self.sock.sendall(data)

    def reply(self, req, status=ST_OK, payload=b"", free_pages=0, **override):
        """The reply to request header req; override replaces header fields
        (len included: set it to lie about the payload's length)."""
        if status != ST_OK:
            payload = b""
        tamper = override.pop("tamper", None)
        h = reply_header(req, status, free_pages)._replace(len=len(payload))
        self.send_bytes(pack_header(h._replace(**override)) + bytes(payload), tamper)

    def request(self, opcode, count, payload):
        """Sends a request of ours (MOVED, RETURN); returns its id."""
        i = self.next_id
        self.next_id += 1
        self.send_frame(header(opcode, id=i, count=count), payload)
        return i

    def send_moved(self, kvs, addr):
        """MOVED: the pages (key, vers) are at the peer addr now; its id."""
        return self.request(OP_MOVED, len(kvs), pack_kvs(kvs) + pack_addr(addr))

    def send_return(self, kvs, pages, seals=None):
        """RETURN: the pages themselves, back to the client; its id."""
        data = _pages(pages)
        return self.request(OP_RETURN, len(kvs),
                            pack_kvs(kvs) + pack_pages(data, _kv_seals(kvs, data, seals)))

    def reply_info(self, req, capacity, free, held, state=SERVER_NORMAL, epoch=1):
        self.reply(req, ST_OK, pack_info(capacity, free, held, state, epoch),
                   free_pages=min(free, 0xFFFFFFFF))

    def reply_pages(self, req, pages, seals, free_pages=0):
        self.reply(req, ST_OK, pack_pages(pages, seals), free_pages=min(free_pages, 0xFFFFFFFF))

    def refuse(self, req, status=ST_AUTH):
        """Answers req with status, untagged, and raises AuthError."""
        self.sock.sendall(reply_frame(req, status))
        raise AuthError(f"refused {OP_NAMES.get(req.opcode)}: {status_name(status)}")

    def handshake(self, info):
        """Reads HELLO and answers it (and AUTH) like nswapd: info is the
        packed n2l_info to send (bytes, or a callable of the Hello). Returns
        the Hello; raises AuthError (after answering AUTH) on refusal."""
        h, payload = self.read_frame()
        if h.opcode != OP_HELLO or h.flags & F_REPLY:
            self.refuse(h, ST_NOHELLO)
        hello = parse_hello(payload)
        self.hello = hello
        info_of = info if callable(info) else (lambda _hello: info)
        if self.psks is None:
            if hello.flags & HELLO_AUTH:
                self.refuse(h)
            self.sock.sendall(reply_frame(h, payload=pack_hello_reply(info=info_of(hello))))
            return hello
        ident = parse_identity(hello.identity)
        entry = self.psks.get(ident)
        if not hello.flags & HELLO_AUTH or entry is None or \
                (hello.role == ROLE_PEER and not entry[1]):
            self.refuse(h)
        key = entry[0]
        ns = _random_nonce()
        args = (hello.nonce, ns, hello.role, hello.device, ident)
        self.sock.sendall(reply_frame(h, payload=pack_hello_reply(
            nonce=ns, proof=proof(key, LABEL_SERVER, *args))))
        h, payload = self.read_frame()
        if h.opcode != OP_AUTH or h.flags & F_REPLY:
            self.refuse(h, ST_NOHELLO)
        if not hmac.compare_digest(AUTH.unpack(payload)[0], proof(key, LABEL_CLIENT, *args)):
            self.refuse(h)
        c2s, s2c = session_keys(key, *args)
        self.tx, self.rx = Tagger(s2c), Tagger(c2s)
        self.identity = ident
        self.send_frame(reply_header(h), info_of(hello))
        return hello


def put_pages(h, payload):
    """(pages, seals) of a PUT request."""
    return split_sealed(payload, h.count)


def inval_kvs(h, payload):
    """The (key, vers) pairs of an INVAL or RETAIN request."""
    return parse_kvs(payload, h.count)


def listen(addr, backlog=16):
    """A listening socket on "a.b.c.d:port" or "[v6]:port"."""
    host, port = split_addr(addr)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(backlog)
    return s


def accept(lsock):
    """The next connection, as a ServerConn."""
    sock, peer = lsock.accept()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ServerConn(sock, name=f"{peer[0]}:{peer[1]}")
