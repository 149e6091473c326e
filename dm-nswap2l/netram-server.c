// SPDX-License-Identifier: GPL-2.0-only
/*
 * Page servers of a device: adding, finding, stopping and retiring them,
 * and the tick that watches them (request timeouts, capacity polling,
 * servers unreachable for too long).
 */
#include "nswap2l.h"

const char *n2l_server_state_name(int state)
{
	static const char * const names[] = {
		[N2L_SRV_CONNECTING] = "connecting",
		[N2L_SRV_UP] = "up",
		[N2L_SRV_DOWN] = "down",
		[N2L_SRV_DRAINING] = "draining",
		[N2L_SRV_DEAD] = "dead",
	};

	return state >= 0 && state < ARRAY_SIZE(names) ? names[state] : "?";
}
/*----------------------------------------------------------------*/
/* Life cycle. */

static void server_free(struct n2l_server *srv)
{
	kvfree(srv->invals);
	kvfree(srv->inval_buf);
	kfree(srv);
}

static void server_release(struct kref *ref)
{
	server_free(container_of(ref, struct n2l_server, ref));
}

/* Server @idx, referenced so that it outlives a retirement; or NULL. */
struct n2l_server *n2l_server_get(struct n2l_netram *nr, u32 idx)
{
	struct n2l_server *srv = nr->servers[idx];

	lockdep_assert_held(&nr->store->lock);
	if (srv)
		kref_get(&srv->ref);
	return srv;
}

void n2l_server_put(struct n2l_server *srv)
{
	kref_put(&srv->ref, server_release);
}

static void inval_done(struct n2l_netreq *req)
{
	struct n2l_server *srv = req->srv;

	if (req->status == N2L_REQ_CONN_LOST) {
		/* connection_down() already put it back in the FIFO */
		return;
	}
	n2l_netram_kick_invals(srv);
}

static void status_done(struct n2l_netreq *req)
{
	struct n2l_server *srv = req->srv;

	if (req->status == N2L_ST_OK)
		n2l_note_info(srv, &srv->status_info);
}

static int pick_index(struct n2l_netram *nr)
{
	unsigned int i;

	for (i = 0; i < N2L_MAX_SERVERS; i++)
		if (!nr->servers[i])
			return i;
	return -ENOSPC;
}

/*
 * A new server, connecting in the background. Called with the store's
 * config_lock held; the slot map sees it once it is in nr->servers[].
 */
struct n2l_server *n2l_server_add(struct n2l_netram *nr, const char *name,
				  bool learned, char **error)
{
	struct n2l_store *s = nr->store;
	struct n2l_server *srv;
	int idx;

	lockdep_assert_held(&s->config_lock);
	idx = pick_index(nr);
	if (idx < 0) {
		*error = "Too many servers";
		return ERR_PTR(-ENOSPC);
	}
	srv = kzalloc(sizeof(*srv), GFP_KERNEL);
	if (!srv)
		goto nomem;
	if (n2l_parse_addr(name, &srv->addr, &srv->addrlen)) {
		kfree(srv);
		*error = "Invalid server address: use a.b.c.d:port or [v6]:port";
		return ERR_PTR(-EINVAL);
	}
	srv->invals = kvcalloc(N2L_INVAL_RING, sizeof(*srv->invals), GFP_KERNEL);
	srv->inval_buf = kvcalloc(N2L_MAX_PAGES, sizeof(*srv->inval_buf),
				  GFP_KERNEL);
	if (!srv->invals || !srv->inval_buf)
		goto nomem_free;

	kref_init(&srv->ref);
	srv->nr = nr;
	srv->idx = idx;
	srv->learned = learned;
	strscpy(srv->name, name, sizeof(srv->name));
	srv->state = N2L_SRV_CONNECTING;
	spin_lock_init(&srv->lock);
	mutex_init(&srv->sock_lock);
	INIT_LIST_HEAD(&srv->queue);
	INIT_LIST_HEAD(&srv->srvops);
	INIT_WORK(&srv->send_work, n2l_send_work);
	INIT_WORK(&srv->srvop_work, n2l_srvop_work);
	init_completion(&srv->stopped);
	srv->inval_req.srv = srv;
	srv->inval_req.done = inval_done;
	INIT_LIST_HEAD(&srv->inval_req.node);
	srv->status_req.srv = srv;
	srv->status_req.op = N2L_OP_STATUS;
	srv->status_req.reply_buf = &srv->status_info;
	srv->status_req.done = status_done;
	INIT_LIST_HEAD(&srv->status_req.node);

	srv->thread = kthread_create(n2l_server_thread, srv, "nswap2l-%s/%d",
				     dm_device_name(s->md), idx);
	if (IS_ERR(srv->thread))
		goto nomem_free;

	spin_lock_irq(&s->lock);
	nr->servers[idx] = srv;
	spin_unlock_irq(&s->lock);
	wake_up_process(srv->thread);
	return srv;

nomem_free:
	server_free(srv);
nomem:
	*error = "Cannot allocate a server";
	return ERR_PTR(-ENOMEM);
}

