/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Network RAM client, as the target sees it: page servers by index,
 * requests that store, fetch and invalidate runs of pages, and the events
 * of server membership and loss. The target knows slots and media; this
 * side knows sockets, the protocol (n2l-proto.h), sessions and seals.
 *
 * Glossary
 *   server   one page server of the device, by index (0..N2L_NET_SERVERS-1),
 *            with at most one connection at a time
 *   request  one frame to a server and its reply (struct n2l_net_req); the
 *            caller owns its memory (a bio's per-bio data, or its stack)
 *   seal     16 bytes that travel and are stored with every page and prove
 *            that it is the page written for that slot and version
 *   epoch    what a server announces at every connect; a new one means it
 *            restarted and holds nothing
 *   usable   connected, reconciled, not draining: it may take writes
 *
 * A server's life: connecting -> reconciling (reads are served, writes
 * are not) -> up -> down (connection lost: reads wait for it) -> away
 * (down for longer than dead_after_ms: reads that need it fail) -> ...
 * Draining (remove_server) is set by the target; a server leaves the
 * table only when the target removes it.
 */
#ifndef N2L_NETRAM_H
#define N2L_NETRAM_H

#include <linux/bio.h>
#include <linux/list.h>
#include <linux/socket.h>
#include <linux/types.h>

#include "n2l-proto.h"
#include "parse.h"

#define N2L_NET_SERVERS		64	/* indices of one device's servers */
#define N2L_MAX_REPLICAS	3

/* How a request can end besides a server's status (enum n2l_status, >= 0). */
#define N2L_NET_CONN_LOST	(-ECONNRESET)	/* the connection broke first */
#define N2L_NET_AWAY		(-EHOSTDOWN)	/* the server is away or leaving */
#define N2L_NET_BADSEAL		(-EBADMSG)	/* a page failed its seal check */
#define N2L_NET_NOMEM		(-ENOMEM)

enum n2l_srv_state {
	N2L_SRV_CONNECTING,	/* never connected yet */
	N2L_SRV_RECONCILING,	/* connected; making it hold what it should */
	N2L_SRV_UP,
	N2L_SRV_DOWN,		/* connection lost: reconnecting */
	N2L_SRV_AWAY,		/* down for longer than dead_after_ms */
	N2L_SRV_STOPPED,	/* being removed */
};

struct n2l_nsrv;

/*
 * One request. Fill it with n2l_net_put()/n2l_net_get() (or by hand for
 * the sync helpers) and submit it; done() is called exactly once, from any
 * context but hard irq, never under a lock of the caller.
 */
struct n2l_net_req {
	struct list_head node;
	struct n2l_nsrv *srv;
	u64 id;
	u64 seq;			/* position in the server's FIFO */
	unsigned long queued_at;	/* jiffies */
	unsigned long sent_at;
	u8 op;
	u8 state;			/* internal: enum n2l_req_state */
	u8 busy;			/* internal: sender, receiver at work */
	u16 flags;			/* N2L_F_REPLY: our answer to the server */
	bool reserved;			/* PUT: its room taken at placement */
	/*
	 * It may name a page that an invalidation queued before it names (a
	 * PUT or RETAIN of a version used before: relocations keep a slot's
	 * version), so it leaves only after every such invalidation. Others
	 * (reads, writes of a version never sent) may pass them.
	 */
	bool after_invals;
	u32 count;
	u64 key;
	u64 vers;
	struct bio *bio;		/* PUT: pages to send; GET: destination */
	const void *seals;		/* PUT: count seals */
	void *buf;			/* other request payloads */
	u32 buf_len;
	void *reply_buf;		/* where an OK reply's payload goes */
	u32 reply_len;
	u32 conn_gen;			/* answers: the connection that asked */
	int status;
	void (*done)(struct n2l_net_req *req);
	void *private;
};

/* What a write sends to each server of its group. */
struct n2l_sealed {
	struct bio *wire;		/* the pages as they go on the wire */
	void *seals;			/* count * N2L_SEAL_LEN bytes */
	bool bounced;			/* wire is ours (encrypted copies) */
};

/* A server as the target sees it (n2l_net_server_info()). */
struct n2l_net_info {
	enum n2l_srv_state state;
	bool draining;
	u64 free;			/* pages it can still take, estimated */
	u64 capacity;			/* pages it donates, as it said */
	u64 server_held;		/* pages it holds for us, as it said */
	u32 inflight;			/* requests queued or in flight */
	u32 latency_us;			/* mean time to a reply */
	bool slow;			/* demoted: see n2l_srv_slow() */
};

