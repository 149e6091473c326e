// SPDX-License-Identifier: GPL-2.0-only
/*
 * One server's connection: a kernel thread connects, authenticates,
 * receives every frame and reconnects with backoff when the connection
 * breaks. Nothing here waits for memory that only swapping could free:
 * the socket may dip into the emergency reserves (as swap over NFS and nbd
 * do), and the thread runs in a memalloc_noio scope.
 *
 * The socket is published before it connects, so that stopping the
 * server can always shut it down, whatever the thread is blocked in.
 */
#include <linux/sched/mm.h>
#include <linux/tcp.h>
#include <net/sock.h>

#include "auth.h"

#define N2L_BACKOFF_MIN_MS	100
#define N2L_BACKOFF_MAX_MS	5000
/*
 * A connection that breaks sooner than this after its handshake counts as
 * a failed connect: a server that answers HELLO and then talks garbage
 * must not get a reconnect storm.
 */
#define N2L_STABLE_MS		2000

static void set_timeouts(struct socket *sock, long snd, long rcv)
{
	sock->sk->sk_sndtimeo = snd;
	sock->sk->sk_rcvtimeo = rcv;
}

static struct socket *new_socket(struct n2l_nsrv *srv)
{
	struct socket *sock;

	if (sock_create_kern(&init_net, srv->addr.ss_family, SOCK_STREAM,
			     IPPROTO_TCP, &sock))
		return NULL;
	/* Swap over the network: never wait on reclaim to send or receive. */
	sock->sk->sk_allocation = GFP_NOIO | __GFP_MEMALLOC;
	sk_set_memalloc(sock->sk);
	tcp_sock_set_nodelay(sock->sk);
	set_timeouts(sock, n2l_req_timeout(srv->net), n2l_req_timeout(srv->net));
	return sock;
}

/* Make @sock the one a stop shuts down; false if we are stopping. */
static bool publish(struct n2l_nsrv *srv, struct socket *sock)
{
	bool ok;

	mutex_lock(&srv->sock_lock);
	spin_lock_irq(&srv->lock);
	ok = !srv->stopping;
	if (ok)
		srv->sock = sock;
	spin_unlock_irq(&srv->lock);
	mutex_unlock(&srv->sock_lock);
	return ok;
}

static void unpublish(struct n2l_nsrv *srv)
{
	mutex_lock(&srv->sock_lock);
	spin_lock_irq(&srv->lock);
	srv->sock = NULL;
	spin_unlock_irq(&srv->lock);
	mutex_unlock(&srv->sock_lock);
}

static int connect_and_greet(struct n2l_nsrv *srv, struct socket **sockp,
			     struct n2l_info_host *info)
{
	struct socket *sock = new_socket(srv);
	int r;

	if (!sock)
		return -ENOMEM;
	if (!publish(srv, sock)) {
		sock_release(sock);
		return -ESHUTDOWN;
	}
	r = kernel_connect(sock, (struct sockaddr *)&srv->addr, srv->addrlen, 0);
	if (!r)
		r = n2l_handshake(srv, sock, info);
	if (r) {
		unpublish(srv);
		sock_release(sock);
		return r;
	}
	/*
	 * From now on receiving waits for as long as it takes: timeouts are
	 * the tick's business, per request. A send still gives up after the
	 * request timeout, so that a server that stops reading cannot hold
	 * the send work, and its queue, forever.
	 */
	set_timeouts(sock, n2l_req_timeout(srv->net), MAX_SCHEDULE_TIMEOUT);
	*sockp = sock;
	return 0;
}

/*
 * Which key the server proved it holds: only one bound to its name shows
 * that no other server of ours could have answered in its place.
 */
static const char *key_kind(struct n2l_nsrv *srv)
{
	if (!srv->net->secure)
		return "";
	return srv->sess.key_bound ? ", by a key bound to its name" :
				     ", by the identity's own key";
}

/*
 * Connected and greeted: reconcile before taking writes. A new epoch means
 * the server restarted and kept nothing of ours.
 */
