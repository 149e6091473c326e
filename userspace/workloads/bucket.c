// SPDX-License-Identifier: GPL-2.0-only
/*
 * The parallel counting-sort pass and the checks of a sorted result
 * (see bucket.h).
 */
#include <stdlib.h>
#include <string.h>

#include "bucket.h"

static size_t *alloc_counters(size_t n)
{
	size_t *p = calloc(n, sizeof(*p));

	if (!p)
		wl_setup_error("out of memory for %zu counters", n);
	return p;
}

void bucket_init(struct bucket_sort *b, size_t n, unsigned int procs,
		 unsigned int bits, pthread_barrier_t *barrier)
{
	size_t cells = (size_t)procs << bits;

	b->n = n;
	b->procs = procs;
	b->buckets = 1u << bits;
	b->counts = alloc_counters(cells);
	b->slots = alloc_counters(2 * cells);
	b->starts = alloc_counters(b->buckets);
	b->barrier = barrier;
	atomic_init(&b->overrun, false);
}

void bucket_free(struct bucket_sort *b)
{
	free(b->counts);
	free(b->slots);
	free(b->starts);
}

static void count_digits(const uint32_t *keys, size_t n, unsigned int shift,
			 unsigned int mask, size_t *count)
{
	size_t i;

	memset(count, 0, (mask + 1) * sizeof(*count));
	for (i = 0; i < n; i++)
		count[(keys[i] >> shift) & mask]++;
}

/* The global prefix sum: smaller digits first, then lower threads' keys */
static void find_slots(const struct bucket_sort *b, unsigned int id,
		       size_t *next, size_t *end)
{
	size_t base = 0, below, total, c;
	unsigned int d, t;

	for (d = 0; d < b->buckets; d++) {
		below = total = 0;
		for (t = 0; t < b->procs; t++) {
			c = b->counts[(size_t)t * b->buckets + d];
			below += t < id ? c : 0;
			total += c;
		}
		next[d] = base + below;
		end[d] = next[d] + b->counts[(size_t)id * b->buckets + d];
		base += total;
	}
}

static bool move_keys(const uint32_t *keys, size_t n, unsigned int shift,
		      unsigned int mask, uint32_t *dst, size_t *next,
		      const size_t *end)
{
	unsigned int d;
	size_t i;

	for (i = 0; i < n; i++) {
		d = (keys[i] >> shift) & mask;
		if (next[d] == end[d])
			return false;
		dst[next[d]++] = keys[i];
	}
	return true;
}

/* Called by every thread, @id 0 to procs - 1, with the same arguments */
void bucket_pass(struct bucket_sort *b, unsigned int id, const uint32_t *src,
		 uint32_t *dst, unsigned int shift)
{
	size_t lo = wl_share(b->n, b->procs, id);
	size_t hi = wl_share(b->n, b->procs, id + 1);
	size_t *next = b->slots + 2 * (size_t)id * b->buckets;
	size_t *end = next + b->buckets;
	unsigned int mask = b->buckets - 1;

	count_digits(src + lo, hi - lo, shift, mask,
		     b->counts + (size_t)id * b->buckets);
	pthread_barrier_wait(b->barrier);
	find_slots(b, id, next, end);
	/* thread 0's first slots are where each digit begins */
	if (id == 0)
		memcpy(b->starts, next, b->buckets * sizeof(*next));
	if (!move_keys(src + lo, hi - lo, shift, mask, dst, next, end))
		atomic_store(&b->overrun, true);
	pthread_barrier_wait(b->barrier);
}

/* Where the keys of @digit end in the output of the last pass */
size_t bucket_end(const struct bucket_sort *b, unsigned int digit)
{
	return digit + 1 < b->buckets ? b->starts[digit + 1] : b->n;
}

/*
 * NULL if @keys are in order and, as a multiset, the keys that were
 * sorted; else what is wrong, with the first bad index in @bad.
 */
const char *check_sorted(const uint32_t *keys, size_t n,
			 const struct key_sums *want, size_t *bad)
{
	struct key_sums got = { 0 };
	size_t i;

	for (i = 0; i < n; i++) {
		if (i && keys[i - 1] > keys[i]) {
			*bad = i;
			return "unsorted";
		}
		sums_add(&got, keys[i]);
	}
	*bad = n;
	if (got.sum != want->sum || got.mix != want->mix)
		return "checksum";
	return NULL;
}
