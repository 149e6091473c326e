// SPDX-License-Identifier: GPL-2.0-only
/*
 * The client of one device and its page servers: adding, finding and
 * removing them, what the target may know of them, and the tick that
 * watches them (request timeouts, servers turning away, status polls).
 */
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/moduleparam.h>
#include <linux/random.h>
#include <net/ipv6.h>

#include "auth.h"

/*----------------------------------------------------------------*/
/* Holds for tests (netram.h): nothing here runs unless a test asks. */

static unsigned int debug_hold;
module_param(debug_hold, uint, 0644);
MODULE_PARM_DESC(debug_hold, "Tests only: hold the code at this point (enum n2l_hold); 0: none");

bool n2l_debug_holding(enum n2l_hold point)
{
	return READ_ONCE(debug_hold) == point;
}

/* Wait while a test holds @point, bounded so that nothing hangs for good. */
void n2l_debug_hold(enum n2l_hold point)
{
	unsigned int waited = 0;

	while (n2l_debug_holding(point) && waited < N2L_DEBUG_HOLD_MAX_MS) {
		msleep(20);
		waited += 20;
	}
}

const char *n2l_net_state_name(enum n2l_srv_state state)
{
	static const char * const names[] = {
		[N2L_SRV_CONNECTING] = "connecting",
		[N2L_SRV_RECONCILING] = "reconciling",
		[N2L_SRV_UP] = "up",
		[N2L_SRV_DOWN] = "down",
		[N2L_SRV_AWAY] = "away",
		[N2L_SRV_STOPPED] = "stopped",
	};

	return (unsigned int)state < ARRAY_SIZE(names) ? names[state] : "?";
}

/*----------------------------------------------------------------*/
/* Servers by index. */

static void srv_release(struct kref *ref)
{
	struct n2l_nsrv *srv = container_of(ref, struct n2l_nsrv, ref);

	n2l_session_exit(srv);
	n2l_srvops_exit(srv);
	kfree(srv->rx_seals);
	kvfree(srv->retain_kvs);
	kfree(srv->retain_bitmap);
	kvfree(srv->invals);
	kfree(srv->inval_buf);
	kfree(srv);
}

struct n2l_nsrv *n2l_srv_get(struct n2l_net *net, unsigned int idx)
{
	struct n2l_nsrv *srv = NULL;
	unsigned long flags;

	if (idx >= N2L_NET_SERVERS)
		return NULL;
	spin_lock_irqsave(&net->lock, flags);
	srv = net->servers[idx];
	if (srv)
		kref_get(&srv->ref);
	spin_unlock_irqrestore(&net->lock, flags);
	return srv;
}

void n2l_srv_put(struct n2l_nsrv *srv)
{
	kref_put(&srv->ref, srv_release);
}

void n2l_srv_event(struct n2l_nsrv *srv, unsigned int ev)
{
	set_bit(ev, &srv->events);
	queue_work(srv->net->event_wq, &srv->event_work);
}

/*
 * Break @srv's connection (only if it is still @only, when given) from
 * outside its thread, which sees the socket fail and cleans up.
 */
void n2l_srv_disconnect(struct n2l_nsrv *srv, struct socket *only)
{
	mutex_lock(&srv->sock_lock);
	if (srv->sock && (!only || srv->sock == only))
		kernel_sock_shutdown(srv->sock, SHUT_RDWR);
	mutex_unlock(&srv->sock_lock);
}

static void inval_done(struct n2l_net_req *req)
{
	struct n2l_nsrv *srv = req->srv;

	/* The reply said how much room the server has now. */
	if (atomic_xchg(&srv->net->room_wanted, 0))
		n2l_srv_event(srv, N2L_EV_ROOM);
	/* More may be waiting; a lost batch is reconciliation's business. */
	queue_work(srv->net->send_wq, &srv->send_work);
}

static void status_done(struct n2l_net_req *req)
{
	if (req->status == N2L_ST_OK)
		n2l_note_info(req->srv, &req->srv->status_info);
}

