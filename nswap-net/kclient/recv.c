// SPDX-License-Identifier: GPL-2.0-only
/*
 * Frames in. A reply is taken only for a request that is on the wire and
 * matches it in every field; its payload goes where the request says, and
 * is used only once the frame's tag (authenticated sessions) and the
 * pages' seals have been checked. A server's own requests (MOVED, RETURN)
 * are read whole into memory made for them, and handed to the server's
 * event work; a RETURN there are no pages for is refused. Nothing here
 * waits for memory: this thread completes every reply of its server.
 */
#include <linux/sched/mm.h>

#include "auth.h"

static int protocol_error(struct n2l_nsrv *srv, const char *what)
{
	atomic64_inc(&srv->stats.protocol_errors);
	pr_err_ratelimited("nswap2l: %s: server %s: protocol error: %s; dropping the connection\n",
			   srv->net->devname, srv->name, what);
	return -EPROTO;
}

/* One more reply time into the server's mean (only the receiver writes). */
static void note_latency(struct n2l_nsrv *srv, struct n2l_net_req *req)
{
	unsigned int us = min(jiffies_to_usecs(jiffies - READ_ONCE(req->sent_at)),
			      INT_MAX / 2U);
	int mean = atomic_read(&srv->latency_us);

	/* The first reply is the mean, as TCP seeds its SRTT (RFC 6298). */
	if (!srv->latency_seeded) {
		srv->latency_seeded = true;
		mean = us;
	}
	atomic_set(&srv->latency_us, mean - mean / 8 + (int)us / 8);
}

void n2l_note_info(struct n2l_nsrv *srv, const struct n2l_info *info)
{
	struct n2l_info_host h;

	if (n2l_parse_info(info, &h))
		return;
	WRITE_ONCE(srv->capacity, h.capacity);
	WRITE_ONCE(srv->server_held, h.held);
	atomic64_set(&srv->free_reported, h.free);
}

/* The request @h answers, marked as being received; or why there is none. */
static struct n2l_net_req *__reply_to(struct n2l_nsrv *srv,
				      const struct n2l_hdr *h, u32 len,
				      const char **why)
{
	u64 id = le64_to_cpu(h->id);
	struct n2l_net_req *req = srv->tags[id & (N2L_TAGS - 1)];
	bool ok = le32_to_cpu(h->status) == N2L_ST_OK;

	if (!req || req->id != id || (req->busy & N2L_BUSY_RECV) ||
	    (req->state != N2L_REQ_SENDING && req->state != N2L_REQ_SENT)) {
		*why = "reply to no request";
		return NULL;
	}
	*why = n2l_check_reply(h, req->op, req->key, req->count, req->vers);
	if (!*why && ok && len && req->op != N2L_OP_GET &&
	    (!req->reply_buf || len != req->reply_len))
		*why = "reply of a length its request does not take";
	if (*why)
		return NULL;
	req->busy |= N2L_BUSY_RECV;
	req->state = N2L_REQ_RECEIVING;
	return req;
}

/* The payload of an OK reply, into the request's places; the frame's tag. */
static int receive_payload(struct n2l_nsrv *srv, struct socket *sock,
			   struct n2l_net_req *req, struct n2l_frame *f, u32 len)
{
	int r = 0;

	if (len && req->op == N2L_OP_GET) {
		f->bio = req->bio;
		f->post = srv->rx_seals;
		f->post_len = req->count * N2L_SEAL_LEN;
		r = n2l_wire_bio(sock, req->bio, false, false);
		if (!r)
			r = n2l_wire_buf(sock, srv->rx_seals, f->post_len, false,
					 false);
	} else if (len) {
		f->pre = req->reply_buf;
		f->pre_len = len;
		r = n2l_wire_buf(sock, req->reply_buf, len, false, false);
	}
	return r ?: n2l_frame_check_tag(srv, sock, f);
}

/* The reply is in: complete its request, unless the sender still has it. */
static void reply_done(struct n2l_nsrv *srv, struct n2l_net_req *req,
		       int status)
{
	bool complete;

	spin_lock_irq(&srv->lock);
	req->busy &= ~N2L_BUSY_RECV;
	req->status = status;
	complete = !(req->busy & N2L_BUSY_SEND);
	if (complete) {
		srv->tags[req->id & (N2L_TAGS - 1)] = NULL;
		srv->inflight--;
	} else {
		req->state = N2L_REQ_ANSWERED;
	}
	spin_unlock_irq(&srv->lock);
	if (complete)
		n2l_req_end(req, status);
	/* A tag is free: more may go. */
	queue_work(srv->net->send_wq, &srv->send_work);
}