/*
 * Events, called from the client's event work (process context, memalloc
 * noio scope), never with a client lock held. A server's events never run
 * concurrently with each other.
 */
struct n2l_net_ops {
	/*
	 * It restarted (a new epoch): every copy it had is gone. Called as
	 * its reconciliation starts, before it may take writes again.
	 */
	void (*restarted)(void *owner, unsigned int idx);
	/*
	 * Reconciliation: up to @max copies the slot map expects on @idx,
	 * from *@cursor on (advanced); 0 when there are no more, -errno to
	 * stop reconciling (it is tried again at the next connect).
	 */
	int (*list_copies)(void *owner, unsigned int idx, u64 *cursor,
			   struct n2l_copy *copies, u32 max);
	/*
	 * Copies the server does not have after all; how many of them the
	 * slot map still named (the others changed after they were listed:
	 * overwritten, discarded or moved, their copy dropped on purpose).
	 */
	u32 (*missing)(void *owner, unsigned int idx,
		       const struct n2l_copy *copies, u32 n);
	/* @idx may take writes now (reconciled, or no longer draining). */
	void (*usable)(void *owner, unsigned int idx);
	/* @idx has been down for dead_after_ms. */
	void (*away)(void *owner, unsigned int idx);
	/*
	 * The server moved these pages to server @to (MOVED), or hands them
	 * back (RETURN: @pages, decrypted, with @bad marking pages that
	 * failed their seal check). Return N2L_ST_OK when the server may drop
	 * them, N2L_ST_FULL to make it keep them and ask again later.
	 */
	int (*moved)(void *owner, unsigned int from, unsigned int to,
		     const struct n2l_copy *copies, u32 n);
	int (*returned)(void *owner, unsigned int from,
			const struct n2l_copy *copies, u32 n, struct bio *pages,
			const unsigned long *bad);
	/* Room may have appeared after n2l_net_room_coming() said so. */
	void (*room)(void *owner);
};

struct n2l_net_config {
	const char *devname;		/* for messages and thread names */
	u64 nr_keys;			/* slots of the device */
	const struct n2l_net_ops *ops;
	void *owner;
	const char *identity;		/* authenticate as this; NULL: do not */
	const u8 *psk;			/* its N2L_PSK_LEN-byte key */
	const u8 *page_key;		/* encrypt pages; NULL: CRC32C seals */
};

#define N2L_PAGE_KEY_LEN	32

struct n2l_net;

struct n2l_net *n2l_net_create(const struct n2l_net_config *cfg);
/* The device is going: reads and writes stop waiting for absent servers. */
void n2l_net_stop_waiting(struct n2l_net *net);
/*
 * Drops the device's pages on every reachable server, unless told to keep
 * them, and stops.
 */
void n2l_net_destroy(struct n2l_net *net);
void n2l_net_set_device(struct n2l_net *net, u64 device);
void n2l_net_keep_pages(struct n2l_net *net);

/* Servers: by canonical address; an index until removed. */
int n2l_net_server_add(struct n2l_net *net, const char *addr, char **error);
int n2l_net_server_add_at(struct n2l_net *net, const struct sockaddr_storage *ss,
			  unsigned int idx, char **error);
bool n2l_net_server_addr(struct n2l_net *net, unsigned int idx,
			 struct sockaddr_storage *ss);
int n2l_net_server_find(struct n2l_net *net, const char *addr);
void n2l_net_server_set_draining(struct n2l_net *net, unsigned int idx,
				 bool draining);
/* Drops its pages if it can be reached, disconnects, frees the index. */
void n2l_net_server_remove(struct n2l_net *net, unsigned int idx);
bool n2l_net_server_info(struct n2l_net *net, unsigned int idx,
			 struct n2l_net_info *info);
int n2l_net_server_name(struct n2l_net *net, unsigned int idx, char *buf,
			size_t len);
bool n2l_net_usable(struct n2l_net *net, unsigned int idx);
/* Reachable for reads: up or reconciling. */
bool n2l_net_readable(struct n2l_net *net, unsigned int idx);
u64 n2l_net_free(struct n2l_net *net, unsigned int idx);
u64 n2l_net_free_total(struct n2l_net *net, u64 avoid);
/*
 * Whether room may appear on a server with nothing new sent: PUTs in
 * flight (an overwrite frees its old copies when it lands), invalidations
 * not yet answered, or a reconciliation under way. When true, ops->room
 * or ops->usable follows.
 */
