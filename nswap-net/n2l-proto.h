/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Network RAM wire protocol, version 3, shared by the kernel client
 * (nswap2l.ko), the page server (nswapd) and the test tools. Everything is
 * little-endian and of fixed size; a receiver checks every header with
 * n2l_payload_len() before it reads a byte of payload.
 *
 * Frames
 * ------
 * A connection carries frames: a 48-byte header, header.len bytes of
 * payload and, once the connection is authenticated, a 16-byte tag. The
 * client sends requests; the server answers each with a reply carrying the
 * same id, opcode, key, count and vers, N2L_F_REPLY set, a status and, in
 * free_pages, what it can still take. Requests are pipelined; a server
 * answers in the order it received them on one connection, but a client
 * must not rely on that. The server also sends requests of its own (MOVED,
 * RETURN), which the client answers the same way, on the same connection;
 * an answer to a request of a connection that is gone is never sent.
 *
 * Pages, versions, seals
 * ----------------------
 * Pages are 4 KiB. A client's pages live in its *area* on the server: the
 * area is named by the client's authenticated identity and, within it, by
 * the 64-bit device id of HELLO (one per nswap2l device instance). A page
 * is stored under (key, vers): key is the slot on the client's device,
 * vers which write of the slot it holds (48 bits, never reused by one
 * device). Several versions of one key may be stored at once: a PUT adds
 * (key, vers) and replaces only a page of the same (key, vers); only INVAL
 * (and FREE_ALL, RETAIN_END, expiry) ever drop pages. So a PUT that
 * arrives late never replaces newer data, and a write whose reply was lost
 * never destroys the data it was replacing.
 *
 * Every page travels with a 16-byte seal that the server stores and
 * returns as it got it: the client's proof that the page is the one it
 * wrote for that key and version (a GCM tag when the client encrypts,
 * else a CRC32C; see the client's documentation). In a payload the pages
 * come first, then their seals, in the same order.
 *
 *  op          dir   key   count vers  request payload            OK reply payload
 *  HELLO       c->s  -     -     -     n2l_hello                  n2l_hello_reply
 *  AUTH        c->s  -     -     -     n2l_auth                   n2l_info
 *  PUT         c->s  k     n     v     n pages + n seals          -
 *  GET         c->s  k     n     v     -                          n pages + n seals
 *  INVAL       c->s  -     n     -     n x n2l_kv                 -
 *  STATUS      c->s  -     -     -     -                          n2l_info
 *  FREE_ALL    c->s  -     -     -     -                          -
 *  RETAIN_BEGIN c->s g     -     -     -                          -
 *  RETAIN      c->s  -     n     -     n x n2l_kv                 bitmap of n bits
 *  RETAIN_END  c->s  g     -     -     -                          n2l_retained
 *  PEER_PUT    s->s  -     n     -     n2l_peer + n x n2l_kv + n pages + n seals   -
 *  MOVED       s->c  -     n     -     n x n2l_kv + n2l_addr      -
 *  RETURN      s->c  -     n     -     n x n2l_kv + n pages + n seals              -
 *
 * PUT stores pages k..k+n-1, all of version v; with status FULL nothing at
 * all is stored. GET returns pages k..k+n-1 if every one is stored with
 * version v, else STALE and no payload. INVAL drops each listed (key,
 * vers) that is stored. FREE_ALL drops the whole area (the device is
 * gone). A key range (key .. key + count - 1) never wraps.
 *
 * Reconciliation: after every connect, the client makes the server hold
 * exactly what its slot map points at. RETAIN_BEGIN starts generation g of
 * the area; RETAIN marks each listed page as wanted in the current
 * generation and answers with a bitmap whose bit i (byte i / 8, bit i % 8)
 * is set when entry i is not stored; RETAIN_END g drops every claimed page
 * of the area not marked in generation g (if g is still current), and
 * answers how many it dropped and how many it holds. A PUT marks what it
 * stores in the current generation. RETAIN of a page outside a
 * reconciliation claims it (see PEER_PUT). A client talks to a server on
 * one connection at a time and reconciles each new one: RETAIN_BEGIN
 * closes the area's other connections, unread, so that a PUT left on an
 * abandoned one never gets the new generation's mark.
 *
 * Giving memory back: a server that must shrink moves a client's pages to
 * a peer (PEER_PUT to the peer, then MOVED to the client) or hands them
 * back (RETURN). It keeps them, and serves GETs of them, until the client
 * answers OK, and then drops those of them not stored again since (a PUT
 * of the same key and version meanwhile is a copy the OK does not cover:
 * the client may have made it from another server's after deciding on
 * its answer); FULL means "not now: keep them", and the server asks again
 * later, by RETURN if the client refused a MOVED. A peer stores PEER_PUT
 * pages *unclaimed*: they never replace a page of the area, GETs and INVALs
 * see them, a reconciliation keeps them, and they become the client's
 * (claimed) when it RETAINs them; until then they count against the
 * quota of the peer that sent them and expire after the receiving
 * server's unclaimed_timeout_s. A client accepts MOVED only to a server of its own
 * that it is connected to, and answers OK only once the moved pages read
 * back correctly from there, or once it chose to drop them; delivered
 * twice, a MOVED or RETURN changes nothing the first did not.
 *
 * Authentication
 * --------------
 * A server with pre-shared keys authenticates every connection before
 * anything else: HELLO names an identity and carries the client's nonce
 * Nc; the server answers with its nonce Ns and its proof Ps (the info of
 * n2l_hello_reply left zero); the client checks Ps and sends AUTH with its
 * proof Pc; the server checks Pc and answers AUTH with n2l_info. Proofs
 * and session keys are HMAC-SHA256 under the identity's 32-byte key over
 * an n2l_transcript (label, Nc, Ns, role, device, identity):
 *
 *   Ps   = HMAC(psk, transcript("n2l2-server"))
 *   Pc   = HMAC(psk, transcript("n2l2-client"))
 *   Ks   = HMAC(psk, transcript("n2l2-session"))
 *   Kc2s = HMAC(Ks, "n2l2-c2s"), Ks2c = HMAC(Ks, "n2l2-s2c")
 *
 * (a label is 16 bytes, NUL-padded). No secret crosses the wire. The
 * server's OK answer to AUTH is the first tagged frame server to client,
 * and the client's next frame the first client to server: from there on,
 * every frame in either direction is followed by a tag, ChaCha20-Poly1305
 * (the AEAD of RFC 8439) under the direction's key with no plaintext, the
 * frame's header and payload as associated data, and as nonce 4 zero bytes
 * and the frame's sequence number in that direction (little-endian 64
 * bits), counted from 0. A
 * tag that does not verify, and so any forged, replayed, reordered or
 * dropped frame, ends the connection. A refused HELLO or AUTH is answered
 * with status AUTH, untagged, and the connection closes.
 *
 * Keys bound to a server. The identity's key may stay with the client, and
 * each server get a key of its own for the identity instead:
 *
 *   Kb   = HMAC(psk, n2l_bound_name("n2l2-server-key", name))
 *
 * where name is the server's address as the connecting side names it,
 * canonical: "a.b.c.d:port", or "[v6]:port" with v6 as RFC 5952 writes
 * it. The server does not know which of the two it holds; the connecting
 * side (a client, or a server connecting to its peer) checks Ps under Kb
 * first, then under psk, and goes on (Pc, Ks) under the key that matched.
 * So a server that holds only its own Kb proves which server it is: it
 * cannot answer for another name, and a donor cannot pose as another of
 * the client's donors and defeat replica diversity. That holds for every
 * server of an identity once none of them holds psk itself.
 *
 * A server without keys (started --insecure) answers a HELLO without
 * N2L_HELLO_AUTH at once, with the info of n2l_hello_reply filled in and
 * the challenge left zero, and never tags frames; it refuses a HELLO that
 * asks to authenticate, so a client that wants authentication never talks
 * to it. A server with keys refuses a HELLO that does not ask.
 *
 * Who sends what: clients (role CLIENT) send HELLO, AUTH, PUT, GET, INVAL,
 * STATUS, FREE_ALL and the RETAIN family; servers connect to peers with
 * role PEER and send HELLO, AUTH, STATUS and PEER_PUT, and a server
 * accepts role PEER only from identities it knows as peers. MOVED and
 * RETURN go from a server to the client whose pages they name. A request
 * whose header is malformed gets an INVALID reply echoing what could be
 * read, and the connection closes: the receiver of such a reply cannot
 * rely on anything but the status.
 */