static int receive_reply(struct n2l_nsrv *srv, struct socket *sock,
			 struct n2l_hdr *h, u32 len)
{
	struct n2l_frame f = { .hdr = h };
	int status = le32_to_cpu(h->status);
	struct n2l_net_req *req;
	const char *why;
	int r;

	spin_lock_irq(&srv->lock);
	req = __reply_to(srv, h, len, &why);
	spin_unlock_irq(&srv->lock);
	if (!req)
		return protocol_error(srv, why);

	r = receive_payload(srv, sock, req, &f, len);
	if (r == -EPROTO)
		protocol_error(srv, "frame tag does not verify");
	if (!r) {
		atomic64_set(&srv->free_reported, le32_to_cpu(h->free_pages));
		note_latency(srv, req);
		if (n2l_is_put(req) &&
		    (status == N2L_ST_FULL || status == N2L_ST_DRAINING))
			atomic64_inc(&srv->stats.full);
	}
	if (!r && status == N2L_ST_OK && req->op == N2L_OP_GET &&
	    n2l_seal_check(srv->net, req->bio, req->key, req->count, req->vers,
			   srv->rx_seals, NULL)) {
		atomic64_inc(&srv->stats.bad_seals);
		status = N2L_NET_BADSEAL;
	}
	reply_done(srv, req, r ? N2L_NET_CONN_LOST : status);
	return r;
}

/*----------------------------------------------------------------*/
/* Requests from the server. */

/*
 * Their memory: each server has N2L_SRVOP_SLOTS requests' worth, made
 * when it is added; a RETURN's pages come from the page allocator if it
 * has them without waiting, else from the device's reserve, else there
 * are none and the RETURN is refused (FULL): the server keeps the pages
 * and asks again later. The receive thread completes every reply of its
 * server: it must never wait for memory.
 *
 * A request's buffer (kvs): the wire entries, then what follows them on
 * the wire (MOVED: the address; RETURN: the seals, after the pages, which
 * have their own), then the entries in host byte order.
 */
static size_t srvop_tail_len(u8 op, u32 count)
{
	return op == N2L_OP_MOVED ? sizeof(struct n2l_addr) : count * N2L_SEAL_LEN;
}

static size_t srvop_bytes(u8 op, u32 count)
{
	return N2L_KV_BYTES(count) + srvop_tail_len(op, count) +
	       count * sizeof(struct n2l_copy);
}

static size_t srvop_max_bytes(void)
{
	return max(srvop_bytes(N2L_OP_MOVED, N2L_MAX_PAGES),
		   srvop_bytes(N2L_OP_RETURN, N2L_MAX_PAGES));
}

int n2l_srvops_init(struct n2l_nsrv *srv)
{
	unsigned int i;

	srv->srvop_slots = kcalloc(N2L_SRVOP_SLOTS, sizeof(*srv->srvop_slots),
				   GFP_KERNEL);
	if (!srv->srvop_slots)
		return -ENOMEM;
	for (i = 0; i < N2L_SRVOP_SLOTS; i++) {
		srv->srvop_slots[i].srv = srv;
		srv->srvop_slots[i].kvs = kvmalloc(srvop_max_bytes(), GFP_KERNEL);
		if (!srv->srvop_slots[i].kvs)
			return -ENOMEM;
		__set_bit(i, &srv->srvop_free);
	}
	return 0;
}

void n2l_srvops_exit(struct n2l_nsrv *srv)
{
	unsigned int i;

	for (i = 0; srv->srvop_slots && i < N2L_SRVOP_SLOTS; i++)
		kvfree(srv->srvop_slots[i].kvs);
	kfree(srv->srvop_slots);
}

int n2l_reserve_init(struct n2l_net *net)
{
	struct n2l_pages_reserve *res = kzalloc(sizeof(*res), GFP_KERNEL);
	unsigned int i;

	net->reserve = res;
	if (!res)
		return -ENOMEM;
	for (i = 0; i < N2L_MAX_PAGES; i++) {
		res->pages[i] = alloc_page(GFP_KERNEL);
		if (!res->pages[i])
			return -ENOMEM;
	}
	return 0;
}

void n2l_reserve_exit(struct n2l_net *net)
{
	struct n2l_pages_reserve *res = net->reserve;
	unsigned int i;

	for (i = 0; res && i < N2L_MAX_PAGES && res->pages[i]; i++)
		__free_page(res->pages[i]);
	kfree(res);
	net->reserve = NULL;
}

/* @n of the reserve's pages in a bio; NULL if another RETURN has them. */
static struct bio *reserve_take(struct n2l_pages_reserve *res, u32 n)
{
	u32 i;

	if (test_and_set_bit_lock(0, &res->busy))
		return NULL;
	bio_init(&res->bio, NULL, res->vecs, N2L_MAX_PAGES, REQ_OP_WRITE);
	for (i = 0; i < n; i++)
		__bio_add_page(&res->bio, res->pages[i], N2L_PAGE_SIZE, 0);
	return &res->bio;
}

