// SPDX-License-Identifier: GPL-2.0-only
/*
 * A server's FIFO of requests and the work that puts it on the wire.
 *
 * A request is queued, then sent (taking one of N2L_TAGS tags, which its
 * id names), then answered. Its reply may come while it is still being
 * sent (the server read it from the socket buffer before our send call
 * returned): the receiver then only records the answer, and the sender
 * completes the request when it is done with it, so nothing is freed
 * under its feet.
 *
 * Invalidations wait in a ring and leave, in batches, as soon as every
 * request queued before them has left: a read mapped before a page was
 * freed is served before the page goes. A request queued after them that
 * may name their pages (after_invals: a relocation PUTs a slot's version
 * again, maybe to a server whose INVAL of it still waits) waits for them;
 * the others pass while the INVAL frame is in flight. They never starve
 * behind a stream of requests, and a full ring is never a lost
 * invalidation: the server is reconciled instead.
 */
#include <linux/sched/mm.h>
#include <linux/tcp.h>
#include <net/sock.h>

#include "nnet.h"
#include "auth.h"

/*
 * Every request ends here, exactly once: a write's pages no longer count
 * against the room its server has, and its owner hears of it.
 */
void n2l_req_end(struct n2l_net_req *req, int status)
{
	if (n2l_is_put(req) && req->srv)
		atomic_sub(req->count, &req->srv->put_pages_inflight);
	req->status = status;
	/* After the reply's free count: see n2l_net_room_coming(). */
	smp_store_release(&req->state, N2L_REQ_IDLE);
	req->done(req);
}

void n2l_complete_list(struct list_head *list)
{
	struct n2l_net_req *req, *tmp;

	list_for_each_entry_safe(req, tmp, list, node) {
		list_del_init(&req->node);
		n2l_req_end(req, req->status);
	}
}

/*
 * Why @req cannot be queued now (a status to end it with), or 0. Writes
 * go only to a server that is up and not draining; answers only on the
 * connection that asked; nothing to a server away or leaving.
 */
static int __refuse(struct n2l_nsrv *srv, struct n2l_net_req *req)
{
	if (srv->stopping || srv->state == N2L_SRV_STOPPED ||
	    srv->state == N2L_SRV_AWAY ||
	    (READ_ONCE(srv->net->stopping) && !__n2l_connected(srv)))
		return N2L_NET_AWAY;
	if (req->flags & N2L_F_REPLY)
		return __n2l_connected(srv) && req->conn_gen == srv->conn_gen ?
		       0 : N2L_NET_CONN_LOST;
	if (n2l_is_put(req) && (srv->state != N2L_SRV_UP || srv->draining))
		return N2L_NET_AWAY;
	if (req->op == N2L_OP_FREE_ALL && !__n2l_connected(srv))
		return N2L_NET_CONN_LOST;
	return 0;
}

void n2l_submit(struct n2l_nsrv *srv, struct n2l_net_req *req)
{
	struct n2l_net *net = srv->net;
	unsigned long flags;
	bool kick = false;
	int refused;

	req->srv = srv;
	spin_lock_irqsave(&srv->lock, flags);
	refused = __refuse(srv, req);
	if (!refused) {
		req->seq = ++srv->queue_seq;
		req->queued_at = jiffies;
		req->state = N2L_REQ_QUEUED;
		list_add_tail(&req->node, &srv->queue);
		srv->inflight++;
		kick = __n2l_connected(srv);
	}
	spin_unlock_irqrestore(&srv->lock, flags);

	if (refused)
		n2l_req_end(req, refused);
	else if (kick)
		queue_work(net->send_wq, &srv->send_work);
}

/*
 * Fail what waits in the FIFO (only the writes, with @puts_only) and the
 * invalidations; the requests go on @failed, to be completed unlocked.
 */
void __n2l_fail_queued(struct n2l_nsrv *srv, struct list_head *failed,
		       int status, bool puts_only)
{
	struct n2l_net_req *req, *tmp;

	lockdep_assert_held(&srv->lock);
	list_for_each_entry_safe(req, tmp, &srv->queue, node) {
		if (puts_only && !n2l_is_put(req) && !(req->flags & N2L_F_REPLY))
			continue;
		list_move_tail(&req->node, failed);
		req->status = status;
		srv->inflight--;
	}
	srv->inval_head = srv->inval_tail;
}

