// SPDX-License-Identifier: GPL-2.0-only
/*
 * Whole frames out: a request (or our answer to the server) as header,
 * payload and, in an authenticated session, tag.
 */
#include "auth.h"

/* The payload of @req as it goes on the wire: pages and seals, or a buffer. */
static u32 req_frame(const struct n2l_net_req *req, struct n2l_frame *f)
{
	if (n2l_is_put(req)) {
		f->bio = req->bio;
		f->post = req->seals;
		f->post_len = req->count * N2L_SEAL_LEN;
		return N2L_PAGE_BYTES(req->count);
	}
	f->pre = req->buf;
	f->pre_len = req->buf_len;
	return req->buf_len;
}

int n2l_send_frame(struct n2l_nsrv *srv, struct socket *sock,
		   struct n2l_net_req *req)
{
	struct n2l_hdr h;
	struct n2l_frame f = { .hdr = &h };

	n2l_fill_hdr(&h, req, req_frame(req, &f));
	return n2l_frame_send(srv, sock, &f);
}