static void free_pages_bio(struct bio *bio)
{
	struct bvec_iter_all it;
	struct bio_vec *bv;

	bio_for_each_segment_all(bv, bio, it)
		__free_page(bv->bv_page);
	bio_uninit(bio);
	kfree(bio);
}

/* A bio of @n pages, if the page allocator has them without waiting. */
static struct bio *pages_nowait(u32 n)
{
	gfp_t gfp = GFP_NOWAIT | __GFP_NOWARN;
	struct bio *bio = n2l_nomem(gfp) ? NULL : bio_kmalloc(n, gfp);
	struct page *page;
	u32 i;

	if (!bio)
		return NULL;
	bio_init(bio, NULL, bio->bi_inline_vecs, n, REQ_OP_WRITE);
	for (i = 0; i < n; i++) {
		page = n2l_nomem(gfp) ? NULL : alloc_page(gfp);
		if (!page) {
			free_pages_bio(bio);
			return NULL;
		}
		__bio_add_page(bio, page, N2L_PAGE_SIZE, 0);
	}
	return bio;
}

/*
 * Every request and every queued op of a server ends before the server
 * is released (srv_stop(), connection_down()): the slot is still there.
 */
void n2l_srvop_free(struct n2l_srvop *op)
{
	struct n2l_nsrv *srv = op->srv;
	struct n2l_pages_reserve *res = srv->net->reserve;
	unsigned long flags;

	if (op->pages == &res->bio) {
		bio_uninit(&res->bio);
		clear_bit_unlock(0, &res->busy);
	} else if (op->pages) {
		free_pages_bio(op->pages);
	}
	op->pages = NULL;
	spin_lock_irqsave(&srv->lock, flags);
	__set_bit(op - srv->srvop_slots, &srv->srvop_free);
	spin_unlock_irqrestore(&srv->lock, flags);
}

/*
 * A slot for a request of @count entries, and a RETURN's pages if there
 * are any to be had (op->pages NULL if not); NULL if the server has more
 * requests with us than it may.
 */
static struct n2l_srvop *srvop_alloc(struct n2l_nsrv *srv, u8 op, u32 count)
{
	struct n2l_srvop *o = NULL;
	unsigned int i;

	spin_lock_irq(&srv->lock);
	i = find_first_bit(&srv->srvop_free, N2L_SRVOP_SLOTS);
	if (i < N2L_SRVOP_SLOTS) {
		__clear_bit(i, &srv->srvop_free);
		o = &srv->srvop_slots[i];
	}
	spin_unlock_irq(&srv->lock);
	if (!o)
		return NULL;
	INIT_LIST_HEAD(&o->node);
	o->op = op;
	o->count = count;
	o->pages = NULL;
	bitmap_zero(o->bad, N2L_MAX_PAGES);
	if (op == N2L_OP_RETURN)
		o->pages = pages_nowait(count) ?:
			   reserve_take(srv->net->reserve, count);
	return o;
}

static void *srvop_tail(struct n2l_srvop *o)
{
	return (u8 *)o->kvs + N2L_KV_BYTES(o->count);
}

struct n2l_copy *n2l_srvop_copies(struct n2l_srvop *o)
{
	return (struct n2l_copy *)((u8 *)srvop_tail(o) +
				   srvop_tail_len(o->op, o->count));
}

static int receive_srvop_payload(struct n2l_nsrv *srv, struct socket *sock,
				 struct n2l_srvop *o, struct n2l_frame *f)
{
	u32 kvlen = N2L_KV_BYTES(o->count);
	int r;

	f->pre = o->kvs;
	if (o->op == N2L_OP_MOVED) {
		f->pre_len = kvlen + sizeof(struct n2l_addr);
		r = n2l_wire_buf(sock, o->kvs, f->pre_len, false, false);
	} else {
		f->pre_len = kvlen;
		f->bio = o->pages;
		f->post = srvop_tail(o);
		f->post_len = o->count * N2L_SEAL_LEN;
		r = n2l_wire_buf(sock, o->kvs, kvlen, false, false);
		if (!r)
			r = n2l_wire_bio(sock, o->pages, false, false);
		if (!r)
			r = n2l_wire_buf(sock, (void *)f->post, f->post_len, false,
					 false);
	}
	return r ?: n2l_frame_check_tag(srv, sock, f);
}

