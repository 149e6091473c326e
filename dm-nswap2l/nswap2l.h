/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * nswap2l: internal interfaces of the target.
 *
 * Glossary
 *   slot     4 KiB unit of the virtual device (n2l_slot_t)
 *   block    slot-sized unit of one medium (n2l_blk_t)
 *   medium   where a slot lives: Network RAM, Flash or disk
 *   store    the state of one nswap2l device (slot map, media, counters);
 *            it outlives table reloads, like dm-thin's pool
 *   version  which write of a slot a Network RAM copy holds (slotmap.h)
 *   group    a replica group: the servers holding a slot's copies
 *   gate     the I/O generations that keep a freed block out of reuse
 *            until the I/O that may still touch it has completed
 */
#ifndef N2L_NSWAP2L_H
#define N2L_NSWAP2L_H

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/device-mapper.h>
#include <linux/kobject.h>
#include <linux/workqueue.h>

#include "n2l-policy.h"
#include "netram.h"
#include "runalloc.h"
#include "slotmap.h"

#define DM_MSG_PREFIX "nswap2l"

/* Longest run given to one TRIM or taken out of quarantine at once. */
#define N2L_RELEASE_RUN		1024
/* Slots a discard unmaps per hold of the lock. */
#define N2L_DISCARD_BATCH	256

/*
 * Requests completed, by latency from map to end_io (time spent deferred
 * or in a slow path included): bucket 0 under 1 us, bucket i from
 * 2^(i-1) us to under 2^i us, the last from 2^22 us (4.2 s) on.
 */
#define N2L_LAT_BUCKETS	24

struct n2l_latency {
	atomic64_t bucket[N2L_LAT_BUCKETS];
};

struct n2l_medium_stats {
	struct n2l_latency lat[2];	/* READ, WRITE */
	atomic64_t lat_done[2];		/* requests the histograms count */
	atomic64_t lat_sum_us[2];	/* their latencies, summed */
	atomic64_t reads;
	atomic64_t writes;
	atomic64_t read_sectors;
	atomic64_t write_sectors;
	atomic64_t moved_in, moved_out;	/* slots moved between media */
	atomic_t reads_inflight;	/* foreground reads, not counters */
};

struct n2l_medium_dev {
	enum n2l_medium kind;
	struct block_device *bdev;	/* NULL: no block device */
	bool discard;			/* pass TRIM down when blocks are freed */
	struct runalloc alloc;		/* under store->lock */
	u32 held;			/* slots mapped here, under store->lock */
	struct n2l_medium_stats stats;
};

struct n2l_gate {
	unsigned int cur;		/* generation new I/O joins */
	bool draining;			/* frees of cur ^ 1 await its I/O */
	unsigned int releasing;		/* workers holding blocks they free */
	atomic_t inflight[2];
};

/* Counters not tied to one medium. */
struct n2l_stats {
	atomic64_t nospc;		/* writes failed: every medium full */
	atomic64_t discarded;		/* slots unmapped by discards */
	atomic64_t zero_reads;		/* slots read that held no data */
	atomic64_t dropped;		/* moved copies dropped: the slot changed */
	atomic64_t slow_writes;		/* writes Network RAM refused, placed again */
	atomic64_t slow_reads;		/* reads sent again (failover, moved) */
	atomic64_t read_issues;		/* reads sent to a medium */
	atomic64_t read_parallel;	/* sum of reads in flight at each issue */
	atomic64_t prefetched;		/* slots moved by the migration engine */
	atomic64_t prefetch_hits;	/* first reads of prefetched slots */
	atomic64_t prefetch_reads;	/* every read of a prefetched slot */
	atomic64_t prefetch_target;	/* slots the engine's runs set out to move */
	atomic64_t prefetch_activations;	/* runs of the engine that moved */
	atomic64_t prefetch_room_target;	/* of the target, to make room */
};

enum n2l_amount_mode {
	N2L_AMOUNT_SWAPOUTS,	/* percent of the slots written since the last run */
	N2L_AMOUNT_FIXED,	/* slots per run */
	N2L_AMOUNT_NETRAM,	/* percent of the slots on Network RAM */
};