#ifndef N2L_PROTO_H
#define N2L_PROTO_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <asm/byteorder.h>
#define n2l_le16_to_cpu(x)	le16_to_cpu(x)
#define n2l_le32_to_cpu(x)	le32_to_cpu(x)
#define n2l_le64_to_cpu(x)	le64_to_cpu(x)
#include <linux/build_bug.h>
#else
#include <endian.h>
#include <linux/types.h>
#define n2l_le16_to_cpu(x)	le16toh(x)
#define n2l_le32_to_cpu(x)	le32toh(x)
#define n2l_le64_to_cpu(x)	le64toh(x)
#ifndef __packed
#define __packed		__attribute__((packed))
#endif
#ifndef static_assert
#define static_assert(e, msg)	_Static_assert(e, msg)
#endif
#endif

#define N2L_MAGIC		0x504c324eU	/* "N2LP" on the wire */
#define N2L_PROTO_VERSION	3	/* 2 tagged frames with AES-256-GCM */
#define N2L_PAGE_SIZE		4096U
#define N2L_SEAL_LEN		16U
#define N2L_TAG_LEN		16U		/* frame tag, authenticated sessions */
#define N2L_MAX_PAGES		256U		/* 1 MiB of pages per frame */
#define N2L_MAX_KVS		4096U		/* entries per INVAL or RETAIN */
#define N2L_VERS_BITS		48
#define N2L_VERS_MAX		((1ULL << N2L_VERS_BITS) - 1)
#define N2L_ID_LEN		64		/* identities, NUL-padded */
#define N2L_NONCE_LEN		32
#define N2L_MAC_LEN		32		/* HMAC-SHA256 proofs and keys */
#define N2L_PSK_LEN		32
#define N2L_ADDR_LEN		64