static int srv_alloc_buffers(struct n2l_nsrv *srv)
{
	srv->invals = kvcalloc(N2L_INVAL_RING, sizeof(*srv->invals), GFP_KERNEL);
	srv->inval_buf = kcalloc(N2L_INVAL_BATCH, sizeof(*srv->inval_buf),
				 GFP_KERNEL);
	/* Wire entries, then the same entries in host order. */
	srv->retain_kvs = kvcalloc(2 * N2L_RETAIN_BATCH, sizeof(struct n2l_kv),
				   GFP_KERNEL);
	srv->retain_bitmap = kzalloc(DIV_ROUND_UP(N2L_RETAIN_BATCH, 8),
				     GFP_KERNEL);
	srv->rx_seals = kmalloc(N2L_MAX_PAGES * N2L_SEAL_LEN, GFP_KERNEL);
	if (!srv->invals || !srv->inval_buf || !srv->retain_kvs ||
	    !srv->retain_bitmap || !srv->rx_seals || n2l_srvops_init(srv))
		return -ENOMEM;
	return n2l_session_init(srv);
}

static void srv_init_requests(struct n2l_nsrv *srv)
{
	INIT_LIST_HEAD(&srv->inval_req.node);
	srv->inval_req.srv = srv;
	srv->inval_req.buf = srv->inval_buf;
	srv->inval_req.done = inval_done;
	INIT_LIST_HEAD(&srv->status_req.node);
	srv->status_req.srv = srv;
	srv->status_req.op = N2L_OP_STATUS;
	srv->status_req.reply_buf = &srv->status_info;
	srv->status_req.reply_len = sizeof(srv->status_info);
	srv->status_req.done = status_done;
}

static struct n2l_nsrv *srv_new(struct n2l_net *net, unsigned int idx,
				const struct sockaddr_storage *ss, int len)
{
	struct n2l_nsrv *srv = kzalloc(sizeof(*srv), GFP_KERNEL);

	if (!srv)
		return NULL;
	kref_init(&srv->ref);
	srv->net = net;
	srv->idx = idx;
	srv->addr = *ss;
	srv->addrlen = len;
	n2l_format_addr(ss, srv->name, sizeof(srv->name));
	spin_lock_init(&srv->lock);
	mutex_init(&srv->sock_lock);
	INIT_LIST_HEAD(&srv->queue);
	INIT_LIST_HEAD(&srv->srvops);
	INIT_WORK(&srv->send_work, n2l_send_work);
	INIT_WORK(&srv->event_work, n2l_event_work);
	srv->state = N2L_SRV_CONNECTING;
	srv->down_since = jiffies ?: 1;
	srv->retain_gen = get_random_u32();
	if (srv_alloc_buffers(srv)) {
		n2l_srv_put(srv);
		return NULL;
	}
	srv_init_requests(srv);
	return srv;
}

static bool same_addr(const struct sockaddr_storage *a,
		      const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (void *)a, *y = (void *)b;

		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	return ((const struct sockaddr_in6 *)a)->sin6_port ==
	       ((const struct sockaddr_in6 *)b)->sin6_port &&
	       ipv6_addr_equal(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr);
}

static int __find(struct n2l_net *net, const struct sockaddr_storage *ss)
{
	unsigned int i;

	for (i = 0; i < N2L_NET_SERVERS; i++)
		if (net->servers[i] && same_addr(&net->servers[i]->addr, ss))
			return i;
	return -1;
}

/* The server at @addr, in any spelling of it; -1 if none. */
int n2l_net_server_find(struct n2l_net *net, const char *addr)
{
	struct sockaddr_storage ss;
	unsigned long flags;
	int len, idx;

	if (n2l_parse_addr(addr, &ss, &len))
		return -1;
	spin_lock_irqsave(&net->lock, flags);
	idx = __find(net, &ss);
	spin_unlock_irqrestore(&net->lock, flags);
	return idx;
}

static int __free_index(struct n2l_net *net)
{
	unsigned int i;

	for (i = 0; i < N2L_NET_SERVERS; i++)
		if (!net->servers[i])
			return i;
	return -1;
}

/*
 * A new server at @ss, connecting in the background, at index @want (or
 * the first free one if @want < 0); its index, or -errno.
 */
