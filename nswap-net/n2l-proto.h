/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Network RAM wire protocol, shared by the kernel client (nswap2l.ko)
 * and the page server (nswapd). Everything is little-endian and of fixed
 * size; a receiver checks every length against n2l_payload_len() before it
 * reads a byte of payload.
 *
 * A connection carries frames: a 48-byte header, then header.len bytes of
 * payload. The client sends requests and the server answers each with a
 * reply carrying the same id and opcode, N2L_F_REPLY set and a status.
 * Requests are pipelined; a server answers in the order it received them
 * on one connection, but a client must not rely on that. The server may
 * also send requests of its own (MOVED, RETURN), which the client answers
 * the same way.
 *
 * Pages are 4 KiB. A page is stored under (client id, key) with a version;
 * key is the slot number on the client's device, and the version says
 * which write of the slot the page holds, so that a read never returns
 * another write's data and a late invalidation never drops a newer page.
 *
 *  op        direction  key count vers  payload (request)     payload (reply, status OK)
 *  HELLO     c->s       -   -     -     n2l_hello             n2l_info
 *  PUT       c->s       k   n     v     n pages               -
 *  GET       c->s       k   n     v     -                     n pages
 *  INVAL     c->s       -   n     -     n x n2l_kv            -
 *  STATUS    c->s       -   -     -     -                     n2l_info
 *  FREE_ALL  c->s       -   -     -     -                     -
 *  PEER_PUT  s->s       -   n     -     n2l_peer + n x n2l_kv + n pages    -
 *  MOVED     s->c       -   n     -     n x n2l_kv + n2l_addr -
 *  RETURN    s->c       -   n     -     n x n2l_kv + n pages  -
 *
 * PUT stores pages k..k+n-1, all with version v, replacing what is stored
 * under those keys; with status FULL nothing at all is stored. GET returns
 * pages k..k+n-1 if every one is stored with version v, else status STALE
 * and no payload. INVAL drops each listed page still stored with the
 * listed version. FREE_ALL drops every page of the client (its device is
 * gone). PEER_PUT carries pages of a client from a server that shrinks to
 * a peer. MOVED tells the client that the listed pages now live on the
 * peer at n2l_addr; RETURN hands pages back. The server keeps such pages,
 * and keeps serving GETs for them, until the client's reply.
 *
 * Every reply carries in free_pages what the server can still take, so
 * that clients spread pages by free capacity without extra round trips
 * (saturating at 2^32 - 1 pages; n2l_info has the full 64 bits).
 *
 * Who sends what: HELLO, PUT, GET, INVAL, STATUS and FREE_ALL go from a
 * client (role CLIENT) to a server; PEER_PUT from a server to a peer (it
 * says HELLO with role PEER, and its client_id names nothing); MOVED and
 * RETURN from a server to the client that owns the pages. A key range
 * (key .. key + count - 1) never wraps. A peer keeps every (key, version)
 * it is given by PEER_PUT; a client's PUT replaces every version of a key.
 * A request whose header is malformed gets an INVALID reply echoing what
 * could be read, and the connection closes: the receiver of such a reply
 * cannot rely on anything but the status.
 */
#ifndef N2L_PROTO_H
#define N2L_PROTO_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <asm/byteorder.h>
#define n2l_le16_to_cpu(x)	le16_to_cpu(x)
#define n2l_le32_to_cpu(x)	le32_to_cpu(x)
#include <linux/build_bug.h>
#else
#include <endian.h>
#include <linux/types.h>
#define n2l_le16_to_cpu(x)	le16toh(x)
#define n2l_le32_to_cpu(x)	le32toh(x)
#ifndef __packed
#define __packed		__attribute__((packed))
#endif
#ifndef static_assert
#define static_assert(e, msg)	_Static_assert(e, msg)
#endif
#endif

#define N2L_MAGIC		0x504c324eU	/* "N2LP" on the wire */
#define N2L_PROTO_VERSION	1
#define N2L_PAGE_SIZE		4096U
#define N2L_MAX_PAGES		256U		/* 1 MiB per message */
#define N2L_TOKEN_LEN		32
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
	N2L_OP_MAX = N2L_OP_RETURN,
};

#define N2L_F_REPLY		0x0001

enum n2l_status {
	N2L_ST_OK = 0,
	N2L_ST_FULL = 1,	/* no room: nothing was stored */
	N2L_ST_STALE = 2,	/* a page is missing or of another version */
	N2L_ST_INVALID = 3,	/* malformed request; the connection closes */
	N2L_ST_AUTH = 4,	/* HELLO with a wrong token */
	N2L_ST_VERSION = 5,	/* protocol version not spoken here */
	N2L_ST_NOHELLO = 6,	/* a request before HELLO */
	N2L_ST_DRAINING = 7,	/* shutting down: no new pages */
	N2L_ST_MAX = N2L_ST_DRAINING,
};