/* The live server called @name; under the store lock or config_lock. */
struct n2l_server *__n2l_server_find(struct n2l_netram *nr, const char *name)
{
	unsigned int i;

	for (i = 0; i < N2L_MAX_SERVERS; i++)
		if (nr->servers[i] && nr->servers[i]->state != N2L_SRV_DEAD &&
		    !strcmp(nr->servers[i]->name, name))
			return nr->servers[i];
	return NULL;
}

/*
 * Stop talking to @srv and fail what it still has queued: reads with
 * "dead" (their slots are lost), writes back to the core. The server
 * stays in the table while slots point at it.
 */
void n2l_server_stop(struct n2l_server *srv, bool dead)
{
	struct n2l_netreq *req, *tmp;
	struct n2l_srvop *op, *otmp;
	LIST_HEAD(failed);

	spin_lock_irq(&srv->lock);
	if (dead)
		srv->state = N2L_SRV_DEAD;
	spin_unlock_irq(&srv->lock);
	n2l_server_disconnect(srv, NULL);

	if (srv->thread) {
		kthread_stop(srv->thread);
		srv->thread = NULL;
	}
	flush_work(&srv->send_work);
	flush_work(&srv->srvop_work);

	spin_lock_irq(&srv->lock);
	srv->state = N2L_SRV_DEAD;
	list_for_each_entry_safe(req, tmp, &srv->queue, node) {
		list_del(&req->node);
		req->status = N2L_REQ_DEAD;
		list_add_tail(&req->node, &failed);
	}
	srv->inval_head = srv->inval_tail;
	list_for_each_entry_safe(op, otmp, &srv->srvops, node) {
		list_del(&op->node);
		n2l_srvop_free(op);
	}
	spin_unlock_irq(&srv->lock);
	n2l_complete_reqs(&failed);
}

/*
 * Break @srv's connection (only if it is still @only, when given) from
 * outside its thread, which sees the socket fail and cleans up.
 */
void n2l_server_disconnect(struct n2l_server *srv, struct socket *only)
{
	mutex_lock(&srv->sock_lock);
	if (srv->sock && (!only || srv->sock == only))
		kernel_sock_shutdown(srv->sock, SHUT_RDWR);
	mutex_unlock(&srv->sock_lock);
}

/* Called once no slot points at @srv any more, with config_lock held. */
void n2l_server_remove(struct n2l_netram *nr, struct n2l_server *srv)
{
	struct n2l_store *s = nr->store;

	lockdep_assert_held(&s->config_lock);
	n2l_server_stop(srv, true);
	spin_lock_irq(&s->lock);
	nr->servers[srv->idx] = NULL;
	spin_unlock_irq(&s->lock);
	n2l_server_put(srv);
}

/*----------------------------------------------------------------*/
/* The tick: timeouts, capacity polling, dead servers. */

#define N2L_TICK_MS	200