/* What the table line and the knobs say about the migration engine. */
struct n2l_mig_knobs {
	unsigned int interval_ms;	/* between runs */
	unsigned int amount;		/* percent or slots, per amount_mode */
	unsigned int amount_mode;	/* enum n2l_amount_mode */
	unsigned int enabled;		/* 0 or 1 */
};

/* Moves in flight at most, and slots one move carries at most. */
#define N2L_MIG_MOVERS		8
#define N2L_MIG_RUN_PAGES	64

/*
 * Candidates of one selection that share one copy, consecutive slots; a
 * mover's share of them comes with its Flash blocks.
 */
struct n2l_mig_run {
	n2l_slot_t first;
	u32 nr;
	u64 loc;		/* the Network RAM copies they share */
	n2l_blk_t blk;		/* a move: the Flash blocks of its slots */
};

/* A worker of the engine that moves one run at a time, with its buffer. */
struct n2l_mover {
	struct n2l_store *store;
	struct work_struct work;
	struct n2l_mig_run run;
	struct bio *buf;		/* N2L_MIG_RUN_PAGES pages */
};

/*
 * The migration engine (nswap2l-migrate.c). Knobs are written under the
 * store's config_lock and read without it.
 */
struct n2l_mig {
	struct n2l_mig_knobs knobs;

	/* The policy, and one being filled in for a switch: under lock. */
	struct n2l_prefetch *policy;
	struct n2l_prefetch *next;
	u32 next_cursor;		/* next has learned the slots below */

	atomic64_t swapouts;		/* slots written since the last run */
	bool running;			/* under lock: resumed, the worker runs */
	struct workqueue_struct *wq;
	struct delayed_work work;
	/* The worker's own. */
	n2l_slot_t *victims;
	struct n2l_mig_run *runs;
	unsigned long round_end;	/* jiffies: no move handed out after */
	u64 owed;			/* slots a cut activation left to the next */

	/* The movers: the worker hands them runs, they move in parallel. */
	struct workqueue_struct *movers_wq;
	struct n2l_mover movers[N2L_MIG_MOVERS];
	wait_queue_head_t wait;		/* a mover went idle, or stop */
	/* Under lock: */
	struct n2l_mover *idle[N2L_MIG_MOVERS];
	unsigned int nr_idle;
	u64 round_moved;		/* slots this activation moved */
	u64 round_busy;			/* slots in moves in flight */
	bool flash_full;		/* a move found no Flash block */

	/* What the worker last saw, for a policy's plan(): its own. */
	struct n2l_mig_seen {
		u64 prefetched, prefetch_reads;
		u64 reads[N2L_NR_MEDIA], read_us[N2L_NR_MEDIA];
		u64 idle_ns, clock_ns;
	} seen;
};

/*
 * A replica group: the servers (indices of the client) that hold the
 * copies of every slot pointing at it. Losing a server changes its groups
 * in place, for all their slots at once.
 */
struct n2l_group {
	u8 nr;				/* servers; 0: the copies are lost */
	u8 srv[N2L_MAX_REPLICAS];	/* sorted */
	u32 held;			/* slots pointing here */
	u32 refs;			/* writes and moves that may point slots here */
};

struct repair_plan;
struct n2l_mender;

/* Network RAM as a medium: the target's half (nswap2l-netram.c). */
struct n2l_netram {
	struct n2l_net *net;		/* the client: servers and sockets */
	unsigned int replicas;		/* copies per slot wanted */
	/* Under the store's lock: */
	struct n2l_group groups[SME_GROUPS];
	u32 srv_held[N2L_NET_SERVERS];	/* slots with a copy on each server */
	/* Restarts seen of each server: the copies it took before are gone. */
	u32 restarts[N2L_NET_SERVERS];
	u64 present;			/* servers of the device */
	u64 draining;			/* servers being removed */
	u64 next_version;		/* versions handed out: 1, 2, ... */
	u64 vers_limit;			/* and below this (metadata) */
	u32 lost_marked;		/* slots marked SME_LOST */
	/* Writes to each server not yet installed or dropped. */
	atomic_t unsettled[N2L_NET_SERVERS];