static int __take_tag(struct n2l_nsrv *srv, struct n2l_net_req *req)
{
	unsigned int tag;

	for (tag = 0; tag < N2L_TAGS; tag++) {
		if (!srv->tags[tag]) {
			srv->tags[tag] = req;
			req->id = (((++srv->next_id) ^ srv->id_salt) << N2L_TAG_BITS) |
				  tag;
			return 0;
		}
	}
	return -EBUSY;
}

/* The seq of the first request not sent yet; past the last if none. */
static u64 __first_unsent(struct n2l_nsrv *srv)
{
	struct n2l_net_req *req;

	req = list_first_entry_or_null(&srv->queue, struct n2l_net_req, node);
	return req ? req->seq : srv->queue_seq + 1;
}

/* The oldest invalidation may leave: what was queued before it has. */
static bool __inval_ready(struct n2l_nsrv *srv)
{
	return srv->inval_head != srv->inval_tail &&
	       srv->invals[srv->inval_head % N2L_INVAL_RING].after_seq <
	       __first_unsent(srv);
}

/* The invalidations that may leave now, as one INVAL request. */
static struct n2l_net_req *__take_inval_batch(struct n2l_nsrv *srv)
{
	struct n2l_net_req *req = &srv->inval_req;
	struct n2l_inval *iv;
	u32 n = 0;

	if (req->state != N2L_REQ_IDLE)
		return NULL;
	while (__inval_ready(srv) && n < N2L_INVAL_BATCH) {
		iv = &srv->invals[srv->inval_head % N2L_INVAL_RING];
		srv->inval_buf[n].key = cpu_to_le64(iv->key);
		srv->inval_buf[n].vers = cpu_to_le64(iv->vers);
		srv->inval_head++;
		n++;
	}
	if (!n)
		return NULL;
	req->op = N2L_OP_INVAL;
	req->count = n;
	req->buf_len = n * sizeof(struct n2l_kv);
	srv->inflight++;
	return req;
}

/* The next request to put on the wire, its tag taken; or NULL. */
static struct n2l_net_req *__next_to_send(struct n2l_nsrv *srv)
{
	struct n2l_net_req *req;
	bool inval = true;

	req = __take_inval_batch(srv);
	if (!req) {
		inval = false;
		req = list_first_entry_or_null(&srv->queue, struct n2l_net_req,
					       node);
		if (!req)
			return NULL;
		/* The INVAL frame is in flight: its answer kicks us. */
		if (req->after_invals && __inval_ready(srv))
			return NULL;
	}
	if (!(req->flags & N2L_F_REPLY) && __take_tag(srv, req)) {
		/* Every tag in flight: the receiver kicks us when one frees. */
		if (inval) {
			srv->inval_head -= req->count;
			srv->inflight--;
		}
		return NULL;
	}
	if (!inval)
		list_del_init(&req->node);
	req->state = N2L_REQ_SENDING;
	req->busy = N2L_BUSY_SEND;
	req->sent_at = jiffies;
	return req;
}

static void count_request(struct n2l_nsrv *srv, struct n2l_net_req *req)
{
	if (req->op == N2L_OP_PUT && !(req->flags & N2L_F_REPLY)) {
		atomic64_inc(&srv->stats.puts);
		atomic64_add(req->count, &srv->stats.put_pages);
	} else if (req->op == N2L_OP_GET) {
		atomic64_inc(&srv->stats.gets);
		atomic64_add(req->count, &srv->stats.get_pages);
	}
}

/*
 * The send of @req is over (@r its result): it waits for its reply now,
 * unless it was answered meanwhile (the receiver left it to us) or is
 * itself an answer. While the receiver reads its reply, it completes it.
 */
