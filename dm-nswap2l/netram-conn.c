// SPDX-License-Identifier: GPL-2.0-only
/*
 * One connection to a page server. A kernel thread per server connects,
 * says HELLO, receives replies and the server's own requests, and
 * reconnects with backoff when the connection breaks; a work item per
 * server sends the FIFO of requests. Nothing here waits for memory that
 * only swapping could free: sockets may dip into the emergency reserves
 * (as swap over NFS and nbd do), requests are preallocated, and the
 * thread and workers run in a memalloc_noio scope.
 */
#include <linux/sched/mm.h>
#include <linux/tcp.h>
#include <net/sock.h>

#include "nswap2l.h"

#define N2L_BACKOFF_MIN_MS	100
#define N2L_BACKOFF_MAX_MS	5000
/*
 * A connection that breaks sooner than this after HELLO counts as a failed
 * connect: a server that answers HELLO and then talks garbage must not get
 * a reconnect storm.
 */
#define N2L_STABLE_MS		2000
#define N2L_TAG_BITS		8

static_assert(N2L_TAGS == 1 << N2L_TAG_BITS);

static struct n2l_netram *to_netram(struct n2l_server *srv)
{
	return srv->nr;
}

/*----------------------------------------------------------------*/
/* The FIFO and the tags. */

void n2l_complete_reqs(struct list_head *list)
{
	struct n2l_netreq *req, *tmp;

	list_for_each_entry_safe(req, tmp, list, node) {
		list_del_init(&req->node);
		req->state = N2L_REQ_IDLE;
		req->done(req);
	}
}

void n2l_server_submit(struct n2l_server *srv, struct n2l_netreq *req)
{
	struct n2l_netram *nr = to_netram(srv);
	unsigned long flags;
	bool fail, kick;

	req->srv = srv;
	spin_lock_irqsave(&srv->lock, flags);
	/* A write never waits for a server that is not there: it goes elsewhere. */
	fail = srv->state == N2L_SRV_DEAD ||
	       (req->op == N2L_OP_PUT && !(req->flags & N2L_F_REPLY) &&
		!n2l_connected(srv));
	if (!fail) {
		req->first_sent = 0;
		req->seq = ++srv->queue_seq;
		req->state = N2L_REQ_QUEUED;
		list_add_tail(&req->node, &srv->queue);
	}
	kick = n2l_connected(srv);
	spin_unlock_irqrestore(&srv->lock, flags);

	if (fail) {
		req->status = srv->state == N2L_SRV_DEAD ? N2L_REQ_DEAD :
							   N2L_REQ_CONN_LOST;
		req->done(req);
	} else if (kick) {
		queue_work(nr->wq, &srv->send_work);
	}
}

static int __take_tag(struct n2l_server *srv, struct n2l_netreq *req)
{
	unsigned int tag;

	for (tag = 0; tag < N2L_TAGS; tag++) {
		if (!srv->tags[tag]) {
			srv->tags[tag] = req;
			req->id = (++srv->next_id << N2L_TAG_BITS) | tag;
			return 0;
		}
	}
	return -EBUSY;
}

/*
 * The invalidations whose freeing came after every request sent so far,
 * as one INVAL request. See netram.h for why that order matters.
 */
static struct n2l_netreq *__take_inval_batch(struct n2l_server *srv)
{
	struct n2l_netreq *req = &srv->inval_req;
	struct n2l_inval *iv;
	u32 n = 0;

	if (req->state != N2L_REQ_IDLE)
		return NULL;
	while (srv->inval_head != srv->inval_tail && n < N2L_MAX_PAGES) {
		iv = &srv->invals[srv->inval_head % N2L_INVAL_RING];
		if (iv->after_seq > srv->sent_seq)
			break;
		srv->inval_buf[n].key = cpu_to_le64(iv->key);
		srv->inval_buf[n].vers = cpu_to_le32(iv->vers);
		srv->inval_buf[n].reserved = 0;
		srv->inval_head++;
		n++;
	}
	if (!n)
		return NULL;
	req->op = N2L_OP_INVAL;
	req->flags = 0;
	req->count = n;
	req->key = 0;
	req->vers = 0;
	req->buf = srv->inval_buf;
	req->buf_len = n * sizeof(struct n2l_kv);
	req->seq = srv->sent_seq;	/* sorts after what it must follow */
	return req;
}