static int server_add(struct n2l_net *net, const struct sockaddr_storage *ss,
		      int len, int want, char **error)
{
	struct n2l_nsrv *srv;
	int idx;

	mutex_lock(&net->table_lock);
	spin_lock_irq(&net->lock);
	if (__find(net, ss) >= 0)
		idx = -EEXIST;
	else if (want < 0)
		idx = __free_index(net);
	else
		idx = want < N2L_NET_SERVERS && !net->servers[want] ? want : -EBUSY;
	spin_unlock_irq(&net->lock);
	if (idx < 0) {
		*error = idx == -EEXIST ? "Server already in use" :
			 idx == -EBUSY ? "Server index in use" : "Too many servers";
		mutex_unlock(&net->table_lock);
		return idx == -1 ? -ENOSPC : idx;
	}
	srv = srv_new(net, idx, ss, len);
	if (srv) {
		srv->thread = kthread_create(n2l_server_thread, srv, "nswap2l-%s/%d",
					     net->devname, idx);
		if (IS_ERR(srv->thread)) {
			n2l_srv_put(srv);
			srv = NULL;
		}
	}
	if (!srv) {
		mutex_unlock(&net->table_lock);
		*error = "Cannot allocate a server";
		return -ENOMEM;
	}
	spin_lock_irq(&net->lock);
	net->servers[idx] = srv;
	WRITE_ONCE(net->in_use, net->in_use | BIT_ULL(idx));
	spin_unlock_irq(&net->lock);
	mutex_unlock(&net->table_lock);
	wake_up_process(srv->thread);
	return idx;
}

int n2l_net_server_add(struct n2l_net *net, const char *addr, char **error)
{
	struct sockaddr_storage ss;
	int len;

	if (n2l_parse_addr(addr, &ss, &len)) {
		*error = "Invalid server address: use a.b.c.d:port or [v6]:port";
		return -EINVAL;
	}
	return server_add(net, &ss, len, -1, error);
}

int n2l_net_server_add_at(struct n2l_net *net, const struct sockaddr_storage *ss,
			  unsigned int idx, char **error)
{
	int len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) :
		  ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : 0;

	if (!len) {
		*error = "Invalid server address family";
		return -EINVAL;
	}
	return server_add(net, ss, len, idx, error);
}

bool n2l_net_server_addr(struct n2l_net *net, unsigned int idx,
			 struct sockaddr_storage *ss)
{
	unsigned long flags;
	bool found;

	spin_lock_irqsave(&net->lock, flags);
	found = idx < N2L_NET_SERVERS && net->servers[idx];
	if (found)
		*ss = net->servers[idx]->addr;
	spin_unlock_irqrestore(&net->lock, flags);
	return found;
}

void n2l_net_server_set_draining(struct n2l_net *net, unsigned int idx,
				 bool draining)
{
	struct n2l_nsrv *srv = n2l_srv_get(net, idx);
	bool usable;

	if (!srv)
		return;
	spin_lock_irq(&srv->lock);
	srv->draining = draining;
	usable = !draining && srv->state == N2L_SRV_UP;
	spin_unlock_irq(&srv->lock);
	if (usable)
		n2l_srv_event(srv, N2L_EV_USABLE);
	n2l_srv_put(srv);
}

static void last_word_done(struct n2l_net_req *req)
{
	complete(req->private);
}

/* Take @req out of the FIFO if it is still there; false if it has left. */
static bool srv_unqueue(struct n2l_nsrv *srv, struct n2l_net_req *req)
{
	bool queued;

	spin_lock_irq(&srv->lock);
	queued = req->state == N2L_REQ_QUEUED;
	if (queued) {
		list_del_init(&req->node);
		srv->inflight--;
	}
	spin_unlock_irq(&srv->lock);
	if (queued)
		n2l_req_end(req, N2L_NET_CONN_LOST);
	return queued;
}

/*
 * The last request to a server the device leaves, if it can be reached,
 * bounded by the request timeout: FREE_ALL, or, when the pages stay for a
 * later load, a STATUS behind every invalidation queued (so that what the
 * map no longer names goes). Not sent by then: it never will be in time
 * (a connection that lost it keeps the queue for the next one), so it
 * leaves the queue; sent: the connection goes, and with it the request.
 */