static void connection_up(struct n2l_nsrv *srv, const struct n2l_info_host *info)
{
	struct n2l_net *net = srv->net;
	bool again;

	spin_lock_irq(&srv->lock);
	again = srv->epoch != 0;
	/* Sticky until the event work reports it: a quick second reconnect must not hide it. */
	if (again && srv->epoch != info->epoch)
		srv->restarted = true;
	srv->epoch = info->epoch;
	srv->conn_gen++;
	srv->id_salt = get_random_u64();
	srv->state = N2L_SRV_RECONCILING;
	srv->down_since = 0;
	spin_unlock_irq(&srv->lock);

	WRITE_ONCE(srv->capacity, info->capacity);
	WRITE_ONCE(srv->server_held, info->held);
	atomic64_set(&srv->free_reported, info->free);
	WRITE_ONCE(srv->last_status, jiffies);
	if (again)
		atomic64_inc(&srv->stats.reconnects);
	pr_info("nswap2l: %s: server %s is up%s (holds %llu pages of ours)%s\n",
		net->devname, srv->name,
		READ_ONCE(srv->restarted) ? ", restarted: it kept nothing" : "",
		info->held, key_kind(srv));
	n2l_srv_event(srv, N2L_EV_CONNECTED);
	queue_work(net->send_wq, &srv->send_work);
}

/*
 * The connection is gone. What was on the wire fails (a read goes to
 * another copy or waits for the server, a write goes elsewhere); reads
 * still queued stay queued for the next connection; writes fail, since a
 * reconnected server takes none until it is reconciled; our answers to
 * the server die with the connection that asked, and so do its requests;
 * invalidations are dropped, since reconciliation will do their work.
 */
static void connection_down(struct n2l_nsrv *srv, struct socket *sock)
{
	struct n2l_srvop *op, *otmp;
	struct n2l_net_req *req;
	LIST_HEAD(failed);
	LIST_HEAD(dropped);
	unsigned int tag;

	mutex_lock(&srv->sock_lock);
	spin_lock_irq(&srv->lock);
	srv->sock = NULL;
	if (srv->state == N2L_SRV_UP || srv->state == N2L_SRV_RECONCILING)
		srv->state = N2L_SRV_DOWN;
	srv->down_since = jiffies ?: 1;
	spin_unlock_irq(&srv->lock);
	mutex_unlock(&srv->sock_lock);

	kernel_sock_shutdown(sock, SHUT_RDWR);
	flush_work(&srv->send_work);
	sock_release(sock);
	n2l_session_end(srv);

	spin_lock_irq(&srv->lock);
	for (tag = 0; tag < N2L_TAGS; tag++) {
		req = srv->tags[tag];
		if (!req)
			continue;
		srv->tags[tag] = NULL;
		req->status = N2L_NET_CONN_LOST;
		list_add_tail(&req->node, &failed);
		srv->inflight--;
	}
	__n2l_fail_queued(srv, &failed, N2L_NET_CONN_LOST, true);
	list_for_each_entry_safe(op, otmp, &srv->srvops, node) {
		list_move_tail(&op->node, &dropped);
		srv->nr_srvops--;
	}
	spin_unlock_irq(&srv->lock);

	n2l_complete_list(&failed);
	list_for_each_entry_safe(op, otmp, &dropped, node)
		n2l_srvop_free(op);
	if (!kthread_should_stop())
		pr_warn_ratelimited("nswap2l: %s: server %s: connection lost\n",
				    srv->net->devname, srv->name);
}

static void log_refusal(struct n2l_nsrv *srv, int r)
{
	const char *why;

	switch (r) {
	case -EACCES:
		why = srv->net->secure ? "unknown identity, wrong key, or it does not authenticate" :
					 "it wants clients to authenticate (psk:)";
		break;
	case -EKEYREJECTED:
		why = "it could not prove it holds our key: not the server we know";
		break;
	case -EPROTONOSUPPORT:
		why = "it speaks another protocol version";
		break;
	case -EPROTO:
		why = "its answer to the handshake is malformed or fails its tag";
		break;
	default:
		return;
	}
	pr_err_ratelimited("nswap2l: %s: server %s refused: %s\n",
			   srv->net->devname, srv->name, why);
}

int n2l_server_thread(void *arg)
{
	struct n2l_nsrv *srv = arg;
	unsigned int noio = memalloc_noio_save();
	unsigned int backoff = N2L_BACKOFF_MIN_MS;
	struct n2l_info_host info;
	unsigned long up_since;
	struct socket *sock;
	int r;

	while (!kthread_should_stop()) {
		r = connect_and_greet(srv, &sock, &info);
		if (!r) {
			up_since = jiffies;
			connection_up(srv, &info);
			n2l_receive_loop(srv, sock);
			connection_down(srv, sock);
			if (time_after(jiffies, up_since +
				       msecs_to_jiffies(N2L_STABLE_MS))) {
				backoff = N2L_BACKOFF_MIN_MS;
				continue;
			}
		} else {
			log_refusal(srv, r);
		}
		schedule_timeout_interruptible(msecs_to_jiffies(backoff));
		backoff = min(backoff * 2, N2L_BACKOFF_MAX_MS);
	}
	memalloc_noio_restore(noio);
	return 0;
}
