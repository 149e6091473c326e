/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The server: connections, peers, our own requests (MOVED, RETURN, and
 * HELLO/STATUS/PEER_PUT to peers), give-up batches and the event loop.
 * Everything lives in one struct server; nothing is global.
 */
#ifndef NSWAPD_SERVER_H
#define NSWAPD_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "auth.h"
#include "buf.h"
#include "config.h"
#include "frame.h"
#include "log.h"
#include "psk.h"
#include "store.h"

/* Stop reading from a connection whose replies pile up past OUT_HIGH. */
#define OUT_HIGH	(4U << 20)
#define OUT_LOW		(1U << 20)
#define IN_MIN		(64U << 10)	/* read buffer, grown to one whole frame */
#define CLOSE_GRACE_MS	5000		/* to flush the last reply before closing */
#define MAX_BATCHES	16		/* give-up batches in flight, all clients */
#define MAX_CLIENT_BATCHES 4
#define BACKOFF_MIN_MS	1000
#define BACKOFF_MAX_MS	60000
#define PEER_BACKOFF_MIN_MS 500
#define PEER_BACKOFF_MAX_MS 30000
#define REFUSED_MIN_MS	30000		/* a client refused MOVED to a peer: RETURN */
#define REFUSED_MAX_MS	600000
#define CAP_LOG_MS	10000		/* connections over a cap: logged this often */

struct server;
struct peer;

enum evsrc_type { EV_LISTENER, EV_CONN, EV_SIGNAL };

struct evsrc {
	enum evsrc_type type;
};

struct listener {
	struct evsrc ev;
	int fd;
	bool paused;		/* out of file descriptors for a moment */
	char name[N2L_ADDR_LEN];
};

enum conn_kind {
	CONN_IN,		/* a client or peer server connected to us */
	CONN_PEER,		/* we connected to a peer server */
};

/*
 * Where a connection is in authentication. Accepted: HELLO, then (with
 * keys) AUTH. Ours to a peer go from CA_HELLO to CA_READY once its answer
 * to our HELLO (without keys) or AUTH (with keys) came; peer->state
 * follows the steps between.
 */
enum conn_auth {
	CA_HELLO,		/* waiting for HELLO (or the peer's answers) */
	CA_CHALLENGED,		/* accepted, with keys: challenge sent, waiting for AUTH */
	CA_READY,		/* authenticated, or HELLO done without keys */
};

struct conn {
	struct evsrc ev;
	struct server *srv;
	int fd;			/* -1: no socket (tests, fuzzing) */
	uint64_t serial;
	enum conn_kind kind;
	char name[N2L_ADDR_LEN + 8];	/* remote address */
	uint8_t addr[16];	/* remote address as the caps count it (netaddr_key) */
	enum conn_auth auth;
	uint32_t role;		/* enum n2l_role, after HELLO */
	struct auth_params ap;	/* HELLO's identity, device, role and nonces */
	uint8_t psk[N2L_PSK_LEN];	/* the identity's key (with keys only) */
	bool secure;		/* keys in use: frames are tagged once ready */
	bool tx_tagged, rx_tagged;
	struct tagger tx, rx;
	size_t tx_untagged;	/* the last queued frame's size (tag included): not tagged yet */
	int64_t auth_deadline_ms;
	struct area *area;	/* role CLIENT */
	struct peer *peer;	/* CONN_PEER */
	struct buf in, out;
	bool connecting;	/* non-blocking connect in progress */
	bool closing;		/* read no more, close once out is sent */
	bool paused;		/* out is above OUT_HIGH: read no more for now */
	bool dead;		/* closed; freed by server_reap() */
	bool dirty;		/* on srv->dirty: output to send */
	int64_t deadline_ms;	/* closing or connecting: give up then */
	uint32_t events;	/* registered with epoll */
	struct conn *prev, *next;
	struct conn *dirty_next;
};

static inline bool conn_ready(const struct conn *c)
{
	return c->auth == CA_READY;
}