bool n2l_net_room_coming(struct n2l_net *net);
unsigned int n2l_net_best(struct n2l_net *net, u32 pages, u64 avoid,
			  const u32 *held, unsigned int want, u8 *out);
/*
 * n2l_net_best() with @pages of room taken on each server chosen: each
 * gets a PUT made by n2l_net_put_reserved() or n2l_net_unreserve().
 */
unsigned int n2l_net_reserve(struct n2l_net *net, u32 pages, u64 avoid,
			     const u32 *held, unsigned int want, u8 *out);
void n2l_net_unreserve(struct n2l_net *net, unsigned int idx, u32 pages);
u32 n2l_net_inflight(struct n2l_net *net, unsigned int idx);
int n2l_net_emit_stats(struct n2l_net *net, unsigned int idx, char *buf,
		       size_t len);
const char *n2l_net_state_name(enum n2l_srv_state state);
int n2l_parse_addr(const char *name, struct sockaddr_storage *ss, int *len);
void n2l_format_addr(const struct sockaddr_storage *ss, char *buf, size_t len);

/*
 * Tests only (the module parameter test_nomem, nomem.c): whether an
 * allocation with @gfp finds no memory now; one that would wait for
 * memory waits here while the parameter is set. The pool allocators are
 * those of the client's mempools, which the parameter reaches too.
 */
bool n2l_nomem(gfp_t gfp);
void *n2l_pool_alloc_page(gfp_t gfp, void *data);
void n2l_pool_free_page(void *page, void *data);
void *n2l_pool_kmalloc(gfp_t gfp, void *size);

/* Knobs, in milliseconds. */
void n2l_net_set_timeouts(struct n2l_net *net, unsigned int timeout_ms,
			  unsigned int dead_after_ms);

/* Seals. */
int n2l_net_seal(struct n2l_net *net, struct n2l_sealed *sd, struct bio *data,
		 u64 key, u32 count, u64 vers, gfp_t gfp);
void n2l_net_unseal(struct n2l_net *net, struct n2l_sealed *sd);

/*
 * Requests. n2l_net_put() may store a version sent before (to this server
 * or another): it leaves after every invalidation queued before it.
 */
void n2l_net_put(struct n2l_net_req *req, u64 key, u32 count, u64 vers,
		 const struct n2l_sealed *sd);
/*
 * A PUT of a version never sent anywhere, to a server whose room
 * n2l_net_reserve() took: no invalidation can name it yet.
 */
void n2l_net_put_reserved(struct n2l_net_req *req, u64 key, u32 count,
			  u64 vers, const struct n2l_sealed *sd);
void n2l_net_get(struct n2l_net_req *req, u64 key, u32 count, u64 vers,
		 struct bio *dst);
void n2l_net_submit(struct n2l_net *net, unsigned int idx,
		    struct n2l_net_req *req);
/* Submits @req and waits for its end, bounded; returns its status. */
int n2l_net_sync(struct n2l_net *net, unsigned int idx,
		 struct n2l_net_req *req);
/*
 * Forget (@key, @vers) on server @idx, after every request queued to it so
 * far. Never sleeps; may be called under the target's spinlock.
 */
void n2l_net_inval(struct n2l_net *net, unsigned int idx, u64 key, u64 vers);
/*
 * Reconcile @idx now: it takes no writes until it holds exactly what
 * ops->list_copies names. Never sleeps.
 */
void n2l_net_reconcile(struct n2l_net *net, unsigned int idx);
/* RETAIN a page outside a reconciliation: claims a moved copy. */
int n2l_net_claim(struct n2l_net *net, unsigned int idx,
		  const struct n2l_copy *copies, u32 n);

/*
 * Tests only: the module parameter debug_hold makes a race deterministic
 * (tests/vm, issue 24). While it names a point, the code there waits
 * (at most N2L_DEBUG_HOLD_MAX_MS at a time), or for N2L_HOLD_SEND the
 * send works send nothing; 0, the default, holds nothing anywhere.
 */
enum n2l_hold {
	N2L_HOLD_NONE,
	N2L_HOLD_RECONCILE,	/* a server's event work, before a reconciliation */
	N2L_HOLD_EVENTS,	/* a server's event work, before it looks at its events */
	N2L_HOLD_DRAINED,	/* the repair work, once a drained server is removed */
	N2L_HOLD_SEND,		/* every send work: send nothing */
};

#define N2L_DEBUG_HOLD_MAX_MS	120000

void n2l_debug_hold(enum n2l_hold point);
bool n2l_debug_holding(enum n2l_hold point);

#endif /* N2L_NETRAM_H */