enum n2l_opcode {
	N2L_OP_HELLO = 1,
	N2L_OP_PUT = 2,
	N2L_OP_GET = 3,
	N2L_OP_INVAL = 4,
	N2L_OP_STATUS = 5,
	N2L_OP_FREE_ALL = 6,
	N2L_OP_PEER_PUT = 7,
	N2L_OP_MOVED = 8,
	N2L_OP_RETURN = 9,
	N2L_OP_AUTH = 10,
	N2L_OP_RETAIN_BEGIN = 11,
	N2L_OP_RETAIN = 12,
	N2L_OP_RETAIN_END = 13,
	N2L_OP_MAX = N2L_OP_RETAIN_END,
};

#define N2L_F_REPLY		0x0001

enum n2l_status {
	N2L_ST_OK = 0,
	N2L_ST_FULL = 1,	/* no room, or not now: nothing was done */
	N2L_ST_STALE = 2,	/* a page is missing or of another version */
	N2L_ST_INVALID = 3,	/* malformed request; the connection closes */
	N2L_ST_AUTH = 4,	/* authentication refused; the connection closes */
	N2L_ST_VERSION = 5,	/* protocol version not spoken here */
	N2L_ST_NOHELLO = 6,	/* a request before authentication */
	N2L_ST_DRAINING = 7,	/* shutting down: no new pages */
	N2L_ST_MAX = N2L_ST_DRAINING,
};

enum n2l_role {
	N2L_ROLE_CLIENT = 0,
	N2L_ROLE_PEER = 1,	/* another server moving pages here */
};

#define N2L_HELLO_AUTH		0x0001	/* the client authenticates */

enum n2l_server_state {
	N2L_SERVER_NORMAL = 0,
	N2L_SERVER_DRAINING = 1,
};

