/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Network RAM client: connections to nswapd page servers.
 *
 * Glossary
 *   server   one page server of the table line (or added later, or learned
 *            from a MOVED message), with one TCP connection at a time
 *   request  one frame sent to a server and its reply; a dm bio's request
 *            lives in its per-bio data, so the I/O path allocates nothing
 *   tag      the slot of a request sent and not yet answered
 *   dead     a server unreachable for longer than dead_after_ms: its slots
 *            are lost, and it is retired; if its address answers again it
 *            joins as a new, empty server
 *
 * Ordering: every request to a server goes through one FIFO. An INVAL of a
 * page is sent only after every request queued before the page was freed,
 * so a GET mapped before the free is served before the page goes. That is
 * why Network RAM needs no quarantine, unlike the block media.
 */
#ifndef N2L_NETRAM_H
#define N2L_NETRAM_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/kthread.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/wait.h>

#include "n2l-proto.h"
#include "slotmap.h"

struct n2l_store;
struct n2l_server;

#define N2L_TAGS		256	/* requests in flight per server */
#define N2L_INVAL_RING		8192	/* pending invalidations per server */
#define N2L_MAX_SERVERS		SME_MAX_SERVERS

enum n2l_srv_state {
	N2L_SRV_CONNECTING,	/* never connected yet, or reconnecting */
	N2L_SRV_UP,
	N2L_SRV_DOWN,		/* lost; reconnecting within dead_after_ms */
	N2L_SRV_DRAINING,	/* remove_server: pages moving away */
	N2L_SRV_DEAD,		/* retired; its slots are lost */
};

enum n2l_req_state {
	N2L_REQ_IDLE,
	N2L_REQ_QUEUED,
	N2L_REQ_SENT,
	N2L_REQ_RECEIVING,	/* the receiver is filling its pages */
};

/* Errors a request can end with, besides the server's n2l_status. */
#define N2L_REQ_CONN_LOST	(-ECONNRESET)	/* connection went away */
#define N2L_REQ_DEAD		(-EHOSTDOWN)	/* server declared dead */

struct n2l_netreq {
	struct list_head node;
	struct n2l_server *srv;
	u64 id;
	u64 seq;			/* position in the server's FIFO */
	unsigned long sent_at;		/* jiffies */
	unsigned long first_sent;	/* jiffies; kept when sent again */
	u8 op;
	u8 state;			/* enum n2l_req_state */
	u16 flags;			/* N2L_F_REPLY: we answer the server */
	u32 key, count, vers;
	struct bio *bio;		/* PUT: data; GET: destination */
	void *buf;			/* other payloads */
	u32 buf_len;
	void *reply_buf;		/* HELLO, STATUS: where n2l_info goes */
	int status;			/* N2L_ST_* or a negative errno */
	void (*done)(struct n2l_netreq *req);
	void *private;
};

struct n2l_inval {
	u64 key;
	u32 vers;
	u64 after_seq;			/* send once this request was sent */
};

struct n2l_server_stats {
	atomic64_t puts, gets, put_pages, get_pages;
	atomic64_t full;		/* PUTs refused for lack of room */
	atomic64_t timeouts;
	atomic64_t reconnects;
	atomic64_t protocol_errors;
	atomic64_t inval_dropped;	/* invalidations lost (ring full) */
};

struct n2l_server {
	struct kref ref;		/* the table's, and lookups' */
	struct n2l_netram *nr;
	u8 idx;				/* in slot map locations */
	char name[N2L_ADDR_LEN];	/* host:port, as given */
	struct sockaddr_storage addr;
	int addrlen;
	bool learned;			/* added by a MOVED message */

	/* Written under lock; read without it where a stale value is fine. */
	int state;
	u64 capacity;			/* pages, as last reported */
	atomic64_t free_reported;
	atomic_t put_pages_inflight;
	u32 held;			/* slots mapped here: under store lock */

	spinlock_t lock;		/* queue, tags, socket, invals */
	struct socket *sock;
	/*
	 * Shutting the socket down may sleep, so it cannot happen under
	 * lock; this keeps the socket from being released meanwhile.
	 */
	struct mutex sock_lock;
	struct list_head queue;		/* FIFO of requests to send */
	struct n2l_netreq *tags[N2L_TAGS];
	u64 next_id;
	u64 queue_seq;			/* seq of the last request queued */
	u64 sent_seq;			/* every request <= this was sent */
	struct n2l_inval *invals;	/* ring */
	u32 inval_head, inval_tail;
	unsigned long down_since;	/* jiffies; 0 once a reply proves it up */
	bool ever_up;
	unsigned long last_reply;	/* jiffies */

	/* Preallocated: never wait for memory to talk to the server. */
	struct n2l_netreq inval_req;
	struct n2l_kv *inval_buf;
	struct n2l_netreq status_req;
	struct n2l_info status_info;