static bool __timed_out(struct n2l_server *srv, unsigned long timeout)
{
	unsigned int tag;

	for (tag = 0; tag < N2L_TAGS; tag++)
		if (srv->tags[tag] &&
		    time_after(jiffies, srv->tags[tag]->sent_at + timeout))
			return true;
	return false;
}

static void check_timeouts(struct n2l_netram *nr, struct n2l_server *srv)
{
	struct socket *stuck = NULL;

	spin_lock_irq(&srv->lock);
	if (n2l_connected(srv) && __timed_out(srv, n2l_req_timeout(nr)))
		stuck = srv->sock;
	spin_unlock_irq(&srv->lock);
	if (stuck) {
		n2l_server_disconnect(srv, stuck);
		atomic64_inc(&srv->stats.timeouts);
		DMWARN_LIMIT("%s: server %s: request timed out after %u ms",
			     dm_device_name(nr->store->md), srv->name,
			     READ_ONCE(nr->timeout_ms));
	}
}

/*
 * Reads retried for longer than a server may stay away fail: the server
 * may be answering everything else, but not them.
 */
static void expire_reads(struct n2l_netram *nr, struct n2l_server *srv)
{
	unsigned long limit = msecs_to_jiffies(READ_ONCE(nr->dead_after_ms));
	struct n2l_netreq *req, *tmp;
	LIST_HEAD(expired);

	spin_lock_irq(&srv->lock);
	list_for_each_entry_safe(req, tmp, &srv->queue, node) {
		if (req->op == N2L_OP_GET && req->first_sent &&
		    time_after(jiffies, req->first_sent + limit)) {
			list_move_tail(&req->node, &expired);
			req->status = N2L_REQ_DEAD;
		}
	}
	spin_unlock_irq(&srv->lock);
	if (!list_empty(&expired))
		DMERR_LIMIT("%s: server %s: reads unanswered for %u ms: failing them",
			    dm_device_name(nr->store->md), srv->name,
			    READ_ONCE(nr->dead_after_ms));
	n2l_complete_reqs(&expired);
}

static void poll_status(struct n2l_netram *nr, struct n2l_server *srv)
{
	unsigned long due = READ_ONCE(srv->last_reply) +
			    msecs_to_jiffies(READ_ONCE(nr->status_ms));

	if (srv->state == N2L_SRV_UP && time_after(jiffies, due) &&
	    srv->status_req.state == N2L_REQ_IDLE)
		n2l_server_submit(srv, &srv->status_req);
}

/*
 * Unreachable for longer than dead_after_ms: the slots it held are lost.
 * It is retired, and its address starts over as a new, empty server.
 */
static void declare_dead(struct n2l_netram *nr, struct n2l_server *srv)
{
	struct n2l_store *s = nr->store;
	char *error;
	u32 held;

	n2l_server_stop(srv, true);
	spin_lock_irq(&s->lock);
	held = srv->held;
	spin_unlock_irq(&s->lock);
	DMERR("%s: server %s declared dead after %u ms unreachable: %u slots lost",
	      dm_device_name(s->md), srv->name, READ_ONCE(nr->dead_after_ms), held);
	if (!srv->learned && IS_ERR(n2l_server_add(nr, srv->name, false, &error)))
		DMERR("%s: cannot reconnect to %s: %s", dm_device_name(s->md),
		      srv->name, error);
}

/* Connect to peers that MOVED messages named. */
static void add_wanted(struct n2l_netram *nr)
{
	struct n2l_store *s = nr->store;
	char name[N2L_ADDR_LEN];
	unsigned int i;
	char *error;

	for (i = 0; i < N2L_MAX_WANTED; i++) {
		spin_lock_irq(&s->lock);
		strscpy(name, nr->wanted[i], sizeof(name));
		nr->wanted[i][0] = '\0';
		spin_unlock_irq(&s->lock);
		if (name[0] && !__n2l_server_find(nr, name) &&
		    IS_ERR(n2l_server_add(nr, name, true, &error)))
			DMERR_LIMIT("%s: cannot add peer %s: %s",
				    dm_device_name(s->md), name, error);
	}
}