struct n2l_hdr {
	__le32 magic;
	__u8 version;
	__u8 opcode;
	__le16 flags;
	__le64 id;		/* chosen by the sender of the request */
	__le64 key;		/* first page (PUT, GET); generation (RETAIN_*) */
	__le64 vers;		/* version of every page (PUT, GET) */
	__le32 count;		/* pages or entries */
	__le32 status;		/* replies; zero in requests */
	__le32 free_pages;	/* replies: what the server can still take */
	__le32 len;		/* payload bytes that follow (the tag excluded) */
} __packed;

struct n2l_hello {
	__le32 role;		/* enum n2l_role */
	__le32 flags;		/* N2L_HELLO_AUTH */
	__le64 device;		/* the device's area within the identity */
	__u8 nonce[N2L_NONCE_LEN];	/* Nc; zeroes without N2L_HELLO_AUTH */
	char identity[N2L_ID_LEN];	/* NUL-padded; empty without auth */
} __packed;

struct n2l_challenge {
	__u8 nonce[N2L_NONCE_LEN];	/* Ns */
	__u8 proof[N2L_MAC_LEN];	/* Ps */
} __packed;

struct n2l_info {
	__le64 epoch;		/* random at server start, never 0 */
	__le64 capacity_pages;	/* what the server donates now */
	__le64 free_pages;	/* what this client may still store */
	__le64 held_pages;	/* pages of the asking client's area */
	__le32 state;		/* enum n2l_server_state */
	__le32 reserved;	/* zero */
} __packed;

/* HELLO's answer: one of the two, the other zero (see Authentication). */
struct n2l_hello_reply {
	struct n2l_challenge challenge;
	struct n2l_info info;
} __packed;

struct n2l_auth {
	__u8 proof[N2L_MAC_LEN];	/* Pc */
} __packed;

/* What proofs and session keys are computed over (not sent). */
struct n2l_transcript {
	char label[16];			/* "n2l2-server" etc., NUL-padded */
	__u8 client_nonce[N2L_NONCE_LEN];
	__u8 server_nonce[N2L_NONCE_LEN];
	__le32 role;
	__le32 zero;
	__le64 device;
	char identity[N2L_ID_LEN];
} __packed;

/* What a key bound to a server is computed over (not sent). */
struct n2l_bound_name {
	char label[16];			/* "n2l2-server-key", NUL-padded */
	char name[N2L_ADDR_LEN];	/* the server's address, NUL-padded */
} __packed;

struct n2l_kv {
	__le64 key;
	__le64 vers;
} __packed;

struct n2l_retained {
	__le64 dropped;		/* pages RETAIN_END dropped */
	__le64 held;		/* pages of the area after it */
} __packed;

struct n2l_peer {
	char identity[N2L_ID_LEN];	/* whose pages these are */
	__le64 device;
} __packed;

struct n2l_addr {
	char addr[N2L_ADDR_LEN];	/* "a.b.c.d:port" or "[v6]:port", NUL-padded */
} __packed;

static_assert(sizeof(struct n2l_hdr) == 48, "n2l_hdr is 48 bytes on the wire");
static_assert(sizeof(struct n2l_hello) == 112, "n2l_hello is 112 bytes");
static_assert(sizeof(struct n2l_challenge) == 64, "n2l_challenge is 64 bytes");
static_assert(sizeof(struct n2l_hello_reply) == 104, "n2l_hello_reply is 104 bytes");
static_assert(sizeof(struct n2l_auth) == 32, "n2l_auth is 32 bytes");
static_assert(sizeof(struct n2l_transcript) == 160, "n2l_transcript is 160 bytes");
static_assert(sizeof(struct n2l_info) == 40, "n2l_info is 40 bytes");
static_assert(sizeof(struct n2l_bound_name) == 80, "n2l_bound_name is 80 bytes");
static_assert(sizeof(struct n2l_kv) == 16, "n2l_kv is 16 bytes");
static_assert(sizeof(struct n2l_retained) == 16, "n2l_retained is 16 bytes");
static_assert(sizeof(struct n2l_peer) == 72, "n2l_peer is 72 bytes");
static_assert(sizeof(struct n2l_addr) == N2L_ADDR_LEN, "n2l_addr is 64 bytes");