static void srv_last_word(struct n2l_nsrv *srv, bool free_pages)
{
	DECLARE_COMPLETION_ONSTACK(done);
	struct n2l_info info;
	struct n2l_net_req req = {
		.op = free_pages ? N2L_OP_FREE_ALL : N2L_OP_STATUS,
		.after_invals = !free_pages,
		.reply_buf = free_pages ? NULL : &info,
		.reply_len = free_pages ? 0 : sizeof(info),
		.done = last_word_done, .private = &done,
	};

	INIT_LIST_HEAD(&req.node);
	n2l_submit(srv, &req);
	if (!wait_for_completion_timeout(&done, 2 * n2l_req_timeout(srv->net) +
					 msecs_to_jiffies(2 * N2L_TICK_MS))) {
		if (!srv_unqueue(srv, &req))
			n2l_srv_disconnect(srv, NULL);
		wait_for_completion(&done);
	}
}

/*
 * Stop talking to @srv: shut its socket (whatever its thread is blocked
 * in), stop the thread and the works, and fail everything it still has.
 */
static void srv_stop(struct n2l_nsrv *srv)
{
	LIST_HEAD(failed);

	spin_lock_irq(&srv->lock);
	srv->stopping = true;
	spin_unlock_irq(&srv->lock);
	n2l_srv_disconnect(srv, NULL);
	kthread_stop(srv->thread);
	flush_work(&srv->send_work);
	flush_work(&srv->event_work);

	spin_lock_irq(&srv->lock);
	srv->state = N2L_SRV_STOPPED;
	__n2l_fail_queued(srv, &failed, N2L_NET_AWAY, false);
	spin_unlock_irq(&srv->lock);
	n2l_complete_list(&failed);
}

static void server_remove(struct n2l_net *net, unsigned int idx,
			  bool free_pages)
{
	struct n2l_nsrv *srv;

	mutex_lock(&net->table_lock);
	srv = n2l_srv_get(net, idx);
	if (srv) {
		srv_last_word(srv, free_pages);
		srv_stop(srv);
		spin_lock_irq(&net->lock);
		net->servers[idx] = NULL;
		WRITE_ONCE(net->in_use, net->in_use & ~BIT_ULL(idx));
		spin_unlock_irq(&net->lock);
		n2l_srv_put(srv);	/* the table's */
		n2l_srv_put(srv);
	}
	mutex_unlock(&net->table_lock);
}

void n2l_net_server_remove(struct n2l_net *net, unsigned int idx)
{
	server_remove(net, idx, true);
}

/*----------------------------------------------------------------*/
/* What the target may know. */

/* What a server can still take: what it said, less what is on its way. */
static u64 est_free(struct n2l_nsrv *srv)
{
	s64 free = atomic64_read(&srv->free_reported) -
		   atomic_read(&srv->put_pages_inflight);

	return free > 0 ? free : 0;
}

bool n2l_net_server_info(struct n2l_net *net, unsigned int idx,
			 struct n2l_net_info *info)
{
	struct n2l_nsrv *srv = n2l_srv_get(net, idx);

	if (!srv)
		return false;
	info->state = READ_ONCE(srv->state);
	info->draining = READ_ONCE(srv->draining);
	info->free = est_free(srv);
	info->capacity = READ_ONCE(srv->capacity);
	info->server_held = READ_ONCE(srv->server_held);
	info->inflight = READ_ONCE(srv->inflight);
	info->latency_us = atomic_read(&srv->latency_us);
	info->slow = n2l_srv_slow(srv);
	n2l_srv_put(srv);
	return true;
}

static bool __usable(struct n2l_nsrv *srv)
{
	return srv && READ_ONCE(srv->state) == N2L_SRV_UP &&
	       !READ_ONCE(srv->draining);
}

/* Pages the usable servers not in @avoid can still take, in all. */
u64 n2l_net_free_total(struct n2l_net *net, u64 avoid)
{
	unsigned long flags;
	unsigned int i;
	u64 sum = 0, left;

	/*
	 * Every write asks, through the placement policy: only the servers
	 * there are, and on a device without any, not even the lock.
	 */
	if (!(READ_ONCE(net->in_use) & ~avoid))
		return 0;
	spin_lock_irqsave(&net->lock, flags);
	for (left = net->in_use & ~avoid; left; left &= left - 1) {
		i = __ffs64(left);
		if (__usable(net->servers[i]))
			sum += est_free(net->servers[i]);
	}
	spin_unlock_irqrestore(&net->lock, flags);
	return sum;
}