	struct task_struct *thread;	/* connect, receive, reconnect */
	struct work_struct send_work;
	struct work_struct srvop_work;	/* MOVED and RETURN from the server */
	struct list_head srvops;	/* under lock */
	struct n2l_server_stats stats;
	struct completion stopped;
};

/* A request the server sent us (MOVED, RETURN), and our answer. */
struct n2l_srvop {
	struct list_head node;
	struct n2l_hdr hdr;
	struct n2l_kv *kv;		/* hdr.count entries */
	struct n2l_addr addr;		/* MOVED: where the pages went */
	struct page **pages;		/* RETURN: hdr.count pages */
	struct n2l_netreq reply;
};

#define N2L_MAX_WANTED	4

struct n2l_netram {
	struct n2l_store *store;
	u64 client_id;
	struct workqueue_struct *wq;	/* senders and server requests */

	/* Servers by index; changed under the store's config_lock and lock. */
	struct n2l_server *servers[N2L_MAX_SERVERS];

	/* Knobs (ms), read without locking. */
	unsigned int timeout_ms;
	unsigned int dead_after_ms;
	unsigned int status_ms;

	struct delayed_work tick;	/* timeouts, STATUS, dead servers */

	struct delayed_work drain;	/* remove_server */

	/* Peers named by MOVED that we do not know yet: the tick adds them. */
	char wanted[N2L_MAX_WANTED][N2L_ADDR_LEN];	/* under store lock */
	atomic64_t failed_reads;	/* reads failed: slot's server dead */
	atomic64_t moved_pages;		/* pages a server moved to a peer */
	atomic64_t returned_pages;	/* pages a server handed back */
};

/* netram-server.c */
int n2l_netram_init(struct n2l_netram *nr, struct n2l_store *s);
void n2l_netram_exit(struct n2l_netram *nr);
struct n2l_server *n2l_server_add(struct n2l_netram *nr, const char *name,
				  bool learned, char **error);
void n2l_server_stop(struct n2l_server *srv, bool dead);
void n2l_server_disconnect(struct n2l_server *srv, struct socket *only);
struct n2l_server *__n2l_server_find(struct n2l_netram *nr, const char *name);
struct n2l_server *n2l_server_get(struct n2l_netram *nr, u32 idx);
void n2l_server_put(struct n2l_server *srv);
void n2l_server_submit(struct n2l_server *srv, struct n2l_netreq *req);
void n2l_server_free_all_and_stop(struct n2l_server *srv);
void n2l_server_remove(struct n2l_netram *nr, struct n2l_server *srv);
int n2l_parse_addr(const char *name, struct sockaddr_storage *ss, int *len);
const char *n2l_server_state_name(int state);

/* netram-wire.c */
int n2l_wire_buf(struct socket *sock, void *buf, size_t len, bool send,
		 bool more);
int n2l_wire_bio(struct socket *sock, struct bio *bio, bool send);
int n2l_wire_skip(struct socket *sock, size_t len);
int n2l_wire_send(struct socket *sock, struct n2l_netreq *req);

/* netram-conn.c */
int n2l_server_thread(void *arg);
void n2l_send_work(struct work_struct *w);
void n2l_complete_reqs(struct list_head *list);
void n2l_note_info(struct n2l_server *srv, const struct n2l_info *info);

/* netram-io.c */
u32 __n2l_netram_free(struct n2l_netram *nr, u64 avoid);
int __n2l_netram_choose(struct n2l_netram *nr, int prefer, u64 avoid,
			u32 pages, bool replace);
void n2l_netram_put(struct n2l_store *s, struct bio *bio);
void n2l_netram_get(struct n2l_store *s, struct bio *bio);
void __n2l_netram_inval(struct n2l_netram *nr, u32 server, u64 key, u32 vers);
void n2l_netram_kick_invals(struct n2l_server *srv);
bool n2l_server_usable(struct n2l_server *srv);

/* netram-drain.c */
void n2l_drain_work(struct work_struct *w);
int n2l_server_remove_start(struct n2l_netram *nr, const char *name,
			    char **error);

/* netram-srvops.c */
void n2l_srvop_work(struct work_struct *w);
void n2l_srvop_free(struct n2l_srvop *op);

/* Requests flow while a server is up, or draining its pages away. */
static inline bool n2l_connected(struct n2l_server *srv)
{
	return srv->sock &&
	       (srv->state == N2L_SRV_UP || srv->state == N2L_SRV_DRAINING);
}

static inline u32 n2l_req_timeout(struct n2l_netram *nr)
{
	return msecs_to_jiffies(READ_ONCE(nr->timeout_ms));
}

#endif /* N2L_NETRAM_H */