/* A request of ours, awaiting its reply. */
struct sreq;
typedef void (*sreq_done_fn)(struct server *srv, struct sreq *r, int status,
			     const struct frame_hdr *h, const uint8_t *payload);
#define SREQ_LOST	(-1)	/* connection closed or no answer in time */

struct sreq {
	uint64_t id;
	uint8_t op;
	uint32_t count;
	struct conn *conn;
	int64_t deadline_ms;
	sreq_done_fn done;	/* NULL: timed out, a late reply is ignored */
	void *arg;
	struct sreq *prev, *next;
};

enum peer_state { PEER_IDLE, PEER_CONNECTING, PEER_HELLO, PEER_AUTH, PEER_READY };

struct peer {
	char addr[N2L_ADDR_LEN];	/* as configured: what MOVED tells clients */
	struct sockaddr_storage sa;
	socklen_t salen;
	enum peer_state state;
	struct conn *conn;
	uint64_t free_est;	/* pages it can take, as far as we know */
	bool draining;
	bool status_pending;
	int64_t status_at_ms;
	int64_t retry_at_ms;
	uint32_t backoff_ms;
};

enum batch_phase { BATCH_PEER_PUT, BATCH_MOVED, BATCH_RETURN };

struct batch_kv {
	uint64_t key, vers;
};

/* Up to N2L_MAX_PAGES pages of one area being given up. */
struct batch {
	uint64_t id;
	struct area *area;		/* kept while the batch lives (inflight) */
	enum batch_phase phase;
	char addr[N2L_ADDR_LEN];	/* the peer, for MOVED */
	uint32_t n;
	struct batch_kv kv[N2L_MAX_PAGES];
	struct batch *prev, *next;
};

struct server {
	struct logger log;
	struct config cfg;
	int argc;
	char *const *argv;
	struct store store;
	struct psk_table psk;		/* empty: --insecure */
	uint64_t epoch;			/* random at start, never 0 */
	int epfd;
	int sigfd;
	struct evsrc sig_ev;
	struct listener listeners[CFG_MAX_LISTEN];
	unsigned int nlisteners;
	struct conn *conns;
	size_t nconns;
	struct conn *dirty;
	uint64_t conn_serial;
	struct peer *peers[CFG_MAX_PEERS];
	unsigned int npeers;
	struct sreq *sreqs;
	uint64_t next_req_id;
	struct batch *batches;
	unsigned int nbatches;
	uint64_t next_batch_id;
	int64_t cap_logged_ms;		/* connections over a cap: last logged */
	uint64_t cap_refused;		/* since then */
	int64_t push_logged_ms;		/* not authenticated, closed for newer: last logged */
	uint64_t pushed_out;		/* since then */
	uint64_t last_avail_kb;
	bool meminfo_failed;
	bool draining;
	int64_t drain_deadline_ms;
	int exit_code;			/* -1 while running */
	int64_t next_capacity_ms;
	bool mover_kick;
	bool shrinking;			/* capacity below used: logged */
	bool nomem_logged;		/* page memory ran out: logged */
	uint64_t stuck_pages;		/* last logged: pages we cannot give up */
	uint64_t moved_pages, returned_pages;	/* totals, for the logs */
	int64_t (*clock)(void);		/* monotonic milliseconds */
};

/* server.c: life cycle, capacity, ticks */
int server_init(struct server *srv, const struct config *cfg, uint32_t chunk_pages,
		bool lock);
void server_destroy(struct server *srv);
int64_t server_now(struct server *srv);
void server_capacity_update(struct server *srv);
void server_tick(struct server *srv);
int server_prealloc(struct server *srv);
void server_reload(struct server *srv, const struct config *ncfg);
void server_drain(struct server *srv);
/* after every round of events: reap closed connections, run the mover, send */
void server_after_events(struct server *srv);
/* What the connection's client may still store (capacity, quota, draining). */
uint64_t server_free_for(struct server *srv, const struct conn *c);
uint32_t server_free_pages32(struct server *srv, const struct conn *c);
void server_info(struct server *srv, const struct conn *c, struct n2l_info *info);
/* New keys (SIGHUP): closes connections whose identity left or whose key changed. */
void server_set_keys(struct server *srv, struct psk_table *keys);