#define N2L_PAGE_BYTES(n)	((unsigned long)(n) * (N2L_PAGE_SIZE + N2L_SEAL_LEN))
#define N2L_KV_BYTES(n)		((unsigned long)(n) * sizeof(struct n2l_kv))
/* The largest payload any frame may carry (PEER_PUT of N2L_MAX_PAGES). */
#define N2L_MAX_PAYLOAD		(sizeof(struct n2l_peer) + \
				 N2L_KV_BYTES(N2L_MAX_PAGES) + \
				 N2L_PAGE_BYTES(N2L_MAX_PAGES))

/* The most entries a frame of opcode @op may carry. */
static inline unsigned int n2l_max_count(unsigned int op)
{
	return op == N2L_OP_INVAL || op == N2L_OP_RETAIN ? N2L_MAX_KVS :
							   N2L_MAX_PAGES;
}

/* Whether a request of opcode @op names count >= 1 entries or pages. */
static inline int n2l_op_counts(unsigned int op)
{
	switch (op) {
	case N2L_OP_PUT: case N2L_OP_GET: case N2L_OP_INVAL:
	case N2L_OP_RETAIN: case N2L_OP_PEER_PUT: case N2L_OP_MOVED:
	case N2L_OP_RETURN:
		return 1;
	}
	return 0;
}

/*
 * The exact payload length a frame with this header must carry, or -1 if
 * the header itself is invalid (magic, version, opcode, flags, count,
 * status, vers, or a field that must be zero). Both sides call it before
 * reading any payload, and check that header.len is exactly this.
 */
static inline long n2l_payload_len(const struct n2l_hdr *h)
{
	unsigned int op = h->opcode;
	unsigned int count = n2l_le32_to_cpu(h->count);
	unsigned int flags = n2l_le16_to_cpu(h->flags);
	unsigned int status = n2l_le32_to_cpu(h->status);
	int reply = flags & N2L_F_REPLY;

	if (n2l_le32_to_cpu(h->magic) != N2L_MAGIC ||
	    h->version != N2L_PROTO_VERSION || (flags & ~N2L_F_REPLY) ||
	    op < N2L_OP_HELLO || op > N2L_OP_MAX ||
	    count > n2l_max_count(op) || (n2l_op_counts(op) && !count) ||
	    (!n2l_op_counts(op) && count) ||
	    n2l_le64_to_cpu(h->vers) > N2L_VERS_MAX)
		return -1;
	if (!reply && (status || h->free_pages))
		return -1;
	if (reply && status > N2L_ST_MAX)
		return -1;
	/* A failed request's reply never has a payload. */
	if (reply && status != N2L_ST_OK)
		return 0;

	switch (op) {
	case N2L_OP_HELLO:
		return reply ? sizeof(struct n2l_hello_reply) : sizeof(struct n2l_hello);
	case N2L_OP_AUTH:
		return reply ? sizeof(struct n2l_info) : sizeof(struct n2l_auth);
	case N2L_OP_STATUS:
		return reply ? sizeof(struct n2l_info) : 0;
	case N2L_OP_PUT:
		return reply ? 0 : N2L_PAGE_BYTES(count);
	case N2L_OP_GET:
		return reply ? N2L_PAGE_BYTES(count) : 0;
	case N2L_OP_INVAL:
		return reply ? 0 : N2L_KV_BYTES(count);
	case N2L_OP_FREE_ALL:
	case N2L_OP_RETAIN_BEGIN:
		return 0;
	case N2L_OP_RETAIN:
		return reply ? (count + 7) / 8 : N2L_KV_BYTES(count);
	case N2L_OP_RETAIN_END:
		return reply ? sizeof(struct n2l_retained) : 0;
	case N2L_OP_PEER_PUT:
		return reply ? 0 : sizeof(struct n2l_peer) + N2L_KV_BYTES(count) +
				   N2L_PAGE_BYTES(count);
	case N2L_OP_MOVED:
		return reply ? 0 : N2L_KV_BYTES(count) + sizeof(struct n2l_addr);
	case N2L_OP_RETURN:
		return reply ? 0 : N2L_KV_BYTES(count) + N2L_PAGE_BYTES(count);
	}
	return -1;
}

#endif /* N2L_PROTO_H */