	/* Knobs (ms), read without locking. */
	unsigned int timeout_ms;
	unsigned int dead_after_ms;

	/*
	 * Where a MOVED's pages are read back from the peer, one MOVED at a
	 * time: an event work must not wait for memory.
	 */
	struct mutex move_lock;
	struct bio *move_buf;		/* N2L_MAX_PAGES pages */

	/* Drains, repairs and the sweep of lost slots (nswap2l-repair.c). */
	struct workqueue_struct *repair_wq;
	struct delayed_work repair;
	struct repair_plan *plan;
	struct workqueue_struct *mend_wq;
	struct n2l_mender *menders;
	unsigned int repair_delay;	/* ms, the repair work's own */
	/* stopping, and queueing the repair (nests in the store lock) */
	spinlock_t kick_lock;
	bool stopping;

	atomic64_t failed_reads;	/* slots whose read found no copy */
	atomic64_t moved_pages;		/* pages servers moved to a peer */
	atomic64_t returned_pages;	/* pages servers handed back */
	atomic64_t rereplicated;	/* slots given their copies back */
	atomic64_t auth_failures;	/* pages that failed their seal check */
};

struct n2l_store {
	struct list_head list;		/* in the table of stores */
	struct mapped_device *md;
	dev_t devt;			/* in trace events */
	unsigned int refs;		/* under the stores mutex */
	struct dm_table *claimed_by;	/* newest table holding the store */

	/*
	 * Protects the slot map, the allocators, held counts, the gate's
	 * cur/draining, the version counter and the placement pointer.
	 * Taken from bio completion, hence irqsave.
	 */
	spinlock_t lock;
	struct slotmap map;
	struct n2l_medium_dev media[N2L_NR_MEDIA];
	struct n2l_gate gate;
	struct n2l_placement *placement;
	struct n2l_stats stats;

	/* Background work: releases, discards and writes waiting for room. */
	struct workqueue_struct *wq;
	struct work_struct worker;
	struct bio_list deferred;	/* under lock */
	/*
	 * Bios parked, in @deferred or taken off it by the worker and not yet
	 * placed (under lock): a write landing while the worker holds them
	 * must still queue it again, or they would wait for nothing.
	 */
	unsigned int deferred_nr;

	/*
	 * Slow paths: bios that need synchronous sub-I/O (nswap2l-slow.c),
	 * each on a queue of its own: a slow read may wait for a slow write.
	 * A write waiting for room stays queued and is tried again later
	 * (the work's delay), never holding up the writes behind it.
	 */
	struct n2l_slow {
		struct n2l_store *store;
		struct bio_list bios;		/* under the store's lock */
		struct workqueue_struct *wq;
		struct delayed_work work;
	} slow_writes, slow_reads;
	struct bio_set bs;		/* clones for sub-I/O */

	struct n2l_netram netram;
	struct n2l_mig mig;

	/*
	 * Serialises runtime reconfiguration (messages, sysfs); never taken
	 * by the I/O path, status or the background work.
	 */
	struct mutex config_lock;

	/* Under lock: a table was loaded, its size not yet checked. */
	bool size_unchecked;

	struct kobject kobj;
	bool kobj_added;
	struct completion kobj_released;

	/* The metadata device's (nswap2l-meta.c); NULL without one. */
	struct n2l_meta *meta;
	/* Invalidations waiting for a commit (nswap2l-meta-inval.c). */
	struct n2l_deferred *invals;

	/* What a reload must keep: its identity and its page key's name. */
	char identity[N2L_ID_LEN];
	char key_desc[N2L_ID_LEN + 16];
};

/* The per-bio data: what end_io must do for the bio. */
enum n2l_io_kind {
	N2L_IO_NONE,		/* flush and ours-to-complete bios */
	N2L_IO_READ,		/* remapped read */
	N2L_IO_WRITE_INPLACE,	/* overwrite where the slots already live */
	N2L_IO_WRITE_NEW,	/* write to fresh blocks, installed at end */
	N2L_IO_LANDED,		/* a slow write, installed: only timed at end */
};

