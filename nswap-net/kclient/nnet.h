/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Network RAM client's insides (netram.h is what the target sees).
 *
 * Threads and work, per device (struct n2l_net):
 *   - a kernel thread per server: connects, authenticates, receives every
 *     frame, reconnects with backoff;
 *   - send_wq: a send work per server, which puts the server's FIFO on the
 *     wire; it never waits for other work, and a send that blocks for
 *     longer than the request timeout fails the connection;
 *   - event_wq: an event work per server (reconciliation, MOVED and
 *     RETURN, the target's callbacks), which waits for requests (send
 *     works and receive threads) and block I/O, never for other events
 *     (a MOVED waits for the device's read-back buffer only while another
 *     MOVED's requests have it);
 *   - tick_wq: the tick (timeouts, status polls, servers turning away),
 *     which waits for nothing.
 * Each queue is WQ_MEM_RECLAIM, so each has its rescuer: under reclaim
 * every kind of work still progresses, and no work waits for another on
 * its own queue. Neither a receive thread nor an event work waits for
 * memory: what they need is made beforehand (request slots, a RETURN's
 * worth of pages, the claim, handshake and read-back buffers) or taken
 * without waiting, with a way out (a RETURN refused FULL: the server
 * keeps its pages and asks again).
 *
 * Lock order:
 *   the target's store lock (a spinlock, irqs off)
 *     -> net->lock (the server table)
 *     -> srv->lock (the FIFO, tags, invalidations, state)
 *   srv->sock_lock (a mutex) is never taken under a spinlock.
 */
#ifndef N2L_NNET_H
#define N2L_NNET_H

#include <crypto/chacha.h>
#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/kthread.h>
#include <linux/mutex.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>

#include "netram.h"

#define N2L_TAGS		256	/* requests in flight per connection */
#define N2L_TAG_BITS		8
#define N2L_INVAL_RING		8192	/* invalidations waiting per server */
/*
 * Entries per INVAL frame, one frame in flight: a stream of 1 MiB
 * overwrites frees 1024 pages per four PUTs answered, and an INVAL must
 * keep up or the ring overflows into a reconciliation. Requests pass an
 * INVAL waiting for the frame only when they cannot name its pages (see
 * n2l_net_req.after_invals).
 */
#define N2L_INVAL_BATCH		1024
#define N2L_RETAIN_BATCH	1024	/* entries per RETAIN frame */
#define N2L_MAX_SRVOPS		4	/* MOVED/RETURN waiting per server */
/*
 * MOVED/RETURN a server may have with us at once: those waiting, and one
 * whose answer is being sent (nswapd has at most 4 batches per client).
 */
#define N2L_SRVOP_SLOTS		(N2L_MAX_SRVOPS + 1)
#define N2L_TICK_MS		200
#define N2L_STATUS_MS		1000	/* between STATUS polls, busy or not */

struct n2l_handshake;

/* Where a request is (n2l_net_req.state). */
enum n2l_req_state {
	N2L_REQ_IDLE,
	N2L_REQ_QUEUED,		/* in the FIFO */
	N2L_REQ_SENDING,	/* the send work is writing it */
	N2L_REQ_SENT,		/* on the wire, its tag taken */
	N2L_REQ_RECEIVING,	/* the receiver is reading its reply */
	N2L_REQ_ANSWERED,	/* answered while still being sent */
};

/* The sender and the receiver each hold a request while at work on it. */
#define N2L_BUSY_SEND		0x1
#define N2L_BUSY_RECV		0x2

struct n2l_inval {
	u64 key;
	u64 vers;
	u64 after_seq;		/* leaves once this request has left */
};

/*
 * A request the server sent us (MOVED, RETURN), and our answer: one of
 * its server's N2L_SRVOP_SLOTS, made when the server was added, so that
 * receiving one never waits for memory.
 */
struct n2l_srvop {
	struct list_head node;
	struct n2l_nsrv *srv;	/* whose slot it is */
	u8 op;
	u64 id;
	u32 count;
	u32 conn_gen;		/* the connection it came on */
	void *kvs;		/* its payload and entries: see recv.c */
	char addr[N2L_ADDR_LEN];	/* MOVED: where the pages went */
	struct bio *pages;	/* RETURN; NULL: refused, no memory for them */
	DECLARE_BITMAP(bad, N2L_MAX_PAGES);	/* RETURN: failed their seal */
	struct n2l_net_req reply;
};

/*
 * The pages of one RETURN, for when the page allocator has none to give
 * without waiting: one RETURN at a time per device lands even then.
 */
struct n2l_pages_reserve {
	unsigned long busy;		/* bit 0: taken */
	struct bio bio;
	struct bio_vec vecs[N2L_MAX_PAGES];
	struct page *pages[N2L_MAX_PAGES];
};

struct n2l_srv_stats {
	atomic64_t puts, gets, put_pages, get_pages;
	atomic64_t full;		/* PUTs refused for lack of room */
	atomic64_t timeouts;
	atomic64_t reconnects;
	atomic64_t protocol_errors;
	atomic64_t bad_seals;		/* pages that failed their seal check */
	atomic64_t reconciled;		/* reconciliations completed */
	atomic64_t orphans;		/* pages reconciliation dropped */
	atomic64_t missing;		/* copies reconciliation found gone */
};

/* Pending work for a server's event work (n2l_nsrv.events). */
enum {
	N2L_EV_CONNECTED,	/* reconcile (reporting a restart first) */
	N2L_EV_RECONCILE,	/* reconcile again (invalidations overflowed) */
	N2L_EV_AWAY,
	N2L_EV_USABLE,
	N2L_EV_SRVOPS,
	N2L_EV_ROOM,		/* an INVAL answered while a write waits for room */
};

/* One direction of an authenticated session: its tag key and next nonce. */
struct n2l_session_dir {
	u32 key[CHACHA_KEY_SIZE / 4];
	u64 seq;
};

/* A connection's session: untagged until authentication succeeds. */
struct n2l_session {
	bool tagged;
	bool key_bound;			/* the server holds a key bound to its name */
	u8 bound_key[N2L_PSK_LEN];	/* Kb (n2l-proto.h) */
	struct crypto_shash *hmac;
	struct n2l_session_dir tx, rx;
};

struct n2l_nsrv {
	struct kref ref;
	struct n2l_net *net;
	u8 idx;
	char name[N2L_ADDR_LEN];	/* canonical: a.b.c.d:port, [v6]:port */
	struct sockaddr_storage addr;
	int addrlen;

	spinlock_t lock;		/* everything down to sock_lock */
	enum n2l_srv_state state;
	bool draining;
	bool stopping;
	bool restarted;			/* a connect found a new epoch, not reported yet */
	u32 conn_gen;			/* bumped at every connect */
	unsigned long down_since;	/* jiffies; 0 while connected */
	u64 epoch;			/* 0: never connected */
	struct socket *sock;		/* published while connecting too */
	struct list_head queue;		/* the FIFO */
	struct n2l_net_req *tags[N2L_TAGS];
	u64 next_id;
	u64 id_salt;			/* ids are not guessable */
	u64 queue_seq;			/* seq of the last request queued */
	u32 inflight;			/* requests queued or on the wire */
	struct n2l_inval *invals;	/* ring */
	u32 inval_head, inval_tail;
	struct list_head srvops;
	unsigned int nr_srvops;
	struct n2l_srvop *srvop_slots;	/* N2L_SRVOP_SLOTS of them */
	unsigned long srvop_free;	/* under lock: slots not in use */
	unsigned long events;		/* N2L_EV_* bits */

	/* Taken to shut the socket down, which may sleep. */
	struct mutex sock_lock;

	/* What the server last said; read without locks. */
	atomic64_t free_reported;
	u64 capacity;
	u64 server_held;
	unsigned long last_status;	/* jiffies: the last STATUS asked, or HELLO */
	atomic_t put_pages_inflight;
	/*
	 * Mean time to a reply, in microseconds (EWMA, 1/8 per reply): a
	 * server that answers just under the timeout is not down, but is
	 * demoted (see n2l_srv_slow()).
	 */
	atomic_t latency_us;
	bool latency_seeded;		/* the receiver's: a first reply came */

	/* Preallocated: talking to the server never waits for memory. */
	struct n2l_net_req inval_req;
	struct n2l_kv *inval_buf;
	struct n2l_net_req status_req;
	struct n2l_info status_info;
	void *rx_seals;			/* seals of the reply being received */
	struct n2l_kv *retain_kvs;	/* reconciliation */
	u8 *retain_bitmap;
	u64 retain_gen;
	struct n2l_handshake *hs;	/* the thread's, at every connect */

	struct n2l_session sess;		/* tx: the send work; rx: the thread */

	struct task_struct *thread;
	struct work_struct send_work;
	struct work_struct event_work;
	struct n2l_srv_stats stats;
};

struct n2l_net {
	const struct n2l_net_ops *ops;
	void *owner;
	char devname[32];
	u64 device;			/* our area on every server */
	bool keep_pages;		/* destroy drops no pages */
	u64 nr_keys;			/* slots of the device */
	bool secure;			/* authenticate: identity and psk */
	char identity[N2L_ID_LEN];
	u8 psk[N2L_PSK_LEN];
	struct n2l_sealer *sealer;	/* seals: CRC32C or AES-GCM */

	spinlock_t lock;		/* servers[] and in_use */
	struct n2l_nsrv *servers[N2L_NET_SERVERS];
	u64 in_use;			/* a bit per servers[] entry not NULL */
	struct mutex table_lock;	/* adds and removals */

	unsigned int timeout_ms;	/* read without locks */
	unsigned int dead_after_ms;

	struct workqueue_struct *send_wq;
	struct workqueue_struct *event_wq;
	struct workqueue_struct *tick_wq;
	struct delayed_work tick;
	atomic_t room_wanted;		/* a write waits: see n2l_net_room_coming() */
	bool stopping;

	/* Preallocated: the receive and event paths never wait for memory. */
	struct n2l_pages_reserve *reserve;	/* RETURN pages */
	struct mutex claim_lock;		/* n2l_net_claim()'s buffers */
	struct n2l_kv *claim_kvs;
	u8 *claim_bitmap;
};

static inline unsigned long n2l_req_timeout(struct n2l_net *net)
{
	return msecs_to_jiffies(READ_ONCE(net->timeout_ms));
}

static inline unsigned long n2l_dead_after(struct n2l_net *net)
{
	return msecs_to_jiffies(READ_ONCE(net->dead_after_ms));
}

/*
 * Persistently slow: its mean reply time above half the request timeout.
 * Writes and reads then go to other servers while there are any.
 */
static inline bool n2l_srv_slow(struct n2l_nsrv *srv)
{
	return atomic_read(&srv->latency_us) >
	       (int)(READ_ONCE(srv->net->timeout_ms) * (USEC_PER_MSEC / 2));
}

/* Frames flow while the connection is up, reconciling included. */
static inline bool __n2l_connected(struct n2l_nsrv *srv)
{
	return srv->sock && (srv->state == N2L_SRV_UP ||
			     srv->state == N2L_SRV_RECONCILING);
}

static inline bool n2l_is_put(const struct n2l_net_req *req)
{
	return req->op == N2L_OP_PUT && !(req->flags & N2L_F_REPLY);
}

/* server.c */
struct n2l_nsrv *n2l_srv_get(struct n2l_net *net, unsigned int idx);
void n2l_srv_put(struct n2l_nsrv *srv);
void n2l_srv_event(struct n2l_nsrv *srv, unsigned int ev);
void n2l_srv_disconnect(struct n2l_nsrv *srv, struct socket *only);
void n2l_tick(struct work_struct *w);

/* send.c */
void n2l_submit(struct n2l_nsrv *srv, struct n2l_net_req *req);
void n2l_send_work(struct work_struct *w);
void n2l_complete_list(struct list_head *list);
void n2l_req_end(struct n2l_net_req *req, int status);
void __n2l_fail_queued(struct n2l_nsrv *srv, struct list_head *failed,
		       int status, bool puts_only);

/* wire.c */
int n2l_wire_buf(struct socket *sock, void *buf, size_t len, bool send,
		 bool more);
int n2l_wire_bio(struct socket *sock, struct bio *bio, bool send, bool more);
int n2l_wire_skip(struct socket *sock, size_t len);
void n2l_fill_hdr(struct n2l_hdr *h, const struct n2l_net_req *req, u32 len);

/* conn.c */
int n2l_server_thread(void *arg);

/* recv.c */
void n2l_receive_loop(struct n2l_nsrv *srv, struct socket *sock);
void n2l_note_info(struct n2l_nsrv *srv, const struct n2l_info *info);
int n2l_srvops_init(struct n2l_nsrv *srv);
void n2l_srvops_exit(struct n2l_nsrv *srv);
int n2l_reserve_init(struct n2l_net *net);
void n2l_reserve_exit(struct n2l_net *net);
void n2l_srvop_free(struct n2l_srvop *op);
struct n2l_copy *n2l_srvop_copies(struct n2l_srvop *op);

/* event.c */
void n2l_event_work(struct work_struct *w);
void n2l_srvop_answer(struct n2l_nsrv *srv, struct n2l_srvop *op, int status);

/* seal.c */
int n2l_sealer_init(struct n2l_net *net, const u8 *page_key);
void n2l_sealer_exit(struct n2l_net *net);
int n2l_unseal_page(struct n2l_net *net, struct page *page, u64 key, u64 vers,
		    const u8 *seal);
int n2l_seal_check(struct n2l_net *net, struct bio *bio, u64 key, u32 count,
		   u64 vers, const void *seals, unsigned long *bad);

#endif /* N2L_NNET_H */