/* Checks what the server sent; RETURN pages are unsealed, bad ones marked. */
static const char *srvop_parse(struct n2l_nsrv *srv, struct n2l_srvop *o)
{
	struct n2l_net *net = srv->net;
	const char *why;
	u32 i;

	why = n2l_parse_copies(o->kvs, o->count, net->nr_keys, n2l_srvop_copies(o));
	if (why)
		return why;
	if (o->op == N2L_OP_MOVED)
		return n2l_parse_addr_field(srvop_tail(o), o->addr);
	for (i = 0; i < o->count; i++) {
		struct n2l_copy *c = &n2l_srvop_copies(o)[i];

		if (n2l_unseal_page(net, o->pages->bi_io_vec[i].bv_page, c->key,
				    c->vers, (u8 *)srvop_tail(o) + i * N2L_SEAL_LEN)) {
			__set_bit(i, o->bad);
			atomic64_inc(&srv->stats.bad_seals);
		}
	}
	return NULL;
}

static void srvop_from_this_connection(struct n2l_nsrv *srv,
				       struct n2l_srvop *o)
{
	spin_lock_irq(&srv->lock);
	o->conn_gen = srv->conn_gen;
	spin_unlock_irq(&srv->lock);
}

/*
 * A RETURN we have no pages for: read past them (the frame's tag still
 * checked, with rx_seals, which only GET replies use, as scratch), and
 * answer FULL: the server keeps them and asks again later.
 */
static int refuse_return(struct n2l_nsrv *srv, struct socket *sock,
			 struct n2l_srvop *o, struct n2l_frame *f)
{
	int r;

	f->pre = o->kvs;
	f->pre_len = N2L_KV_BYTES(o->count);
	f->post = srvop_tail(o);
	f->post_len = o->count * N2L_SEAL_LEN;
	r = n2l_frame_recv_skipping(srv, sock, f, o->count * N2L_PAGE_SIZE,
				    srv->rx_seals, N2L_MAX_PAGES * N2L_SEAL_LEN);
	if (r) {
		n2l_srvop_free(o);
		return r == -EPROTO ?
		       protocol_error(srv, "frame tag does not verify") : r;
	}
	pr_info_ratelimited("nswap2l: %s: server %s: no memory for its RETURN of %u pages now: it keeps them\n",
			    srv->net->devname, srv->name, o->count);
	srvop_from_this_connection(srv, o);
	n2l_srvop_answer(srv, o, N2L_ST_FULL);
	return 0;
}

/*
 * MOVED or RETURN: read it whole and leave it to the event work. A server
 * with more requests with us than it may send loses its connection (it
 * asks again on the next one): skipping the frame unread would leave its
 * tag unchecked.
 */
static int receive_srvop(struct n2l_nsrv *srv, struct socket *sock,
			 struct n2l_hdr *h)
{
	struct n2l_frame f = { .hdr = h };
	const char *why = n2l_check_srvop(h);
	struct n2l_srvop *o;
	int r;

	if (why)
		return protocol_error(srv, why);
	o = srvop_alloc(srv, h->opcode, le32_to_cpu(h->count));
	if (!o) {
		pr_warn_ratelimited("nswap2l: %s: server %s: more than %u MOVED/RETURN at once; reconnecting\n",
				    srv->net->devname, srv->name, N2L_SRVOP_SLOTS);
		return -ENOBUFS;
	}
	o->id = le64_to_cpu(h->id);
	if (o->op == N2L_OP_RETURN && !o->pages)
		return refuse_return(srv, sock, o, &f);
	r = receive_srvop_payload(srv, sock, o, &f);
	if (r == -EPROTO)
		protocol_error(srv, "frame tag does not verify");
	why = r ? NULL : srvop_parse(srv, o);
	if (r || why) {
		n2l_srvop_free(o);
		return r ?: protocol_error(srv, why);
	}
	spin_lock_irq(&srv->lock);
	o->conn_gen = srv->conn_gen;
	list_add_tail(&o->node, &srv->srvops);
	srv->nr_srvops++;
	spin_unlock_irq(&srv->lock);
	n2l_srv_event(srv, N2L_EV_SRVOPS);
	return 0;
}

/*
 * Replies can arrive back to back for as long as reads keep coming, and
 * a receive that finds data waiting never sleeps: yield between frames.
 */
void n2l_receive_loop(struct n2l_nsrv *srv, struct socket *sock)
{
	struct n2l_hdr h;
	const char *why;
	u32 len;

	while (!kthread_should_stop()) {
		cond_resched();
		if (n2l_wire_buf(sock, &h, sizeof(h), false, false))
			return;
		why = n2l_check_hdr(&h, &len);
		if (why) {
			protocol_error(srv, why);
			return;
		}
		if (le16_to_cpu(h.flags) & N2L_F_REPLY) {
			if (receive_reply(srv, sock, &h, len))
				return;
		} else if (receive_srvop(srv, sock, &h)) {
			return;
		}
	}
}