static bool __room_coming(struct n2l_nsrv *srv)
{
	bool coming;

	spin_lock(&srv->lock);
	/* Pairs with the release in n2l_req_end(): the free count is seen. */
	coming = smp_load_acquire(&srv->inval_req.state) != N2L_REQ_IDLE;
	coming |= atomic_read(&srv->put_pages_inflight) ||
		  srv->inval_head != srv->inval_tail;
	spin_unlock(&srv->lock);
	return coming;
}

/*
 * A server being reconciled (see n2l_net_inval(): the invalidations that
 * overflowed its ring) will have the room they name, though nothing is in
 * flight yet. The end makes it usable, which wakes the writes.
 */
static bool __reconcile_coming(struct n2l_nsrv *srv)
{
	return srv && !READ_ONCE(srv->draining) &&
	       READ_ONCE(srv->state) == N2L_SRV_RECONCILING;
}

bool n2l_net_room_coming(struct n2l_net *net)
{
	unsigned long flags;
	bool coming = false;
	unsigned int i;

	/*
	 * Asked for before looking, so that no answer slips between: an
	 * invalidation's answer raises the room event; a PUT in flight ends
	 * in the owner's write completion, which tries again anyway. The
	 * exchange orders the ask before the look. An answer the look finds
	 * done has its free count visible (the acquire in __room_coming()):
	 * a caller that looks at the room again after this sees it.
	 */
	atomic_xchg(&net->room_wanted, 1);
	spin_lock_irqsave(&net->lock, flags);
	for (i = 0; i < N2L_NET_SERVERS && !coming; i++)
		coming = (__usable(net->servers[i]) &&
			  __room_coming(net->servers[i])) ||
			 __reconcile_coming(net->servers[i]);
	spin_unlock_irqrestore(&net->lock, flags);
	return coming;
}

/*
 * The room a write may count on at server @i: what it claims, but never
 * more than the device has slots. A server that lies about its room then
 * ties with every honest server that could take the whole device (see
 * __roomiest() for ties): it draws its share of the writes, not all.
 */
static u64 __room(struct n2l_net *net, unsigned int i)
{
	return min(est_free(net->servers[i]), net->nr_keys);
}

static u32 held_at(const u32 *held, unsigned int i)
{
	return held ? READ_ONCE(held[i]) : 0;
}

/*
 * The usable server not in @taken with the most room for @pages; -1 if
 * none. Ties go to the server holding fewer of our pages (@held: the
 * device's count per server, read without its lock; a hint).
 */
static int __roomiest(struct n2l_net *net, u32 pages, u64 taken,
		      const u32 *held, bool slow)
{
	u64 best_free = 0, f;
	unsigned int i;
	int best = -1;

	for (i = 0; i < N2L_NET_SERVERS; i++) {
		struct n2l_nsrv *srv = net->servers[i];

		if ((taken & BIT_ULL(i)) || !__usable(srv) ||
		    n2l_srv_slow(srv) != slow)
			continue;
		f = __room(net, i);
		if (f < pages)
			continue;
		if (best < 0 || f > best_free ||
		    (f == best_free && held_at(held, i) < held_at(held, best))) {
			best_free = f;
			best = i;
		}
	}
	return best;
}

/*
 * Up to @want usable servers not in @avoid with room for @pages pages,
 * those with the most room first, slow ones only when the others are
 * not enough, into @out; how many.
 */
static unsigned int __best(struct n2l_net *net, u32 pages, u64 avoid,
			   const u32 *held, unsigned int want, u8 *out)
{
	u64 taken = avoid;
	unsigned int n;
	int best;

	for (n = 0; n < want; n++) {
		best = __roomiest(net, pages, taken, held, false);
		if (best < 0)
			best = __roomiest(net, pages, taken, held, true);
		if (best < 0)
			break;
		out[n] = best;
		taken |= BIT_ULL(best);
	}
	return n;
}

