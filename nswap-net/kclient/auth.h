/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Authentication, kept apart from the data path: the handshake that opens
 * a connection, and the session that tags every frame afterwards (see
 * "Authentication" in n2l-proto.h). The data path only asks a session to
 * tag what it sends and to check what it receives.
 */
#ifndef N2L_AUTH_H
#define N2L_AUTH_H

#include "nnet.h"

/*
 * A frame's header and payload, as the pieces it is sent from or received
 * into: bytes before the pages, the pages, bytes after them.
 */
struct n2l_frame {
	struct n2l_hdr *hdr;
	const void *pre;
	u32 pre_len;
	struct bio *bio;		/* pages, or NULL */
	const void *post;
	u32 post_len;
};

/* Sends @f, followed by its tag when @srv's session tags frames. */
int n2l_frame_send(struct n2l_nsrv *srv, struct socket *sock,
		   const struct n2l_frame *f);
/* Reads the tag of @f (already received) and checks it; 0 if untagged. */
int n2l_frame_check_tag(struct n2l_nsrv *srv, struct socket *sock,
			const struct n2l_frame *f);
/*
 * Reads the payload of @f but for its pages, which are not kept: f->pre,
 * then @skip bytes of pages through @scratch, then f->post; then its tag,
 * checked over all of them.
 */
int n2l_frame_recv_skipping(struct n2l_nsrv *srv, struct socket *sock,
			    const struct n2l_frame *f, u32 skip, void *scratch,
			    u32 scratch_len);
int n2l_send_frame(struct n2l_nsrv *srv, struct socket *sock,
		   struct n2l_net_req *req);

/* Connect-time: HELLO (and AUTH), filling @info; the session starts. */
int n2l_handshake(struct n2l_nsrv *srv, struct socket *sock,
		  struct n2l_info_host *info);
void n2l_session_end(struct n2l_nsrv *srv);

/* A server's crypto, made when it is added (secure devices only). */
int n2l_session_init(struct n2l_nsrv *srv);
void n2l_session_exit(struct n2l_nsrv *srv);

#endif /* N2L_AUTH_H */
