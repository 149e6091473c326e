// SPDX-License-Identifier: GPL-2.0-only
/*
 * A server's events, in its event work: what a connect means (a new epoch
 * is a server that restarted), reconciliation, turning away, and the
 * requests the server sends us. One server's events never run at once;
 * the target's callbacks may wait for requests and block I/O, never for
 * another event.
 *
 * Reconciliation makes a server hold exactly what the slot map points at:
 *
 *  1. the server takes no writes (reconciling), and writes it had been
 *     given settle first (the target waits for them in list_copies); a
 *     restart (a new epoch) found at this connect or an earlier one is
 *     reported first, in the same step: its copies are gone, and a server
 *     must never take writes before that is known (the report would
 *     drop it from their slots too);
 *  2. RETAIN_BEGIN opens a generation;
 *  3. RETAIN lists, in batches, every copy the slot map expects there;
 *     the server marks each and says which it does not have: those copies
 *     are lost, and the target drops this server from their slots;
 *  4. RETAIN_END drops every page not marked: orphans of writes whose
 *     answer was lost, copies freed while it was unreachable, and pages
 *     whose invalidation could not be sent;
 *  5. the server takes writes again.
 */
#include <linux/sched/mm.h>

#include "nnet.h"

static int sync_simple(struct n2l_nsrv *srv, u8 op, u64 key, void *reply,
		       u32 reply_len)
{
	struct n2l_net_req req = {
		.op = op, .key = key, .reply_buf = reply, .reply_len = reply_len,
	};

	INIT_LIST_HEAD(&req.node);
	return n2l_net_sync(srv->net, srv->idx, &req);
}

/* RETAIN @n copies; the missing ones are reported to the target. */
static int retain_batch(struct n2l_nsrv *srv, struct n2l_copy *copies, u32 n)
{
	struct n2l_net *net = srv->net;
	struct n2l_net_req req = {
		.op = N2L_OP_RETAIN, .count = n, .after_invals = true,
		.buf = srv->retain_kvs,
		.buf_len = n * sizeof(struct n2l_kv),
		.reply_buf = srv->retain_bitmap, .reply_len = DIV_ROUND_UP(n, 8),
	};
	u32 i, m = 0, named;
	int r;

	for (i = 0; i < n; i++) {
		srv->retain_kvs[i].key = cpu_to_le64(copies[i].key);
		srv->retain_kvs[i].vers = cpu_to_le64(copies[i].vers);
	}
	INIT_LIST_HEAD(&req.node);
	r = n2l_net_sync(net, srv->idx, &req);
	if (r)
		return r;
	for (i = 0; i < n; i++)
		if (n2l_retain_missing(srv->retain_bitmap, i))
			copies[m++] = copies[i];
	if (!m)
		return 0;
	/*
	 * A copy listed may have been dropped on purpose since (its slot
	 * overwritten, its invalidation sent ahead of this RETAIN): only
	 * those the slot map still names were lost.
	 */
	named = net->ops->missing(net->owner, srv->idx, copies, m);
	if (named) {
		atomic64_add(named, &srv->stats.missing);
		pr_err_ratelimited("nswap2l: %s: server %s no longer has %u of our pages\n",
				   net->devname, srv->name, named);
	}
	return 0;
}

/*
 * Stop taking writes, and take the restart to report (sticky until a
 * reconciliation takes it: a connection that came and went keeps it for
 * the next); false if the connection is not the one we reconcile.
 */
static bool start_reconciling(struct n2l_nsrv *srv, u32 *gen, bool *restarted)
{
	LIST_HEAD(failed);
	bool ok;

	spin_lock_irq(&srv->lock);
	ok = srv->state == N2L_SRV_UP || srv->state == N2L_SRV_RECONCILING;
	if (ok) {
		srv->state = N2L_SRV_RECONCILING;
		*gen = srv->conn_gen;
		*restarted = srv->restarted;
		srv->restarted = false;
		__n2l_fail_queued(srv, &failed, N2L_NET_AWAY, true);
	}
	spin_unlock_irq(&srv->lock);
	n2l_complete_list(&failed);
	return ok;
}

static bool finish_reconciling(struct n2l_nsrv *srv, u32 gen)
{
	bool ok;

	spin_lock_irq(&srv->lock);
	ok = srv->state == N2L_SRV_RECONCILING && srv->conn_gen == gen;
	if (ok)
		srv->state = N2L_SRV_UP;
	spin_unlock_irq(&srv->lock);
	return ok;
}

/*
 * The next connection reconciles again: make it happen, unless it has
 * already come (its own reconciliation is queued), which it must not lose.
 */
static void end_connection(struct n2l_nsrv *srv, u32 gen)
{
	bool same;

	spin_lock_irq(&srv->lock);
	same = srv->conn_gen == gen;
	spin_unlock_irq(&srv->lock);
	if (same)
		n2l_srv_disconnect(srv, NULL);
}