static void sent(struct n2l_nsrv *srv, struct n2l_net_req *req, int r)
{
	bool complete = false;

	spin_lock_irq(&srv->lock);
	req->busy &= ~N2L_BUSY_SEND;
	if (req->flags & N2L_F_REPLY) {
		req->status = r;
		srv->inflight--;
		complete = true;
	} else if (req->state == N2L_REQ_ANSWERED) {
		srv->tags[req->id & (N2L_TAGS - 1)] = NULL;
		srv->inflight--;
		complete = true;
	} else if (req->state == N2L_REQ_SENDING) {
		req->state = N2L_REQ_SENT;
	}
	spin_unlock_irq(&srv->lock);
	if (complete)
		n2l_req_end(req, req->status);
}

/*
 * Sends everything queued. The socket is corked for the whole batch, so
 * that requests queued together leave in full segments; uncorking pushes
 * the tail. The socket stays valid: the connection's end flushes this
 * work before it releases the socket.
 */
void n2l_send_work(struct work_struct *w)
{
	struct n2l_nsrv *srv = container_of(w, struct n2l_nsrv, send_work);
	unsigned int noio = memalloc_noio_save();
	struct socket *sock, *corked = NULL;
	struct n2l_net_req *req;
	int r;

	if (n2l_debug_holding(N2L_HOLD_SEND)) {
		memalloc_noio_restore(noio);
		return;
	}
	for (;;) {
		spin_lock_irq(&srv->lock);
		req = __n2l_connected(srv) ? __next_to_send(srv) : NULL;
		sock = srv->sock;
		spin_unlock_irq(&srv->lock);
		if (!req)
			break;
		if (!corked) {
			corked = sock;
			tcp_sock_set_cork(sock->sk, true);
		}
		count_request(srv, req);
		r = n2l_send_frame(srv, sock, req);
		sent(srv, req, r);
		if (r) {
			/* The receiver sees the shutdown and cleans up. */
			kernel_sock_shutdown(sock, SHUT_RDWR);
			break;
		}
		cond_resched();
	}
	if (corked)
		tcp_sock_set_cork(corked->sk, false);
	memalloc_noio_restore(noio);
}

/*----------------------------------------------------------------*/
/* Requests, as the target makes them. */

static void req_init(struct n2l_net_req *req, u8 op, u64 key, u32 count,
		     u64 vers, struct bio *bio)
{
	memset(req, 0, sizeof(*req));
	INIT_LIST_HEAD(&req->node);
	req->op = op;
	req->key = key;
	req->count = count;
	req->vers = vers;
	req->bio = bio;
}

void n2l_net_put(struct n2l_net_req *req, u64 key, u32 count, u64 vers,
		 const struct n2l_sealed *sd)
{
	req_init(req, N2L_OP_PUT, key, count, vers, sd->wire);
	req->seals = sd->seals;
	req->after_invals = true;
}

void n2l_net_put_reserved(struct n2l_net_req *req, u64 key, u32 count,
			  u64 vers, const struct n2l_sealed *sd)
{
	n2l_net_put(req, key, count, vers, sd);
	req->reserved = true;
	req->after_invals = false;
}

void n2l_net_get(struct n2l_net_req *req, u64 key, u32 count, u64 vers,
		 struct bio *dst)
{
	req_init(req, N2L_OP_GET, key, count, vers, dst);
}

void n2l_net_submit(struct n2l_net *net, unsigned int idx,
		    struct n2l_net_req *req)
{
	struct n2l_nsrv *srv = n2l_srv_get(net, idx);

	if (!srv) {
		req->srv = NULL;
		n2l_req_end(req, N2L_NET_AWAY);
		return;
	}
	if (n2l_is_put(req) && !req->reserved)
		atomic_add(req->count, &srv->put_pages_inflight);
	n2l_submit(srv, req);
	n2l_srv_put(srv);
}

static void sync_done(struct n2l_net_req *req)
{
	complete(req->private);
}

/*
 * The tick ends every request within the request timeout once sent, and
 * within dead_after_ms while it waits for its server; this bound only
 * guards against a bug there.
 */