unsigned int n2l_net_best(struct n2l_net *net, u32 pages, u64 avoid,
			  const u32 *held, unsigned int want, u8 *out)
{
	unsigned long flags;
	unsigned int n;

	spin_lock_irqsave(&net->lock, flags);
	n = __best(net, pages, avoid, held, want, out);
	spin_unlock_irqrestore(&net->lock, flags);
	return n;
}

/*
 * As n2l_net_best(), and the room taken in the same critical section: two
 * writes placed at once (a bio mapped while the worker retries a deferred
 * one) must not both count on the last free pages of a server, or one of
 * them is refused and, with every copy refused, fails with ENOSPC.
 */
unsigned int n2l_net_reserve(struct n2l_net *net, u32 pages, u64 avoid,
			     const u32 *held, unsigned int want, u8 *out)
{
	unsigned long flags;
	unsigned int n, i;

	spin_lock_irqsave(&net->lock, flags);
	n = __best(net, pages, avoid, held, want, out);
	for (i = 0; i < n; i++)
		atomic_add(pages, &net->servers[out[i]]->put_pages_inflight);
	spin_unlock_irqrestore(&net->lock, flags);
	return n;
}

void n2l_net_unreserve(struct n2l_net *net, unsigned int idx, u32 pages)
{
	struct n2l_nsrv *srv = n2l_srv_get(net, idx);

	if (srv) {
		atomic_sub(pages, &srv->put_pages_inflight);
		n2l_srv_put(srv);
	}
}

int n2l_net_server_name(struct n2l_net *net, unsigned int idx, char *buf,
			size_t len)
{
	struct n2l_nsrv *srv = n2l_srv_get(net, idx);
	int n;

	if (!srv)
		return -ENOENT;
	n = scnprintf(buf, len, "%s", srv->name);
	n2l_srv_put(srv);
	return n;
}

bool n2l_net_usable(struct n2l_net *net, unsigned int idx)
{
	struct n2l_net_info info;

	return n2l_net_server_info(net, idx, &info) &&
	       info.state == N2L_SRV_UP && !info.draining;
}

bool n2l_net_readable(struct n2l_net *net, unsigned int idx)
{
	struct n2l_net_info info;

	return n2l_net_server_info(net, idx, &info) &&
	       (info.state == N2L_SRV_UP || info.state == N2L_SRV_RECONCILING);
}

u64 n2l_net_free(struct n2l_net *net, unsigned int idx)
{
	struct n2l_net_info info;

	return n2l_net_server_info(net, idx, &info) ? info.free : 0;
}

u32 n2l_net_inflight(struct n2l_net *net, unsigned int idx)
{
	struct n2l_net_info info;

	return n2l_net_server_info(net, idx, &info) ? info.inflight : 0;
}

int n2l_net_emit_stats(struct n2l_net *net, unsigned int idx, char *buf,
		       size_t len)
{
	struct n2l_nsrv *srv = n2l_srv_get(net, idx);
	struct n2l_srv_stats *st;
	int n;

	if (!srv)
		return 0;
	st = &srv->stats;
	n = scnprintf(buf, len,
		      "puts=%llu gets=%llu full=%llu timeouts=%llu reconnects=%llu protocol_errors=%llu bad_seals=%llu reconciled=%llu orphans=%llu missing=%llu server_held=%llu latency_us=%d slow=%d",
		      atomic64_read(&st->puts), atomic64_read(&st->gets),
		      atomic64_read(&st->full), atomic64_read(&st->timeouts),
		      atomic64_read(&st->reconnects),
		      atomic64_read(&st->protocol_errors),
		      atomic64_read(&st->bad_seals), atomic64_read(&st->reconciled),
		      atomic64_read(&st->orphans), atomic64_read(&st->missing),
		      READ_ONCE(srv->server_held), atomic_read(&srv->latency_us),
		      n2l_srv_slow(srv));
	n2l_srv_put(srv);
	return n;
}

void n2l_net_set_timeouts(struct n2l_net *net, unsigned int timeout_ms,
			  unsigned int dead_after_ms)
{
	WRITE_ONCE(net->timeout_ms, timeout_ms);
	WRITE_ONCE(net->dead_after_ms, dead_after_ms);
}

