/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-medium free-space allocator handing out contiguous runs of blocks.
 *
 * A freed block does not become free at once: it may still be the target
 * of a read or write that started before it was freed. It first goes into
 * quarantine under the I/O generation current at the time (see
 * nswap2l-gate.c); when every I/O of that generation has completed the
 * target takes the quarantined runs (to TRIM them) and puts them back.
 * With a metadata device, the committed map may still name a freed
 * block: it waits in a second pair of quarantines until a commit that no
 * longer names it (see nswap2l-meta.c).
 *
 * No locking here; the target holds its lock around every call.
 */
#ifndef N2L_RUNALLOC_H
#define N2L_RUNALLOC_H

#include "n2l-types.h"

/* Holes examined for a run long enough before settling for the longest. */
#define RUNALLOC_MAX_HOLES	16

/* Quarantines: I/O generations 0 and 1, then the metadata's two. */
#define RUNALLOC_QUARANTINES	4
#define RUNALLOC_META_Q		2

struct runalloc {
	unsigned long *used;		/* allocated or quarantined */
	/* freed under I/O generation 0/1, held for commits (2/3) */
	unsigned long *quarantine[RUNALLOC_QUARANTINES];
	u32 nr_blocks;
	u32 nr_used;			/* quarantined blocks included */
	u32 nr_quarantined[RUNALLOC_QUARANTINES];
	u32 cursor;			/* next-fit: where the last run ended */
	/* quarantine[q] bits lie in [qlo, qhi) */
	u32 qlo[RUNALLOC_QUARANTINES], qhi[RUNALLOC_QUARANTINES];
};

int runalloc_init(struct runalloc *ra, u32 nr_blocks);
void runalloc_exit(struct runalloc *ra);
u32 runalloc_get(struct runalloc *ra, u32 want, n2l_blk_t *start);
void runalloc_put(struct runalloc *ra, n2l_blk_t start, u32 len);
bool runalloc_take(struct runalloc *ra, n2l_blk_t blk);
void runalloc_defer(struct runalloc *ra, unsigned int gen, n2l_blk_t start,
		    u32 len);
u32 runalloc_take_quarantined(struct runalloc *ra, unsigned int gen,
			      u32 max_len, n2l_blk_t *start);

static inline u32 runalloc_free(const struct runalloc *ra)
{
	return ra->nr_blocks - ra->nr_used;
}

static inline u32 runalloc_quarantined(const struct runalloc *ra,
				       unsigned int gen)
{
	return ra->nr_quarantined[gen];
}

static inline size_t runalloc_bytes(u32 nr_blocks)
{
	return (1 + RUNALLOC_QUARANTINES) * n2l_bitmap_bytes(nr_blocks);
}

#endif /* N2L_RUNALLOC_H */