struct n2l_io {
	u64 start_ns;		/* when it was mapped, for the latency */
	u8 kind;
	u8 medium;
	u8 gen;
	u8 group;		/* Network RAM: the group written or read */
	/*
	 * A FUA write not yet held for a commit: noted at map time, since the
	 * block layer clears REQ_FUA on the way to a medium without it.
	 */
	bool fua;
	n2l_slot_t slot;	/* first slot */
	u32 nr;			/* slots */
	n2l_blk_t blk;		/* first block, on a block medium */
	u64 vers;		/* Network RAM: the version written or read */
	unsigned long since;	/* jiffies: deferred while no medium is up */
	unsigned long give_up;	/* jiffies: a slow write waits for room until; 0: new */
	/* Network RAM: a write's request per server, a read's request. */
	struct n2l_store *store;
	u8 nreq;
	u8 srv[N2L_MAX_REPLICAS];	/* the servers of the requests */
	u32 epoch[N2L_MAX_REPLICAS];	/* writes: restarts[srv] when placed */
	atomic_t failed;	/* writes: requests that failed (bits) */
	atomic_t pending;	/* writes: requests not ended */
	struct n2l_sealed sealed;	/* writes: what goes on the wire */
	struct n2l_net_req req[N2L_MAX_REPLICAS];
};

#define N2L_TABLE_SERVERS	32
#define N2L_MAX_FEATURES	5

/* One table's instance of the target; several may share a store. */
struct n2l_target {
	struct dm_target *ti;
	struct n2l_store *store;
	struct dm_dev *flash;		/* NULL for "-" */
	struct dm_dev *disk;		/* NULL for "-" */
	struct dm_dev *meta;		/* metadata:<dev>; NULL without */
	bool discard_passdown;
	unsigned int replicas;		/* replicas:N */
	char identity[N2L_ID_LEN];	/* psk:<identity>; "" without */
	u8 psk[N2L_PSK_LEN];
	char key_desc[N2L_ID_LEN + 16];	/* encrypt:<description>; "" without */
	u8 page_key[N2L_PAGE_KEY_LEN];
	unsigned int nr_servers;
	char servers[N2L_TABLE_SERVERS][N2L_ADDR_LEN];
	/* Set at construction, applied to the store at first resume. */
	struct n2l_placement *placement;
	struct n2l_prefetch *prefetch;
	struct n2l_mig_knobs knobs;
	bool applied;
};

/* nswap2l-store.c */
struct n2l_store *n2l_store_get(struct n2l_target *t, char **error);
void n2l_store_put(struct n2l_store *s, struct n2l_target *t);
void n2l_store_apply(struct n2l_store *s, struct n2l_target *t);
void n2l_store_clear_stats(struct n2l_store *s);

/* nswap2l-gate.c */
unsigned int n2l_gate_enter(struct n2l_store *s);
void n2l_gate_exit(struct n2l_store *s, unsigned int gen);
void __n2l_free_blocks(struct n2l_store *s, enum n2l_medium m, n2l_blk_t blk,
		       u32 len);
bool __n2l_free_pending(struct n2l_store *s);
void n2l_gate_release(struct n2l_store *s);
void n2l_gate_release_held(struct n2l_store *s, unsigned int q);

/* nswap2l-meta.c */
struct n2l_meta;
int n2l_meta_open(struct n2l_store *s, struct block_device *bdev,
		  char **error);
void n2l_meta_close(struct n2l_store *s);
int n2l_meta_flush(struct n2l_store *s, struct bio *bio);
struct n2l_io;
bool n2l_meta_hold(struct n2l_store *s, struct bio *bio, struct n2l_io *io,
		   blk_status_t error);
bool n2l_meta_failed(struct n2l_store *s);
unsigned int __n2l_meta_pending(struct n2l_store *s);
bool __n2l_meta_holds(struct n2l_store *s);
void __n2l_meta_kick(struct n2l_store *s);
int n2l_meta_sync(struct n2l_store *s);
ssize_t n2l_meta_show(struct n2l_store *s, char *buf);
struct block_device *n2l_meta_bdev(struct n2l_store *s);
bool __n2l_meta_netram_keeps(struct n2l_store *s, sme_t e);

