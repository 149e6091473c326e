/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Per-medium free-space allocator handing out contiguous runs of blocks.
 *
 * A freed block does not become free at once: it may still be the target
 * of a read or write that started before it was freed. It first goes into
 * quarantine under the I/O generation current at the time (see
 * nswap2l-gate.c); when every I/O of that generation has completed the
 * target takes the quarantined runs (to TRIM them) and puts them back.
 *
 * No locking here; the target holds its lock around every call.
 */
#ifndef N2L_RUNALLOC_H
#define N2L_RUNALLOC_H

#include "n2l-types.h"

/* Holes examined for a run long enough before settling for the longest. */
#define RUNALLOC_MAX_HOLES	16

struct runalloc {
	unsigned long *used;		/* allocated or quarantined */
	unsigned long *quarantine[2];	/* freed under I/O generation 0/1 */
	u32 nr_blocks;
	u32 nr_used;			/* quarantined blocks included */
	u32 nr_quarantined[2];
	u32 cursor;			/* next-fit: where the last run ended */
	u32 qlo[2], qhi[2];		/* quarantine[g] bits lie in [qlo, qhi) */
};

int runalloc_init(struct runalloc *ra, u32 nr_blocks);
void runalloc_exit(struct runalloc *ra);
u32 runalloc_get(struct runalloc *ra, u32 want, n2l_blk_t *start);
void runalloc_put(struct runalloc *ra, n2l_blk_t start, u32 len);
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
	return 3 * n2l_bitmap_bytes(nr_blocks);
}

#endif /* N2L_RUNALLOC_H */
