// SPDX-License-Identifier: GPL-2.0-only
/*
 * Run allocator: next-fit over a bitmap, so that consecutive allocations
 * land one after the other on the medium (what a disk wants), looking a
 * little further for a hole that fits a whole multi-slot bio.
 */
#include "runalloc.h"

static void quarantine_reset(struct runalloc *ra, unsigned int gen)
{
	ra->qlo[gen] = ra->nr_blocks;
	ra->qhi[gen] = 0;
}

int runalloc_init(struct runalloc *ra, u32 nr_blocks)
{
	size_t bytes = n2l_bitmap_bytes(nr_blocks);
	unsigned int g;

	memset(ra, 0, sizeof(*ra));
	ra->nr_blocks = nr_blocks;
	if (!nr_blocks)
		return 0;
	ra->used = n2l_zalloc(bytes);
	if (!ra->used)
		goto nomem;
	for (g = 0; g < RUNALLOC_QUARANTINES; g++) {
		ra->quarantine[g] = n2l_zalloc(bytes);
		if (!ra->quarantine[g])
			goto nomem;
		quarantine_reset(ra, g);
	}
	return 0;
nomem:
	runalloc_exit(ra);
	return -ENOMEM;
}

void runalloc_exit(struct runalloc *ra)
{
	unsigned int g;

	n2l_free(ra->used);
	for (g = 0; g < RUNALLOC_QUARANTINES; g++)
		n2l_free(ra->quarantine[g]);
	memset(ra, 0, sizeof(*ra));
}

/* The free hole at or after @pos, up to @want long; false if none. */
static bool next_hole(const struct runalloc *ra, u32 pos, u32 want,
		      u32 *start, u32 *len)
{
	u32 s = find_next_zero_bit(ra->used, ra->nr_blocks, pos);
	u32 limit;

	if (s >= ra->nr_blocks)
		return false;
	limit = (u32)min_t(u64, (u64)s + want, ra->nr_blocks);
	*start = s;
	*len = find_next_bit(ra->used, limit, s) - s;
	return true;
}

/*
 * Allocate up to @want contiguous blocks; returns how many (0 when the
 * medium is full) and the first one in @start. Searches from the cursor
 * to the end, then from the start up to the cursor.
 */
u32 runalloc_get(struct runalloc *ra, u32 want, n2l_blk_t *start)
{
	u32 pos = ra->cursor, end = ra->nr_blocks;
	u32 best_start = 0, best_len = 0, s, len, holes = 0;
	bool wrapped = false;

	if (!want || !runalloc_free(ra))
		return 0;

	while (holes < RUNALLOC_MAX_HOLES) {
		if (!next_hole(ra, pos, want, &s, &len) || s >= end) {
			if (wrapped)
				break;
			wrapped = true;
			end = ra->cursor;
			pos = 0;
			continue;
		}
		if (len > best_len) {
			best_start = s;
			best_len = len;
		}
		if (len == want)
			break;
		pos = s + len;
		holes++;
	}
	if (!best_len)
		return 0;

	bitmap_set(ra->used, best_start, best_len);
	ra->nr_used += best_len;
	ra->cursor = best_start + best_len;
	if (ra->cursor >= ra->nr_blocks)
		ra->cursor = 0;
	*start = to_blk(best_start);
	return best_len;
}

/* Return blocks that no I/O can be using (never exposed, or drained). */
void runalloc_put(struct runalloc *ra, n2l_blk_t start, u32 len)
{
	u32 b = from_blk(start);

	if (WARN_ON_ONCE(b + len > ra->nr_blocks || len > ra->nr_used))
		return;
	bitmap_clear(ra->used, b, len);
	ra->nr_used -= len;
}

/*
 * Take block @blk, named by a map loaded from the metadata device; false
 * if it is out of range or taken already (two slots naming one block).
 */
bool runalloc_take(struct runalloc *ra, n2l_blk_t blk)
{
	u32 b = from_blk(blk);

	if (b >= ra->nr_blocks || test_bit(b, ra->used))
		return false;
	__set_bit(b, ra->used);
	ra->nr_used++;
	return true;
}

/* Free blocks that I/O of generation @gen may still be using. */
void runalloc_defer(struct runalloc *ra, unsigned int gen, n2l_blk_t start,
		    u32 len)
{
	u32 b = from_blk(start);

	if (WARN_ON_ONCE(b + len > ra->nr_blocks))
		return;
	bitmap_set(ra->quarantine[gen], b, len);
	ra->nr_quarantined[gen] += len;
	ra->qlo[gen] = min(ra->qlo[gen], b);
	ra->qhi[gen] = max(ra->qhi[gen], b + len);
}

/*
 * Take the next run (up to @max_len) out of quarantine @gen; the blocks
 * stay allocated until the caller puts them back. Returns its length, or
 * 0 when the quarantine is empty.
 */
u32 runalloc_take_quarantined(struct runalloc *ra, unsigned int gen,
			      u32 max_len, n2l_blk_t *start)
{
	unsigned long *q = ra->quarantine[gen];
	u32 s, e, limit;

	if (!ra->nr_quarantined[gen])
		return 0;
	s = find_next_bit(q, ra->qhi[gen], ra->qlo[gen]);
	if (WARN_ON_ONCE(s >= ra->qhi[gen]))
		return 0;
	limit = (u32)min_t(u64, (u64)s + max_len, ra->qhi[gen]);
	e = find_next_zero_bit(q, limit, s);
	bitmap_clear(q, s, e - s);
	ra->nr_quarantined[gen] -= e - s;
	ra->qlo[gen] = e;
	if (!ra->nr_quarantined[gen])
		quarantine_reset(ra, gen);
	*start = to_blk(s);
	return e - s;
}