/* nswap2l-meta-inval.c */
struct n2l_deferred;
int n2l_deferred_init(struct n2l_store *s);
void n2l_deferred_exit(struct n2l_store *s);
void __n2l_defer_inval(struct n2l_store *s, unsigned int srv, n2l_slot_t slot,
		       u64 vers, bool moving);
u64 __n2l_deferred_moving(struct n2l_store *s);
u32 __n2l_deferred_nr(struct n2l_store *s);
bool __n2l_deferred_waiting(struct n2l_store *s);
void n2l_deferred_release(struct n2l_store *s, unsigned int half);
u32 n2l_deferred_list(struct n2l_store *s, unsigned int idx, u64 base,
		      u64 *cursor, struct n2l_copy *copies, u32 max);

/* nswap2l-io.c */
void __n2l_held_add(struct n2l_store *s, sme_t e, int delta);
void __n2l_media_free(struct n2l_store *s, u32 *free, u64 avoid);
enum n2l_medium __n2l_ask_placement(struct n2l_store *s, u32 *free,
				    enum n2l_medium now);
bool __n2l_full(struct n2l_store *s);
void n2l_install(struct n2l_store *s, struct n2l_io *io, bool ok);
void __n2l_free_copy(struct n2l_store *s, n2l_slot_t slot, sme_t e);
void __n2l_writes_landed(struct n2l_store *s);
int n2l_map(struct dm_target *ti, struct bio *bio);
int n2l_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error);
void n2l_worker(struct work_struct *w);

/* nswap2l-slow.c */
void n2l_slow_write(struct n2l_store *s, struct bio *bio);
void n2l_slow_read(struct n2l_store *s, struct bio *bio);
int n2l_slow_init(struct n2l_store *s);
void n2l_slow_exit(struct n2l_store *s);
int n2l_block_io(struct n2l_store *s, struct bio *data, u32 first, u32 n,
		 enum n2l_medium m, u32 blk, blk_opf_t op);
struct bio *n2l_sub_bio(struct n2l_store *s, struct bio *data, u32 first,
			u32 n);
struct bio *n2l_alloc_buffer(u32 pages);
void n2l_free_buffer(struct bio *bio);

/* nswap2l-groups.c: replica groups, under the store lock */
int __n2l_group_get(struct n2l_store *s, const u8 *srv, unsigned int nr);
void __n2l_group_put(struct n2l_store *s, unsigned int g);
void __n2l_group_hold(struct n2l_store *s, unsigned int g, int delta);
bool n2l_group_has(const struct n2l_group *grp, unsigned int srv);
int __n2l_group_change(struct n2l_store *s, unsigned int g, const u8 *drop,
		       unsigned int ndrop, const u8 *add, unsigned int nadd);
u32 __n2l_groups_drop_server(struct n2l_store *s, unsigned int srv);
unsigned int __n2l_fresh_copies(struct n2l_store *s, u8 *srv, u32 *epoch,
				unsigned int n);
unsigned int __n2l_group_live(struct n2l_store *s, unsigned int g);
u32 __n2l_lost_slots(struct n2l_store *s);
u32 __n2l_underreplicated(struct n2l_store *s);

/* nswap2l-netram.c: Network RAM as a medium */
int n2l_netram_init(struct n2l_store *s, struct n2l_target *t);
void n2l_netram_exit(struct n2l_store *s);
u32 __n2l_netram_free(struct n2l_store *s, u64 avoid);
u64 n2l_netram_capacity(struct n2l_store *s, bool reachable);
void n2l_netram_check_size(struct n2l_store *s);
int __n2l_netram_place(struct n2l_store *s, u32 pages, u64 avoid,
		       unsigned int want, unsigned int need, u8 *srv,
		       unsigned int *nsrv, u64 *vers);