/*----------------------------------------------------------------*/
/* The tick. */

static bool __timed_out(struct n2l_nsrv *srv, unsigned long timeout)
{
	struct n2l_net_req *req;
	unsigned int tag;

	for (tag = 0; tag < N2L_TAGS; tag++) {
		req = srv->tags[tag];
		if (req && time_after(jiffies, req->sent_at + timeout))
			return true;
	}
	return false;
}

/*
 * Down for dead_after_ms: away. What waits for it fails now (reads go to
 * other copies or fail), and the target repairs what it held.
 */
static bool __turn_away(struct n2l_nsrv *srv, struct list_head *failed)
{
	if ((srv->state != N2L_SRV_DOWN && srv->state != N2L_SRV_CONNECTING) ||
	    !time_after(jiffies, srv->down_since + n2l_dead_after(srv->net)))
		return false;
	srv->state = N2L_SRV_AWAY;
	__n2l_fail_queued(srv, failed, N2L_NET_AWAY, false);
	return true;
}

static void tick_server(struct n2l_net *net, struct n2l_nsrv *srv)
{
	struct socket *stuck = NULL;
	LIST_HEAD(failed);
	bool away, poll, kick;

	spin_lock_irq(&srv->lock);
	if (__n2l_connected(srv) && __timed_out(srv, n2l_req_timeout(net)))
		stuck = srv->sock;
	/*
	 * Requests waiting to be sent: the send work runs again whenever one
	 * is queued or a tag frees; this kick also covers a send that was
	 * held back (debug_hold) with no request to follow.
	 */
	kick = __n2l_connected(srv) && !list_empty(&srv->queue);
	away = __turn_away(srv, &failed);
	/*
	 * Every reply says how much room the server has, but only STATUS
	 * what it holds for us and donates: asked every N2L_STATUS_MS, busy
	 * or not, or those stay as the connect found them.
	 */
	poll = srv->state == N2L_SRV_UP &&
	       srv->status_req.state == N2L_REQ_IDLE &&
	       time_after(jiffies, READ_ONCE(srv->last_status) +
			  msecs_to_jiffies(N2L_STATUS_MS));
	if (poll)
		WRITE_ONCE(srv->last_status, jiffies);
	spin_unlock_irq(&srv->lock);

	n2l_complete_list(&failed);
	if (stuck) {
		n2l_srv_disconnect(srv, stuck);
		atomic64_inc(&srv->stats.timeouts);
		pr_warn_ratelimited("nswap2l: %s: server %s: request timed out after %u ms\n",
				    net->devname, srv->name,
				    READ_ONCE(net->timeout_ms));
	}
	if (away) {
		pr_warn("nswap2l: %s: server %s away for %u ms: its pages are unavailable until it returns\n",
			net->devname, srv->name, READ_ONCE(net->dead_after_ms));
		n2l_srv_event(srv, N2L_EV_AWAY);
	}
	if (poll)
		n2l_submit(srv, &srv->status_req);
	else if (kick)
		queue_work(net->send_wq, &srv->send_work);
}

void n2l_tick(struct work_struct *w)
{
	struct n2l_net *net = container_of(to_delayed_work(w), struct n2l_net,
					   tick);
	struct n2l_nsrv *srv;
	unsigned int i;

	for (i = 0; i < N2L_NET_SERVERS; i++) {
		srv = n2l_srv_get(net, i);
		if (!srv)
			continue;
		tick_server(net, srv);
		n2l_srv_put(srv);
	}
	queue_delayed_work(net->tick_wq, &net->tick,
			   msecs_to_jiffies(N2L_TICK_MS));
}

/*----------------------------------------------------------------*/

