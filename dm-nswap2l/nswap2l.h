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
 *   version  per-slot stamp of the newest write or discard (slotmap.h)
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
#include "runalloc.h"
#include "slotmap.h"

#define DM_MSG_PREFIX "nswap2l"

/* Longest run given to one TRIM or taken out of quarantine at once. */
#define N2L_RELEASE_RUN		1024
/* Slots a discard unmaps per hold of the lock. */
#define N2L_DISCARD_BATCH	256

struct n2l_medium_stats {
	atomic64_t reads;
	atomic64_t writes;
	atomic64_t read_sectors;
	atomic64_t write_sectors;
};

struct n2l_medium_dev {
	enum n2l_medium kind;
	struct block_device *bdev;	/* NULL: no block device */
	bool discard;			/* pass TRIM down when blocks are freed */
	struct runalloc alloc;		/* under store->lock */
	u32 held;			/* slots mapped here, under store->lock */
	struct n2l_medium_stats stats;
};

/*
 * Versions are stamped from one counter. A write that installs itself at
 * completion compares versions, which is only sound if the counter has
 * not wrapped while the write was in flight. The version space is split
 * in buckets; a bucket is not entered again while writes stamped from its
 * previous round are still in flight.
 */
#define N2L_VERSION_BUCKET_SHIFT	20
#define N2L_VERSION_BUCKETS		(1U << (SME_VERSION_BITS - \
					 N2L_VERSION_BUCKET_SHIFT))

struct n2l_gate {
	unsigned int cur;		/* generation new I/O joins */
	bool draining;			/* frees of cur ^ 1 await its I/O */
	atomic_t inflight[2];
};

/* Counters not tied to one medium. */
struct n2l_stats {
	atomic64_t nospc;		/* writes failed: every medium full */
	atomic64_t discarded;		/* slots unmapped by discards */
	atomic64_t zero_reads;		/* slots read that held no data */
	atomic64_t dropped;		/* writes superseded before they landed */
};

struct n2l_store {
	struct list_head list;		/* in the table of stores */
	struct mapped_device *md;
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
	u32 next_version;
	atomic_t version_inflight[N2L_VERSION_BUCKETS];
	struct n2l_gate gate;
	struct n2l_placement *placement;
	struct n2l_stats stats;

	/* Background work: releases, discards and writes waiting for room. */
	struct workqueue_struct *wq;
	struct work_struct worker;
	struct bio_list deferred;	/* under lock */

	/* Serialises runtime reconfiguration (messages, sysfs). */
	struct mutex config_lock;

	struct kobject kobj;
	bool kobj_added;
	struct completion kobj_released;
};

/* The per-bio data: what end_io must do for the bio. */
enum n2l_io_kind {
	N2L_IO_NONE,		/* flush and ours-to-complete bios */
	N2L_IO_READ,		/* remapped read */
	N2L_IO_WRITE_INPLACE,	/* overwrite where the slots already live */
	N2L_IO_WRITE_NEW,	/* write to fresh blocks, installed at end */
};

struct n2l_io {
	u8 kind;
	u8 medium;
	u8 gen;
	n2l_slot_t slot;	/* first slot */
	u32 nr;			/* slots */
	n2l_blk_t blk;		/* first block (N2L_IO_WRITE_NEW) */
	u32 version;		/* stamped on every slot (N2L_IO_WRITE_NEW) */
};

/* One table's instance of the target; several may share a store. */
struct n2l_target {
	struct dm_target *ti;
	struct n2l_store *store;
	struct dm_dev *flash;		/* NULL for "-" */
	struct dm_dev *disk;		/* NULL for "-" */
	bool discard_passdown;
	/* Set at construction, applied to the store at first resume. */
	struct n2l_placement *placement;
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
bool __n2l_version_take(struct n2l_store *s, u32 *version);
void n2l_version_put(struct n2l_store *s, u32 version);

/* nswap2l-io.c */
int n2l_map(struct dm_target *ti, struct bio *bio);
int n2l_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error);
void n2l_worker(struct work_struct *w);

/* nswap2l-control.c: what messages and sysfs stores call */
int n2l_set_placement(struct n2l_store *s, unsigned int argc, char **argv,
		      char **error);
int n2l_emit_placement(struct n2l_target *t, char *buf, size_t len);
void n2l_placement_name(struct n2l_target *t, char *buf, size_t len);

/* nswap2l-sysfs.c */
int n2l_sysfs_add(struct n2l_store *s);
void n2l_sysfs_del(struct n2l_store *s);

/* nswap2l-ctr.c */
int n2l_ctr(struct dm_target *ti, unsigned int argc, char **argv);
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

#endif /* N2L_NSWAP2L_H */