static void reconcile(struct n2l_nsrv *srv)
{
	struct n2l_net *net = srv->net;
	struct n2l_copy *copies = (struct n2l_copy *)(srv->retain_kvs +
						      N2L_RETAIN_BATCH);
	struct n2l_retained done;
	bool restarted;
	u64 cursor = 0, g;
	u32 gen;
	int r, n;

	n2l_debug_hold(N2L_HOLD_RECONCILE);
	if (!start_reconciling(srv, &gen, &restarted))
		return;
	if (restarted)
		net->ops->restarted(net->owner, srv->idx);
	g = ++srv->retain_gen;
	r = sync_simple(srv, N2L_OP_RETAIN_BEGIN, g, NULL, 0);
	while (!r) {
		n = net->ops->list_copies(net->owner, srv->idx, &cursor, copies,
					  N2L_RETAIN_BATCH);
		if (n <= 0) {
			r = n;
			break;
		}
		r = retain_batch(srv, copies, n);
	}
	if (!r)
		r = sync_simple(srv, N2L_OP_RETAIN_END, g, &done, sizeof(done));
	if (r) {
		pr_warn_ratelimited("nswap2l: %s: server %s: reconciliation stopped (%d)\n",
				    net->devname, srv->name, r);
		end_connection(srv, gen);
		return;
	}
	atomic64_inc(&srv->stats.reconciled);
	atomic64_add(le64_to_cpu(done.dropped), &srv->stats.orphans);
	WRITE_ONCE(srv->server_held, le64_to_cpu(done.held));
	if (done.dropped)
		pr_info("nswap2l: %s: server %s: reconciled, %llu stray pages dropped\n",
			net->devname, srv->name, le64_to_cpu(done.dropped));
	if (finish_reconciling(srv, gen))
		net->ops->usable(net->owner, srv->idx);
}

/*----------------------------------------------------------------*/
/* MOVED and RETURN. */

static void answer_done(struct n2l_net_req *req)
{
	n2l_srvop_free(req->private);
}

/* Our answer goes on the connection that asked, or nowhere. */
void n2l_srvop_answer(struct n2l_nsrv *srv, struct n2l_srvop *op, int status)
{
	struct n2l_net_req *req = &op->reply;

	memset(req, 0, sizeof(*req));
	INIT_LIST_HEAD(&req->node);
	req->op = op->op;
	req->flags = N2L_F_REPLY;
	req->id = op->id;
	req->count = op->count;
	req->status = status;
	req->conn_gen = op->conn_gen;
	req->done = answer_done;
	req->private = op;
	n2l_submit(srv, req);
}

static int handle_moved(struct n2l_nsrv *srv, struct n2l_srvop *op)
{
	struct n2l_net *net = srv->net;
	int to = n2l_net_server_find(net, op->addr);

	/* Only to a server of ours, and one we can read back from. */
	if (to < 0 || to == srv->idx || !n2l_net_usable(net, to)) {
		pr_warn_ratelimited("nswap2l: %s: server %s moved pages to %s, %s: refused\n",
				    net->devname, srv->name, op->addr,
				    to < 0 ? "not a server of this device" :
				    "not usable now");
		return N2L_ST_FULL;
	}
	return net->ops->moved(net->owner, srv->idx, to, n2l_srvop_copies(op),
			       op->count);
}

static void handle_srvops(struct n2l_nsrv *srv)
{
	struct n2l_net *net = srv->net;
	struct n2l_srvop *op;
	int status;

	for (;;) {
		spin_lock_irq(&srv->lock);
		op = list_first_entry_or_null(&srv->srvops, struct n2l_srvop,
					      node);
		if (op) {
			list_del_init(&op->node);
			srv->nr_srvops--;
		}
		spin_unlock_irq(&srv->lock);
		if (!op)
			return;
		if (READ_ONCE(net->stopping))
			status = N2L_ST_FULL;
		else if (op->op == N2L_OP_MOVED)
			status = handle_moved(srv, op);
		else
			status = net->ops->returned(net->owner, srv->idx,
						    n2l_srvop_copies(op), op->count,
						    op->pages, op->bad);
		n2l_srvop_answer(srv, op, status);
	}
}

void n2l_event_work(struct work_struct *w)
{
	struct n2l_nsrv *srv = container_of(w, struct n2l_nsrv, event_work);
	struct n2l_net *net = srv->net;
	unsigned int noio = memalloc_noio_save();
	bool reconnected;

	n2l_debug_hold(N2L_HOLD_EVENTS);
	reconnected = test_and_clear_bit(N2L_EV_CONNECTED, &srv->events);
	if (test_and_clear_bit(N2L_EV_RECONCILE, &srv->events) || reconnected)
		reconcile(srv);
	if (test_and_clear_bit(N2L_EV_AWAY, &srv->events))
		net->ops->away(net->owner, srv->idx);
	if (test_and_clear_bit(N2L_EV_USABLE, &srv->events))
		net->ops->usable(net->owner, srv->idx);
	if (test_and_clear_bit(N2L_EV_SRVOPS, &srv->events))
		handle_srvops(srv);
	if (test_and_clear_bit(N2L_EV_ROOM, &srv->events))
		net->ops->room(net->owner);
	memalloc_noio_restore(noio);
}