/* The next request to put on the wire, with a tag if it expects a reply. */
static struct n2l_netreq *__next_to_send(struct n2l_server *srv)
{
	struct n2l_netreq *req;

	req = list_first_entry_or_null(&srv->queue, struct n2l_netreq, node);
	if (!req)
		req = __take_inval_batch(srv);
	else
		list_del_init(&req->node);
	if (!req)
		return NULL;
	if (!(req->flags & N2L_F_REPLY) && __take_tag(srv, req)) {
		/* Every tag in flight: the receiver kicks us when one frees. */
		if (req == &srv->inval_req)
			srv->inval_head -= req->count;
		else
			list_add(&req->node, &srv->queue);
		return NULL;
	}
	if (req != &srv->inval_req)
		srv->sent_seq = req->seq;
	req->state = N2L_REQ_SENT;
	req->sent_at = jiffies;
	if (!req->first_sent)
		req->first_sent = req->sent_at;
	return req;
}

/*
 * Sends everything queued. The socket is corked for the whole batch, so
 * that requests queued together leave in full segments; uncorking pushes
 * the tail. The socket stays valid: connection_down() flushes this work
 * before it releases the socket.
 */
void n2l_send_work(struct work_struct *w)
{
	struct n2l_server *srv = container_of(w, struct n2l_server, send_work);
	unsigned int noio = memalloc_noio_save();
	struct socket *sock, *corked = NULL;
	struct n2l_netreq *req;
	bool reply;
	int r;

	for (;;) {
		spin_lock_irq(&srv->lock);
		req = n2l_connected(srv) ? __next_to_send(srv) : NULL;
		sock = srv->sock;
		spin_unlock_irq(&srv->lock);
		if (!req)
			break;
		if (!corked) {
			corked = sock;
			tcp_sock_set_cork(sock->sk, true);
		}

		reply = req->flags & N2L_F_REPLY;
		r = n2l_wire_send(sock, req);
		if (reply) {
			/* Our answer to the server: nothing more to wait for. */
			req->status = r;
			req->state = N2L_REQ_IDLE;
			req->done(req);
		}
		if (r) {
			/* The thread sees the shutdown and cleans up. */
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
/* Connecting. */

static char n2l_auth_token[N2L_TOKEN_LEN + 1];
module_param_string(auth_token, n2l_auth_token, sizeof(n2l_auth_token), 0600);
MODULE_PARM_DESC(auth_token, "Token sent in HELLO to page servers (up to 32 bytes)");

static void set_timeouts(struct socket *sock, long jiffies_or_max)
{
	sock->sk->sk_sndtimeo = jiffies_or_max;
	sock->sk->sk_rcvtimeo = jiffies_or_max;
}

static int recv_info(struct n2l_server *srv, struct socket *sock, u8 op,
		     struct n2l_info *info)
{
	struct n2l_hdr h;
	long len;
	int r;

	r = n2l_wire_buf(sock, &h, sizeof(h), false, false);
	if (r)
		return r;
	len = n2l_payload_len(&h);
	if (len < 0 || !(le16_to_cpu(h.flags) & N2L_F_REPLY) || h.opcode != op)
		return -EPROTO;
	switch (le32_to_cpu(h.status)) {
	case N2L_ST_OK:
		break;
	case N2L_ST_AUTH:
		return -EACCES;
	case N2L_ST_VERSION:
		return -EPROTONOSUPPORT;
	default:
		return -EPROTO;
	}
	return n2l_wire_buf(sock, info, sizeof(*info), false, false);
}

void n2l_note_info(struct n2l_server *srv, const struct n2l_info *info)
{
	WRITE_ONCE(srv->capacity, le64_to_cpu(info->capacity_pages));
	atomic64_set(&srv->free_reported, le64_to_cpu(info->free_pages));
	WRITE_ONCE(srv->last_reply, jiffies);
}

static int say_hello(struct n2l_server *srv, struct socket *sock)
{
	struct n2l_hello hello = {
		.client_id = cpu_to_le64(to_netram(srv)->client_id),
		.role = cpu_to_le32(N2L_ROLE_CLIENT),
	};
	struct n2l_netreq req = {
		.op = N2L_OP_HELLO,
		.buf = &hello,
		.buf_len = sizeof(hello),
	};
	struct n2l_info info;
	int r;

	/* A fixed-size field, zero-padded, not a C string. */
	memcpy(hello.token, n2l_auth_token,
	       strnlen(n2l_auth_token, N2L_TOKEN_LEN));
	r = n2l_wire_send(sock, &req);
	if (!r)
		r = recv_info(srv, sock, N2L_OP_HELLO, &info);
	if (!r)
		n2l_note_info(srv, &info);
	return r;
}

static int connect_and_hello(struct n2l_server *srv, struct socket **sockp)
{
	struct socket *sock;
	int r;

	r = sock_create_kern(&init_net, srv->addr.ss_family, SOCK_STREAM,
			     IPPROTO_TCP, &sock);
	if (r)
		return r;
	/* Swap over the network: never wait on reclaim to send or receive. */
	sock->sk->sk_allocation = GFP_NOIO | __GFP_MEMALLOC;
	sk_set_memalloc(sock->sk);
	tcp_sock_set_nodelay(sock->sk);
	set_timeouts(sock, n2l_req_timeout(to_netram(srv)));

	r = kernel_connect(sock, (struct sockaddr *)&srv->addr, srv->addrlen, 0);
	if (!r)
		r = say_hello(srv, sock);
	if (r) {
		sock_release(sock);
		return r;
	}
	/* From now on timeouts are the tick's business, per request. */
	set_timeouts(sock, MAX_SCHEDULE_TIMEOUT);
	*sockp = sock;
	return 0;
}

/*----------------------------------------------------------------*/
/* Receiving. */

static int protocol_error(struct n2l_server *srv, const char *what)
{
	atomic64_inc(&srv->stats.protocol_errors);
	DMERR_LIMIT("server %s: protocol error: %s; dropping the connection",
		    srv->name, what);
	return -EPROTO;
}

/* The request a reply answers, if the reply matches it in every field. */
static struct n2l_netreq *__reply_to(struct n2l_server *srv,
				     const struct n2l_hdr *h, const char **why)
{
	u64 id = le64_to_cpu(h->id);
	struct n2l_netreq *req = srv->tags[id & (N2L_TAGS - 1)];

	if (!req || req->id != id || req->state != N2L_REQ_SENT) {
		*why = "reply to no request";
		return NULL;
	}
	if (req->op != h->opcode || req->count != le32_to_cpu(h->count) ||
	    req->key != le64_to_cpu(h->key) || req->vers != le32_to_cpu(h->vers)) {
		*why = "reply does not match its request";
		return NULL;
	}
	return req;
}

static int receive_reply(struct n2l_server *srv, struct socket *sock,
			 const struct n2l_hdr *h, long len)
{
	const char *why = NULL;
	struct n2l_netreq *req;
	int r = 0;

	spin_lock_irq(&srv->lock);
	req = __reply_to(srv, h, &why);
	if (req)
		req->state = N2L_REQ_RECEIVING;
	spin_unlock_irq(&srv->lock);
	if (!req)
		return protocol_error(srv, why);

	atomic64_set(&srv->free_reported, le32_to_cpu(h->free_pages));
	WRITE_ONCE(srv->last_reply, jiffies);
	if (len && req->op == N2L_OP_GET)
		r = n2l_wire_bio(sock, req->bio, false);
	else if (len && req->reply_buf)
		r = n2l_wire_buf(sock, req->reply_buf, len, false, false);
	else if (len)
		r = n2l_wire_skip(sock, len);

	spin_lock_irq(&srv->lock);
	srv->tags[req->id & (N2L_TAGS - 1)] = NULL;
	/* A well-formed reply, not a HELLO, is what proves a server back. */
	if (!r)
		srv->down_since = 0;
	spin_unlock_irq(&srv->lock);

	req->status = r ? N2L_REQ_CONN_LOST : le32_to_cpu(h->status);
	req->state = N2L_REQ_IDLE;
	req->done(req);
	queue_work(to_netram(srv)->wq, &srv->send_work);
	return r;
}

void n2l_srvop_free(struct n2l_srvop *op)
{
	u32 i;

	if (op->pages)
		for (i = 0; i < le32_to_cpu(op->hdr.count); i++)
			if (op->pages[i])
				__free_page(op->pages[i]);
	kfree(op->pages);
	kvfree(op->kv);
	kfree(op);
}

/*
 * The payload of MOVED or RETURN, into memory the worker can use. Without
 * memory, the rest of the payload is skipped and -ENOMEM returned.
 */
static int receive_srvop(struct socket *sock, struct n2l_srvop *op, long len)
{
	u32 i, count = le32_to_cpu(op->hdr.count);
	size_t kvlen = count * sizeof(struct n2l_kv);
	gfp_t gfp = GFP_NOIO | __GFP_NOWARN;
	long left = len;
	void *p;
	int r;

	op->kv = kvmalloc(kvlen, gfp);
	if (!op->kv)
		goto nomem;
	r = n2l_wire_buf(sock, op->kv, kvlen, false, false);
	left -= kvlen;
	if (r || op->hdr.opcode == N2L_OP_MOVED)
		return r ?: n2l_wire_buf(sock, &op->addr, sizeof(op->addr), false, false);

	op->pages = kcalloc(count, sizeof(*op->pages), gfp);
	if (!op->pages)
		goto nomem;
	for (i = 0; i < count; i++) {
		op->pages[i] = alloc_page(gfp);
		if (!op->pages[i])
			goto nomem;
		p = kmap_local_page(op->pages[i]);
		r = n2l_wire_buf(sock, p, N2L_PAGE_SIZE, false, false);
		kunmap_local(p);
		if (r)
			return r;
		left -= N2L_PAGE_SIZE;
	}
	return 0;

nomem:
	return n2l_wire_skip(sock, left) ?: -ENOMEM;
}

/*
 * MOVED or RETURN from the server: read it whole, and leave the work to a
 * worker. Without memory for it, drop it unanswered: the server retries.
 */
static int receive_request(struct n2l_server *srv, struct socket *sock,
			   const struct n2l_hdr *h, long len)
{
	struct n2l_srvop *op;
	int r;

	if (h->opcode != N2L_OP_MOVED && h->opcode != N2L_OP_RETURN)
		return protocol_error(srv, "unexpected request from server");

	op = kzalloc(sizeof(*op), GFP_NOIO | __GFP_NOWARN);
	if (!op)
		return n2l_wire_skip(sock, len);
	op->hdr = *h;
	r = receive_srvop(sock, op, len);
	if (r) {
		n2l_srvop_free(op);
		/* Out of memory is not the connection's fault. */
		return r == -ENOMEM ? 0 : r;
	}
	spin_lock_irq(&srv->lock);
	list_add_tail(&op->node, &srv->srvops);
	spin_unlock_irq(&srv->lock);
	queue_work(to_netram(srv)->wq, &srv->srvop_work);
	return 0;
}

/*
 * Replies can arrive back to back for as long as reads keep coming, and
 * a receive that finds data waiting never sleeps: yield between frames.
 */
static void receive_loop(struct n2l_server *srv, struct socket *sock)
{
	struct n2l_hdr h;
	long len;

	while (!kthread_should_stop()) {
		cond_resched();
		if (n2l_wire_buf(sock, &h, sizeof(h), false, false))
			return;
		len = n2l_payload_len(&h);
		if (len < 0) {
			protocol_error(srv, "malformed frame");
			return;
		}
		if (le16_to_cpu(h.flags) & N2L_F_REPLY) {
			if (receive_reply(srv, sock, &h, len))
				return;
		} else if (receive_request(srv, sock, &h, len)) {
			return;
		}
	}
}

/*----------------------------------------------------------------*/
/* Going up and down. */

/*
 * Connected and greeted. The clock of a server that went down keeps
 * running until it answers a request properly: one that accepts HELLO
 * and then misbehaves must still end up declared dead.
 */
static void connection_up(struct n2l_server *srv, struct socket *sock)
{
	struct n2l_netram *nr = to_netram(srv);
	bool again;

	spin_lock_irq(&srv->lock);
	again = srv->ever_up;
	srv->ever_up = true;
	srv->sock = sock;
	if (srv->state != N2L_SRV_DRAINING)
		srv->state = N2L_SRV_UP;
	spin_unlock_irq(&srv->lock);

	if (again)
		atomic64_inc(&srv->stats.reconnects);
	DMINFO("%s: server %s is up", dm_device_name(nr->store->md), srv->name);
	queue_work(nr->wq, &srv->send_work);
	/* Writes that waited for a server may go now. */
	queue_work(nr->store->wq, &nr->store->worker);
}

/* Insert @req into @list, kept in FIFO order (INVAL batches after their seq). */
static void insert_in_order(struct list_head *list, struct n2l_netreq *req,
			    struct n2l_server *srv)
{
	struct n2l_netreq *pos;
	u64 key = req->seq * 2 + (req == &srv->inval_req);

	list_for_each_entry(pos, list, node) {
		if (pos->seq * 2 + (pos == &srv->inval_req) > key) {
			list_add_tail(&req->node, &pos->node);
			return;
		}
	}
	list_add_tail(&req->node, list);
}

/*
 * The connection is gone. Requests in flight go back to the head of the
 * FIFO, in their order, to be sent again (GET, INVAL and STATUS can be
 * repeated safely); writes fail now, so that the core places them
 * elsewhere; answers to the server die with the connection that asked.
 */
static void connection_down(struct n2l_server *srv, struct socket *sock)
{
	struct n2l_netreq *req, *tmp;
	LIST_HEAD(failed);
	LIST_HEAD(again);
	unsigned int tag;

	mutex_lock(&srv->sock_lock);
	spin_lock_irq(&srv->lock);
	srv->sock = NULL;
	if (srv->state == N2L_SRV_UP || srv->state == N2L_SRV_CONNECTING)
		srv->state = N2L_SRV_DOWN;
	if (!srv->down_since)
		srv->down_since = jiffies ?: 1;
	spin_unlock_irq(&srv->lock);
	mutex_unlock(&srv->sock_lock);

	kernel_sock_shutdown(sock, SHUT_RDWR);
	flush_work(&srv->send_work);
	sock_release(sock);

	spin_lock_irq(&srv->lock);
	for (tag = 0; tag < N2L_TAGS; tag++) {
		req = srv->tags[tag];
		if (!req)
			continue;
		srv->tags[tag] = NULL;
		req->state = N2L_REQ_QUEUED;
		insert_in_order(&again, req, srv);
	}
	list_for_each_entry_safe(req, tmp, &srv->queue, node)
		insert_in_order(&again, req, srv);
	INIT_LIST_HEAD(&srv->queue);
	list_for_each_entry_safe(req, tmp, &again, node) {
		list_del(&req->node);
		if ((req->op == N2L_OP_PUT && !(req->flags & N2L_F_REPLY)) ||
		    (req->flags & N2L_F_REPLY)) {
			req->status = N2L_REQ_CONN_LOST;
			list_add_tail(&req->node, &failed);
		} else {
			list_add_tail(&req->node, &srv->queue);
		}
	}
	req = list_first_entry_or_null(&srv->queue, struct n2l_netreq, node);
	srv->sent_seq = req ? req->seq - 1 : srv->queue_seq;
	spin_unlock_irq(&srv->lock);

	n2l_complete_reqs(&failed);
	if (!kthread_should_stop())
		DMWARN_LIMIT("%s: server %s: connection lost",
			     dm_device_name(to_netram(srv)->store->md), srv->name);
}

int n2l_server_thread(void *arg)
{
	struct n2l_server *srv = arg;
	unsigned int noio = memalloc_noio_save();
	unsigned int backoff = N2L_BACKOFF_MIN_MS;
	struct socket *sock;
	int r;

	while (!kthread_should_stop()) {
		unsigned long up_since;

		r = connect_and_hello(srv, &sock);
		if (!r) {
			up_since = jiffies;
			connection_up(srv, sock);
			receive_loop(srv, sock);
			connection_down(srv, sock);
			if (time_after(jiffies, up_since +
				       msecs_to_jiffies(N2L_STABLE_MS))) {
				backoff = N2L_BACKOFF_MIN_MS;
				continue;
			}
		} else if (r == -EACCES || r == -EPROTONOSUPPORT) {
			DMERR_LIMIT("server %s refused us: %s", srv->name,
				    r == -EACCES ? "wrong auth_token" :
				    "protocol version");
		}
		schedule_timeout_interruptible(msecs_to_jiffies(backoff));
		backoff = min(backoff * 2, N2L_BACKOFF_MAX_MS);
	}
	memalloc_noio_restore(noio);
	return 0;
}
