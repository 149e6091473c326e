/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The module's one place for differences between kernels (Debian's 6.1
 * and 6.12 are tested): each is a helper here, so that the code itself
 * reads the same on every kernel. Features are tested where the kernel
 * defines them, not by version, which distributions' backports blur.
 */
#ifndef N2L_KCOMPAT_H
#define N2L_KCOMPAT_H

#include <linux/bvec.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/uio.h>

/*
 * Sends @bv's page by reference, not by copy; bytes sent or -errno. Safe
 * for pages that change once their request completes: a request completes
 * on the server's answer, so the bytes were received by then, and a
 * retransmission of them is dropped as a duplicate. 6.5 replaced
 * ->sendpage with MSG_SPLICE_PAGES.
 */
static inline int n2l_sock_send_page(struct socket *sock, struct bio_vec *bv,
				     int flags)
{
#ifdef MSG_SPLICE_PAGES	/* 6.5 */
	struct msghdr msg = { .msg_flags = flags | MSG_SPLICE_PAGES };

	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, bv, 1, bv->bv_len);
	return sock_sendmsg(sock, &msg);
#else
	if (flags & MSG_MORE)
		flags |= MSG_SENDPAGE_NOTLAST;
	return kernel_sendpage(sock, bv->bv_page, bv->bv_offset, bv->bv_len,
			       flags);
#endif
}

#endif /* N2L_KCOMPAT_H */