bool __n2l_netram_waiting(struct n2l_store *s, struct n2l_io *io);
bool __n2l_netram_room_coming(struct n2l_store *s);
void n2l_netram_write(struct n2l_store *s, struct bio *bio);
void n2l_netram_read(struct n2l_store *s, struct bio *bio);
int n2l_netram_pick_reader(struct n2l_store *s, unsigned int g, u64 tried);
void __n2l_netram_inval_group(struct n2l_store *s, unsigned int g,
			      n2l_slot_t slot, u64 vers, const u8 *keep,
			      unsigned int nkeep);
int n2l_netram_put_sealed(struct n2l_store *s, unsigned int srv, u64 key,
			  u32 n, u64 vers, const struct n2l_sealed *sd);
int n2l_netram_put_sync(struct n2l_store *s, unsigned int srv, u64 key,
			u32 n, u64 vers, struct bio *data, u32 first);
int n2l_netram_get_sync(struct n2l_store *s, unsigned int srv, u64 key,
			u32 n, u64 vers, struct bio *data, u32 first);
int n2l_netram_read_any(struct n2l_store *s, unsigned int g, u64 key, u32 n,
			u64 vers, struct bio *data, u32 first, u64 *tried);
void n2l_netram_settled(struct n2l_store *s, unsigned int srv);
bool n2l_netram_wait_settled(struct n2l_store *s, unsigned int idx);

/* nswap2l-relocate.c: moving runs of slots off their Network RAM copies */
struct n2l_reloc {
	n2l_slot_t first;
	u32 nr;
	unsigned int group;	/* the copies they leave... */
	u64 vers;		/* ...and their version */
	struct bio *data;	/* their pages, from the first on */
	enum n2l_medium to;	/* N2L_NETRAM, a block medium, or N2L_NONE: placement */
	bool have_blk;		/* blocks of @to given for all @nr slots... */
	n2l_blk_t blk;		/* ...from this one on, taken from its allocator */
	u8 drop[N2L_MAX_REPLICAS];	/* Network RAM: servers whose copies go */
	unsigned int ndrop;
	u8 add[N2L_MAX_REPLICAS];	/* Network RAM: servers that get copies */
	unsigned int nadd;
	bool add_present;	/* the added server has them already (MOVED) */
	u32 epoch[N2L_MAX_REPLICAS];	/* MOVED: restarts[add] when claimed */
	unsigned int flags;	/* set on the entries of moved slots */
	u32 moved;		/* out: slots that moved */
};

int n2l_relocate(struct n2l_store *s, struct n2l_reloc *r);
u32 n2l_relocate_pick(struct n2l_store *s, struct n2l_reloc *r, unsigned int want);

/*
 * Pauses for tests only (nswap2l-repair.c): tests/vm sets them to hold a
 * race window open long enough to make the race happen every time
 * (test_faults.py). Off unless a test sets them; nothing else should.
 */
enum n2l_test_site {
	N2L_TEST_INSTALL = 1,	/* a MOVED's or RETURN's run, before it installs */
	N2L_TEST_KICK = 2,	/* n2l_repair_kick, about to queue the repair */
	N2L_TEST_REPAIR = 4,	/* the repair work, as it starts */
	N2L_TEST_RELOCATED = 8,	/* a relocation, its copies made, before it installs */
	N2L_TEST_LISTED = 16,	/* a reconciliation, copies listed, before RETAIN */
	N2L_TEST_COMMIT = 32,	/* a commit, its lists switched, before it writes */
};
void n2l_test_delay(unsigned int site, const char *what);

/* nswap2l-repair.c: server events, drains, repairs */
extern const struct n2l_net_ops n2l_net_ops;
void n2l_repair_kick(struct n2l_store *s);
int n2l_repair_init(struct n2l_store *s);
void n2l_repair_stop(struct n2l_store *s);
void n2l_repair_exit(struct n2l_store *s);

/* nswap2l-migrate.c */
extern const struct n2l_mig_knobs n2l_mig_defaults;
int n2l_mig_init(struct n2l_store *s);
void n2l_mig_exit(struct n2l_store *s);
void n2l_mig_start(struct n2l_store *s);
void n2l_mig_stop(struct n2l_store *s);
void n2l_mig_kick(struct n2l_store *s);
void n2l_mig_apply(struct n2l_store *s, struct n2l_prefetch *p,
		   const struct n2l_mig_knobs *mk);