static void tick(struct work_struct *w)
{
	struct n2l_netram *nr = container_of(to_delayed_work(w),
					     struct n2l_netram, tick);
	struct n2l_store *s = nr->store;
	unsigned long dead_after = msecs_to_jiffies(READ_ONCE(nr->dead_after_ms));
	struct n2l_server *srv;
	unsigned int i;
	u32 held;

	mutex_lock(&s->config_lock);
	add_wanted(nr);
	for (i = 0; i < N2L_MAX_SERVERS; i++) {
		srv = nr->servers[i];
		if (!srv)
			continue;
		if (srv->state == N2L_SRV_DEAD) {
			spin_lock_irq(&s->lock);
			held = srv->held;
			spin_unlock_irq(&s->lock);
			if (!held)
				n2l_server_remove(nr, srv);
			continue;
		}
		check_timeouts(nr, srv);
		expire_reads(nr, srv);
		poll_status(nr, srv);
		if (srv->down_since &&
		    time_after(jiffies, srv->down_since + dead_after))
			declare_dead(nr, srv);
	}
	mutex_unlock(&s->config_lock);
	/* Writes waiting for a server must learn when their wait is over. */
	if (!bio_list_empty(&s->deferred))
		queue_work(s->wq, &s->worker);
	queue_delayed_work(nr->wq, &nr->tick, msecs_to_jiffies(N2L_TICK_MS));
}

int n2l_netram_init(struct n2l_netram *nr, struct n2l_store *s)
{
	nr->store = s;
	nr->client_id = get_random_u64();
	nr->timeout_ms = 5000;
	nr->dead_after_ms = 30000;
	nr->status_ms = 1000;
	atomic64_set(&nr->failed_reads, 0);
	INIT_DELAYED_WORK(&nr->tick, tick);
	INIT_DELAYED_WORK(&nr->drain, n2l_drain_work);
	nr->wq = alloc_workqueue("nswap2l-net-%s", WQ_MEM_RECLAIM | WQ_UNBOUND,
				 0, dm_device_name(s->md));
	if (!nr->wq)
		return -ENOMEM;
	queue_delayed_work(nr->wq, &nr->tick, msecs_to_jiffies(N2L_TICK_MS));
	return 0;
}

/* Tell every reachable server to drop our pages, then disconnect. */
void n2l_netram_exit(struct n2l_netram *nr)
{
	struct n2l_store *s = nr->store;
	unsigned int i;

	if (!nr->wq)
		return;
	cancel_delayed_work_sync(&nr->tick);
	cancel_delayed_work_sync(&nr->drain);
	mutex_lock(&s->config_lock);
	for (i = 0; i < N2L_MAX_SERVERS; i++) {
		if (!nr->servers[i])
			continue;
		n2l_server_free_all_and_stop(nr->servers[i]);
		n2l_server_remove(nr, nr->servers[i]);
	}
	mutex_unlock(&s->config_lock);
	destroy_workqueue(nr->wq);
	nr->wq = NULL;
}

static void free_all_done(struct n2l_netreq *req)
{
	complete(req->private);
}

/* FREE_ALL, waiting at most one request timeout for the answer. */
void n2l_server_free_all_and_stop(struct n2l_server *srv)
{
	DECLARE_COMPLETION_ONSTACK(done);
	struct n2l_netreq req = {
		.op = N2L_OP_FREE_ALL,
		.done = free_all_done,
		.private = &done,
	};

	if (srv->state == N2L_SRV_UP || srv->state == N2L_SRV_DRAINING) {
		INIT_LIST_HEAD(&req.node);
		n2l_server_submit(srv, &req);
		if (!wait_for_completion_timeout(&done,
						 n2l_req_timeout(srv->nr))) {
			/* Stopping fails it, so @req leaves every list. */
			n2l_server_stop(srv, true);
			wait_for_completion(&done);
		}
	}
	n2l_server_stop(srv, true);
}
