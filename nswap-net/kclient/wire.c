// SPDX-License-Identifier: GPL-2.0-only
/*
 * The wire: server addresses, and frames to and from a kernel socket.
 * Every call blocks until all is transferred or the socket fails.
 */
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/sched/mm.h>
#include <net/sock.h>

#include "nnet.h"

/*
 * Addresses: "a.b.c.d:port" or "[v6]:port", literal only (no DNS here).
 * Servers are told apart by the address parsed, and named in one
 * canonical spelling, so "010.1.0.5:07070" is the server 10.1.0.5:7070.
 */

static int parse_port(const char *s, __be16 *port)
{
	u16 p;

	if (kstrtou16(s, 10, &p) || !p)
		return -EINVAL;
	*port = htons(p);
	return 0;
}

/* in4_pton() takes octal-looking octets as decimal; we take only digits. */
static bool ipv4_chars(const char *s, const char *end)
{
	for (; s < end; s++)
		if (!isdigit(*s) && *s != '.')
			return false;
	return true;
}

int n2l_parse_addr(const char *name, struct sockaddr_storage *ss, int *len)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	const char *end, *colon;

	memset(ss, 0, sizeof(*ss));
	if (!name || strlen(name) >= N2L_ADDR_LEN)
		return -EINVAL;
	if (name[0] == '[') {
		colon = strchr(name, ']');
		if (!colon || colon[1] != ':' ||
		    !in6_pton(name + 1, colon - name - 1, s6->sin6_addr.s6_addr,
			      -1, &end) || end != colon)
			return -EINVAL;
		s6->sin6_family = AF_INET6;
		*len = sizeof(*s6);
		return parse_port(colon + 2, &s6->sin6_port);
	}
	colon = strrchr(name, ':');
	if (!colon || !ipv4_chars(name, colon) ||
	    !in4_pton(name, colon - name, (u8 *)&s4->sin_addr.s_addr, -1, &end) ||
	    end != colon)
		return -EINVAL;
	s4->sin_family = AF_INET;
	*len = sizeof(*s4);
	return parse_port(colon + 1, &s4->sin_port);
}

void n2l_format_addr(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	snprintf(buf, len, "%pISpc", ss);
}

/*----------------------------------------------------------------*/
/* Socket I/O. */

/*
 * Like nbd's sock_xmit(): the socket may take from the emergency reserves
 * (PF_MEMALLOC) while it carries pages that reclaim is waiting for.
 */
static int wire_xfer(struct socket *sock, struct msghdr *msg, bool send)
{
	unsigned int noreclaim = memalloc_noreclaim_save();
	int r = 0;

	while (msg_data_left(msg)) {
		r = send ? sock_sendmsg(sock, msg) :
			   sock_recvmsg(sock, msg, MSG_WAITALL);
		if (r <= 0) {
			r = r ? r : -ECONNRESET;
			break;
		}
		r = 0;
	}
	memalloc_noreclaim_restore(noreclaim);
	return r;
}

int n2l_wire_buf(struct socket *sock, void *buf, size_t len, bool send,
		 bool more)
{
	struct kvec kv = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_flags = MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};

	iov_iter_kvec(&msg.msg_iter, send ? ITER_SOURCE : ITER_DEST, &kv, 1, len);
	return wire_xfer(sock, &msg, send);
}

/*
 * The data of @bio, segment by segment, straight from or into its pages.
 * A send holds back a partial segment only while more of the frame
 * follows: the last one goes out at once, or the frame's tail would wait
 * for an ACK (a round trip) before it left.
 */
int n2l_wire_bio(struct socket *sock, struct bio *bio, bool send, bool more)
{
	struct bvec_iter it;
	struct bio_vec bv;
	int r;

	bio_for_each_segment(bv, bio, it) {
		bool last = it.bi_size == bv.bv_len && !more;
		struct msghdr msg = {
			.msg_flags = MSG_NOSIGNAL | (last ? 0 : MSG_MORE),
		};

		iov_iter_bvec(&msg.msg_iter, send ? ITER_SOURCE : ITER_DEST,
			      &bv, 1, bv.bv_len);
		r = wire_xfer(sock, &msg, send);
		if (r)
			return r;
	}
	return 0;
}

int n2l_wire_skip(struct socket *sock, size_t len)
{
	static char sink[512];	/* contents never read */
	int r;

	while (len) {
		size_t n = min(len, sizeof(sink));

		r = n2l_wire_buf(sock, sink, n, false, false);
		if (r)
			return r;
		len -= n;
	}
	return 0;
}

void n2l_fill_hdr(struct n2l_hdr *h, const struct n2l_net_req *req, u32 len)
{
	bool reply = req->flags & N2L_F_REPLY;

	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_le32(N2L_MAGIC);
	h->version = N2L_PROTO_VERSION;
	h->opcode = req->op;
	h->flags = cpu_to_le16(req->flags);
	h->id = cpu_to_le64(req->id);
	h->key = cpu_to_le64(req->key);
	h->vers = cpu_to_le64(req->vers);
	h->count = cpu_to_le32(req->count);
	h->status = cpu_to_le32(reply ? req->status : 0);
	h->len = cpu_to_le32(len);
}