enum n2l_role {
	N2L_ROLE_CLIENT = 0,
	N2L_ROLE_PEER = 1,	/* another server moving pages here */
};

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
	__le64 key;		/* first page (PUT, GET) */
	__le32 count;		/* pages or entries */
	__le32 vers;		/* version of every page (PUT, GET) */
	__le32 status;		/* replies */
	__le32 free_pages;	/* replies: what the server can still take */
	__le32 len;		/* payload bytes that follow */
	__le32 reserved;	/* zero */
} __packed;

struct n2l_hello {
	__le64 client_id;	/* stable across reconnects of one device */
	__le32 role;		/* enum n2l_role */
	__le32 reserved;
	__u8 token[N2L_TOKEN_LEN];	/* shared secret; zeroes if none */
} __packed;

struct n2l_info {
	__le64 capacity_pages;	/* what the server donates now */
	__le64 free_pages;
	__le64 held_pages;	/* pages of the asking client */
	__le32 state;		/* enum n2l_server_state */
	__le32 reserved;
} __packed;

struct n2l_kv {
	__le64 key;
	__le32 vers;
	__le32 reserved;
} __packed;

struct n2l_peer {
	__le64 client_id;	/* whose pages these are */
} __packed;

struct n2l_addr {
	char addr[N2L_ADDR_LEN];	/* "a.b.c.d:port" or "[v6]:port", NUL-padded */
} __packed;

static_assert(sizeof(struct n2l_hdr) == 48, "n2l_hdr is 48 bytes on the wire");
static_assert(sizeof(struct n2l_hello) == 48, "n2l_hello is 48 bytes");
static_assert(sizeof(struct n2l_info) == 32, "n2l_info is 32 bytes");
static_assert(sizeof(struct n2l_kv) == 16, "n2l_kv is 16 bytes");
static_assert(sizeof(struct n2l_peer) == 8, "n2l_peer is 8 bytes");
static_assert(sizeof(struct n2l_addr) == N2L_ADDR_LEN, "n2l_addr is 64 bytes");

/*
 * The exact payload length a frame with this header must carry, or -1 if
 * the header itself is invalid (magic, version, opcode, flags, count).
 * Both sides call it before reading any payload.
 */
static inline long n2l_payload_len(const struct n2l_hdr *h)
{
	unsigned int op = h->opcode;
	unsigned int count = n2l_le32_to_cpu(h->count);
	int reply = n2l_le16_to_cpu(h->flags) & N2L_F_REPLY;
	unsigned long pages = (unsigned long)count * N2L_PAGE_SIZE;
	unsigned long kvs = (unsigned long)count * sizeof(struct n2l_kv);

	if (n2l_le32_to_cpu(h->magic) != N2L_MAGIC ||
	    h->version != N2L_PROTO_VERSION ||
	    (n2l_le16_to_cpu(h->flags) & ~N2L_F_REPLY) ||
	    op < N2L_OP_HELLO || op > N2L_OP_MAX ||
	    count > N2L_MAX_PAGES)
		return -1;
	if (reply && n2l_le32_to_cpu(h->status) > N2L_ST_MAX)
		return -1;
	/* A failed request's reply never has a payload. */
	if (reply && n2l_le32_to_cpu(h->status) != N2L_ST_OK)
		return 0;

	switch (op) {
	case N2L_OP_HELLO:
		return reply ? sizeof(struct n2l_info) : sizeof(struct n2l_hello);
	case N2L_OP_STATUS:
		return reply ? sizeof(struct n2l_info) : 0;
	case N2L_OP_PUT:
		if (!count)
			return -1;
		return reply ? 0 : pages;
	case N2L_OP_GET:
		if (!count)
			return -1;
		return reply ? pages : 0;
	case N2L_OP_INVAL:
		if (!count)
			return -1;
		return reply ? 0 : kvs;
	case N2L_OP_FREE_ALL:
		return 0;
	case N2L_OP_PEER_PUT:
		if (!count)
			return -1;
		return reply ? 0 : sizeof(struct n2l_peer) + kvs + pages;
	case N2L_OP_MOVED:
		if (!count)
			return -1;
		return reply ? 0 : kvs + sizeof(struct n2l_addr);
	case N2L_OP_RETURN:
		if (!count)
			return -1;
		return reply ? 0 : kvs + pages;
	}
	return -1;
}

#endif /* N2L_PROTO_H */