void __n2l_pf_write(struct n2l_store *s, n2l_slot_t slot, enum n2l_medium m);
void __n2l_pf_free(struct n2l_store *s, n2l_slot_t slot);
void __n2l_pf_read(struct n2l_store *s, n2l_slot_t first, u32 nr,
		   enum n2l_medium m);
struct n2l_prefetch *n2l_prefetch_create(unsigned int argc, char **argv,
					 u32 nr_slots, bool have_flash,
					 struct n2l_mig_knobs *mk,
					 char **error);
void n2l_prefetch_destroy(struct n2l_prefetch *p);
int n2l_set_prefetch(struct n2l_store *s, unsigned int argc, char **argv,
		     char **error);
int n2l_emit_mig_args(const struct n2l_mig_knobs *mk, char *buf, size_t len);

/* nswap2l-control.c: what messages and sysfs stores call */
int n2l_set_placement(struct n2l_store *s, unsigned int argc, char **argv,
		      char **error);
int n2l_emit_placement(struct n2l_target *t, char *buf, size_t len);
int n2l_add_server(struct n2l_store *s, const char *name, char **error);
int n2l_remove_server(struct n2l_store *s, const char *name, char **error);
int n2l_forget_server(struct n2l_store *s, const char *name, char **error);
int __n2l_server_add(struct n2l_store *s, const char *name, char **error);
int __n2l_server_add_at(struct n2l_store *s, const struct sockaddr_storage *ss,
			unsigned int idx, char **error);
void __n2l_server_drain(struct n2l_store *s, unsigned int idx, bool drain);
struct n2l_knob;
const struct n2l_knob *n2l_find_knob(const char *name);
bool n2l_knob_is_mig(const struct n2l_knob *k);
unsigned int *n2l_mig_knob_ptr(struct n2l_mig_knobs *mk,
			       const struct n2l_knob *k);
int n2l_knob_parse(const struct n2l_knob *k, const char *value,
		   unsigned int *v, char **error);
int n2l_mig_knobs_check(const struct n2l_mig_knobs *mk, char **error);
int n2l_set_knob(struct n2l_store *s, const char *knob, const char *value,
		 char **error);
int n2l_show_knob(struct n2l_store *s, const char *name, char *buf,
		  size_t len, bool all);
int n2l_emit_servers(struct n2l_store *s, char *buf, size_t len, bool table);
bool n2l_server_line(struct n2l_store *s, unsigned int idx, char *buf,
		     size_t len);
void n2l_placement_name(struct n2l_target *t, char *buf, size_t len);
int n2l_emit_prefetch(struct n2l_target *t, char *buf, size_t len);
void n2l_prefetch_name(struct n2l_target *t, char *buf, size_t len);

/* nswap2l-target.c */
void n2l_want_stable_writes(struct dm_target *ti);

/* nswap2l-sysfs.c */
int n2l_sysfs_add(struct n2l_store *s);
void n2l_sysfs_del(struct n2l_store *s);

/* nswap2l-ctr.c */
int n2l_ctr(struct dm_target *ti, unsigned int argc, char **argv);
int n2l_emit_features(struct n2l_target *t, char *buf, size_t len);
int n2l_read_logon_key(const char *desc, u8 *out, size_t len, char **error);
void n2l_dtr(struct dm_target *ti);
struct n2l_placement *n2l_placement_create(unsigned int argc, char **argv,
					   char **error);
void n2l_placement_destroy(struct n2l_placement *p);

static inline struct n2l_medium_dev *n2l_medium(struct n2l_store *s,
						enum n2l_medium m)
{
	return &s->media[m];
}

static inline u32 n2l_nr_slots(struct n2l_store *s)
{
	return s->map.nr_slots;
}

/* @num / @den in thousandths (0 when @den is), printed as "%llu.%03llu". */
static inline u64 n2l_milli(u64 num, u64 den)
{
	return den ? div64_u64(num * 1000, den) : 0;
}

#endif /* N2L_NSWAP2L_H */
