/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What Radix and IS share: one parallel counting-sort pass of 32-bit keys
 * by a digit, and the checks of a sorted result.
 *
 * The pass is the step that SPLASH-2's RADIX repeats for every digit and
 * that NAS IS uses to sort its keys into buckets. Each of P threads owns
 * a contiguous share of the keys: it counts its keys per digit value, then
 * (after a barrier) works out from every thread's counts where its keys of
 * each digit go (all smaller digits first, then the same digit of lower
 * threads: a global prefix sum), and moves its keys there, stably.
 *
 * A key whose digit changed between the count and the move (read back
 * from swap different the second time) would overrun its slot; the pass
 * never writes past a slot, and says so instead.
 */
#ifndef WL_BUCKET_H
#define WL_BUCKET_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

struct bucket_sort {
	size_t n;		/* keys */
	unsigned int procs;
	unsigned int buckets;	/* digit values, a power of two */
	size_t *counts;		/* procs rows of buckets */
	size_t *slots;		/* per thread: next and end of each digit */
	size_t *starts;		/* where each digit begins in the output */
	pthread_barrier_t *barrier;
	atomic_bool overrun;	/* a key did not fit the slot counted for it */
};

/* Order-independent checksums of a multiset of keys */
struct key_sums {
	uint64_t sum;		/* catches any changed key */
	uint64_t mix;		/* catches a key lost and another doubled */
};

void bucket_init(struct bucket_sort *b, size_t n, unsigned int procs,
		 unsigned int bits, pthread_barrier_t *barrier);
void bucket_free(struct bucket_sort *b);
void bucket_pass(struct bucket_sort *b, unsigned int id, const uint32_t *src,
		 uint32_t *dst, unsigned int shift);
size_t bucket_end(const struct bucket_sort *b, unsigned int digit);

const char *check_sorted(const uint32_t *keys, size_t n,
			 const struct key_sums *want, size_t *bad);

static inline void sums_add(struct key_sums *s, uint32_t key)
{
	s->sum += key;
	s->mix += wl_mix(key);
}

static inline void sums_sub(struct key_sums *s, uint32_t key)
{
	s->sum -= key;
	s->mix -= wl_mix(key);
}

static inline void sums_merge(struct key_sums *s, const struct key_sums *part)
{
	s->sum += part->sum;
	s->mix += part->mix;
}

#endif