int n2l_net_sync(struct n2l_net *net, unsigned int idx,
		 struct n2l_net_req *req)
{
	DECLARE_COMPLETION_ONSTACK(done);
	unsigned long bound = 2 * (n2l_req_timeout(net) + n2l_dead_after(net)) +
			      msecs_to_jiffies(10 * N2L_TICK_MS);

	req->done = sync_done;
	req->private = &done;
	n2l_net_submit(net, idx, req);
	if (!wait_for_completion_timeout(&done, bound)) {
		WARN_ONCE(1, "nswap2l: request to server %u not ended by its timeout\n",
			  idx);
		wait_for_completion(&done);
	}
	return req->status;
}

/* Take no writes, and make @srv hold exactly what the owner lists. */
static void __reconcile(struct n2l_net *net, struct n2l_nsrv *srv)
{
	lockdep_assert_held(&srv->lock);
	srv->state = N2L_SRV_RECONCILING;
	if (!test_and_set_bit(N2L_EV_RECONCILE, &srv->events))
		queue_work(net->event_wq, &srv->event_work);
}

void n2l_net_reconcile(struct n2l_net *net, unsigned int idx)
{
	struct n2l_nsrv *srv;
	unsigned long flags;

	spin_lock_irqsave(&net->lock, flags);
	srv = net->servers[idx];
	if (srv) {
		spin_lock(&srv->lock);
		/* Not connected: its next connect reconciles anyway. */
		if (__n2l_connected(srv))
			__reconcile(net, srv);
		spin_unlock(&srv->lock);
	}
	spin_unlock_irqrestore(&net->lock, flags);
}

/*
 * Called with the target's store lock held, irqs off: only spinlocks
 * nest inside it.
 */
void n2l_net_inval(struct n2l_net *net, unsigned int idx, u64 key, u64 vers)
{
	struct n2l_nsrv *srv;
	struct n2l_inval *iv;
	unsigned long flags;
	bool kick = false;

	spin_lock_irqsave(&net->lock, flags);
	srv = net->servers[idx];
	if (srv) {
		spin_lock(&srv->lock);
		/*
		 * Not connected: reconciliation at the next connect drops
		 * it. A full ring: reconcile now, and take no writes until
		 * then, as room that is coming (n2l_net_room_coming()).
		 */
		if (!__n2l_connected(srv)) {
			;
		} else if (srv->inval_tail - srv->inval_head >= N2L_INVAL_RING) {
			__reconcile(net, srv);
		} else {
			iv = &srv->invals[srv->inval_tail++ % N2L_INVAL_RING];
			iv->key = key;
			iv->vers = vers;
			iv->after_seq = srv->queue_seq;
			kick = true;
		}
		spin_unlock(&srv->lock);
		if (kick)
			queue_work(net->send_wq, &srv->send_work);
	}
	spin_unlock_irqrestore(&net->lock, flags);
}

/*
 * RETAIN @n copies on @idx, claiming them; its status. The buffers are
 * the device's, made beforehand: a claim answers a server's MOVED, in an
 * event work, which must not wait for memory.
 */
int n2l_net_claim(struct n2l_net *net, unsigned int idx,
		  const struct n2l_copy *copies, u32 n)
{
	struct n2l_net_req req = {
		.op = N2L_OP_RETAIN, .count = n, .after_invals = true,
	};
	int r;
	u32 i;

	if (WARN_ON_ONCE(!n || n > N2L_MAX_PAGES))
		return -EINVAL;
	mutex_lock(&net->claim_lock);
	for (i = 0; i < n; i++) {
		net->claim_kvs[i].key = cpu_to_le64(copies[i].key);
		net->claim_kvs[i].vers = cpu_to_le64(copies[i].vers);
	}
	INIT_LIST_HEAD(&req.node);
	req.buf = net->claim_kvs;
	req.buf_len = n * sizeof(*net->claim_kvs);
	req.reply_buf = net->claim_bitmap;
	req.reply_len = DIV_ROUND_UP(n, 8);
	r = n2l_net_sync(net, idx, &req);
	for (i = 0; !r && i < n; i++)
		if (n2l_retain_missing(net->claim_bitmap, i))
			r = N2L_ST_STALE;
	mutex_unlock(&net->claim_lock);
	return r;
}