static int net_init(struct n2l_net *net, const struct n2l_net_config *cfg)
{
	strscpy(net->devname, cfg->devname, sizeof(net->devname));
	net->ops = cfg->ops;
	net->owner = cfg->owner;
	net->nr_keys = cfg->nr_keys;
	do {
		net->device = get_random_u64();
	} while (!net->device);
	if (cfg->identity) {
		net->secure = true;
		strscpy_pad(net->identity, cfg->identity, sizeof(net->identity));
		memcpy(net->psk, cfg->psk, N2L_PSK_LEN);
	}
	net->timeout_ms = 5000;
	net->dead_after_ms = 30000;
	spin_lock_init(&net->lock);
	mutex_init(&net->table_lock);
	mutex_init(&net->claim_lock);
	net->claim_kvs = kmalloc_array(N2L_MAX_PAGES, sizeof(*net->claim_kvs),
				       GFP_KERNEL);
	net->claim_bitmap = kmalloc(DIV_ROUND_UP(N2L_MAX_PAGES, 8), GFP_KERNEL);
	if (!net->claim_kvs || !net->claim_bitmap || n2l_reserve_init(net))
		return -ENOMEM;
	INIT_DELAYED_WORK(&net->tick, n2l_tick);
	net->send_wq = alloc_workqueue("nswap2l-send-%s", WQ_MEM_RECLAIM |
				       WQ_UNBOUND, 0, net->devname);
	net->event_wq = alloc_workqueue("nswap2l-event-%s", WQ_MEM_RECLAIM |
					WQ_UNBOUND, 0, net->devname);
	net->tick_wq = alloc_ordered_workqueue("nswap2l-tick-%s", WQ_MEM_RECLAIM,
					       net->devname);
	if (!net->send_wq || !net->event_wq || !net->tick_wq)
		return -ENOMEM;
	return n2l_sealer_init(net, cfg->page_key);
}

static void net_free(struct n2l_net *net)
{
	n2l_sealer_exit(net);
	n2l_reserve_exit(net);
	kfree(net->claim_bitmap);
	kfree(net->claim_kvs);
	if (net->tick_wq)
		destroy_workqueue(net->tick_wq);
	if (net->event_wq)
		destroy_workqueue(net->event_wq);
	if (net->send_wq)
		destroy_workqueue(net->send_wq);
	memzero_explicit(net->psk, sizeof(net->psk));
	kfree(net);
}

struct n2l_net *n2l_net_create(const struct n2l_net_config *cfg)
{
	struct n2l_net *net = kzalloc(sizeof(*net), GFP_KERNEL);
	int r;

	if (!net)
		return ERR_PTR(-ENOMEM);
	r = net_init(net, cfg);
	if (r) {
		net_free(net);
		return ERR_PTR(r);
	}
	queue_delayed_work(net->tick_wq, &net->tick, msecs_to_jiffies(N2L_TICK_MS));
	return net;
}

/*
 * The device is going: nothing waits for a server to come back any more.
 * Requests queued for servers that are not connected fail now, and so do
 * new ones; connected servers are still served (their pages are dropped).
 */
void n2l_net_stop_waiting(struct n2l_net *net)
{
	struct n2l_nsrv *srv;
	LIST_HEAD(failed);
	unsigned int i;

	WRITE_ONCE(net->stopping, true);
	for (i = 0; i < N2L_NET_SERVERS; i++) {
		srv = n2l_srv_get(net, i);
		if (!srv)
			continue;
		spin_lock_irq(&srv->lock);
		if (!__n2l_connected(srv))
			__n2l_fail_queued(srv, &failed, N2L_NET_AWAY, false);
		spin_unlock_irq(&srv->lock);
		n2l_complete_list(&failed);
		n2l_srv_put(srv);
	}
}

/*
 * The device is known to its servers by @device from now on (a device
 * whose slot map outlives it comes back under the same id); called before
 * any server is added.
 */
void n2l_net_set_device(struct n2l_net *net, u64 device)
{
	WARN_ON_ONCE(!device);
	net->device = device;
}

/* Going, the device leaves its pages on its servers, for a later load. */
void n2l_net_keep_pages(struct n2l_net *net)
{
	net->keep_pages = true;
}

/*
 * The tick runs until every server is stopped: dropping pages and
 * stopping wait for requests that only its timeouts may end.
 */
void n2l_net_destroy(struct n2l_net *net)
{
	unsigned int i;

	if (!net)
		return;
	n2l_net_stop_waiting(net);
	for (i = 0; i < N2L_NET_SERVERS; i++)
		server_remove(net, i, !net->keep_pages);
	cancel_delayed_work_sync(&net->tick);
	net_free(net);
}