/* conn.c: connections and the frame state machine */
struct conn *conn_new(struct server *srv, int fd, enum conn_kind kind, const char *name);
void conn_process(struct conn *c);
/* Queues a frame; returns where its h->len payload bytes go (NULL: closed). */
uint8_t *conn_frame(struct conn *c, const struct frame_hdr *h);
uint8_t *conn_reply(struct conn *c, const struct frame_hdr *req, uint32_t status,
		    uint32_t len);
/* Takes back the last frame queued (len: its payload length). */
void conn_unqueue(struct conn *c, uint32_t len);
/* Tags the last frame queued, if it needs one (before sending it). */
void conn_seal(struct conn *c);
void conn_kill(struct conn *c, const char *why);
void conn_close_after(struct conn *c, uint32_t status, const struct frame_hdr *h,
		      const char *why);
void conn_mark_dirty(struct conn *c);
void conn_free(struct conn *c);
bool conn_usable(const struct conn *c);

/* serve.c: requests from clients and peers */
void serve_frame(struct conn *c, const struct frame_hdr *h, const uint8_t *payload);
void serve_conn_gone(struct conn *c);
void serve_reply_info(struct conn *c, const struct frame_hdr *h);

/* hello.c: HELLO and AUTH on accepted connections */
void hello_serve(struct conn *c, const struct frame_hdr *h, const uint8_t *payload);
void hello_auth(struct conn *c, const struct frame_hdr *h, const uint8_t *payload);
/* Switches the connection to tagged frames (both directions); 0 or -1. */
int hello_start_tags(struct conn *c, const uint8_t tx_key[N2L_MAC_LEN],
		     const uint8_t rx_key[N2L_MAC_LEN]);

/* sreq.c: our own requests */
struct sreq *sreq_send(struct server *srv, struct conn *c, uint8_t op,
		       uint32_t count, uint32_t len, sreq_done_fn done, void *arg,
		       uint8_t **payload);
/* 0: handled, 1: a late reply, ignored, -1: no such request */
int sreq_complete(struct server *srv, struct conn *c, const struct frame_hdr *h,
		  const uint8_t *payload);
void sreq_conn_lost(struct server *srv, struct conn *c);
void sreq_tick(struct server *srv, int64_t now);
void sreq_abort_all(struct server *srv);

/* peer.c: connections to peer servers */
int peer_set(struct server *srv, const struct config *cfg);
void peer_frame(struct conn *c, const struct frame_hdr *h, const uint8_t *payload);
void peer_conn_gone(struct conn *c);
void peer_connected(struct conn *c);
void peer_tick(struct server *srv, int64_t now, bool need_room);
void peer_free_all(struct server *srv);

/* mover.c: giving pages up to peers or back to clients */
void mover_run(struct server *srv);
int64_t mover_excess(struct server *srv);
void mover_abort_all(struct server *srv);

/* loop.c: sockets and the event loop */
int loop_init(struct server *srv);
int loop_run(struct server *srv);
void loop_fini(struct server *srv);
void loop_conn_events(struct conn *c);
void loop_flush(struct conn *c);
int loop_connect(struct server *srv, struct peer *p);

/*
 * admit.c: whether a new connection from key (netaddr_key; name for the
 * logs) may be accepted; it may close an older one to make room.
 */
bool admit_conn(struct server *srv, const uint8_t key[16], const char *name);

/* keys.c: the psk file of a configuration, checked against it */
int keys_load(const struct config *cfg, struct psk_table *keys, char *err, size_t errlen);

/* capacity.c */
int meminfo_avail_kb(const char *path, uint64_t *kb);
uint64_t capacity_target(uint64_t used_pages, uint64_t avail_kb, const struct config *cfg);

#endif
