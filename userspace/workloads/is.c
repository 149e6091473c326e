// SPDX-License-Identifier: GPL-2.0-only
/*
 * IS: integer sort in the manner of the NAS Parallel Benchmarks' IS kernel.
 *
 * N keys in [0, MAX_KEY), bell-shaped as NAS IS makes them: MAX_KEY / 4
 * times the sum of four uniform randoms. Each of --passes iterations
 * (default 10, NAS's count) first changes two keys as NAS does (key i
 * becomes i, key i + passes becomes MAX_KEY - i, in iteration i), then
 * ranks every key with a bucket sort over --procs threads: the keys go
 * into 1024 buckets by their high bits (bucket.c), then each thread takes
 * a share of the buckets, counts each key value in them, and turns the
 * counts into prefix sums: for each value, the keys at or below it.
 *
 * Verification, in NAS's two parts. Partial, every iteration: the ranks
 * of five test keys (drawn from the seed among keys no iteration changes)
 * must equal the keys below them, counted directly as the keys were made
 * and kept current as keys change. Full, at the end: every key placed by
 * its rank must give a non-decreasing sequence, and the same keys as a
 * multiset (by checksums, also kept current).
 *
 * Footprint: the keys and the keys by bucket, 4 bytes a key each, and a
 * count per key value, 4 bytes each: F = 8 N + 4 MAX_KEY (default F = 1.5
 * times the limit), with MAX_KEY the largest power of two up to F / 132.
 * NAS's classes have N = 16 MAX_KEY; here N is 16 to 32 MAX_KEY, so that
 * the whole footprint is used.
 *
 * seconds times the iterations alone, as NAS does. Result figures: keys,
 * max_key, buckets, ranks_checked (test ranks that were right), checksum
 * (of the final keys). --corrupt-at counts iterations; the byte flipped is
 * in the keys, after that iteration has changed its two.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "bucket.h"

#define BUCKET_BITS 10	/* NAS IS's NUM_BUCKETS_LOG_2 */
#define TEST_KEYS 5	/* NAS IS's TEST_ARRAY_SIZE */

static const struct wl_spec is_spec = {
	.name = "is",
	.footprint = 1.5,
	.passes = 10,
	.procs = 4,
	.max_procs = 256,
	.passes_help = "ranking iterations",
};

/* What each thread finds while making its share of the keys */
struct made {
	struct key_sums sums;
	size_t below[TEST_KEYS];
};

struct is {
	const struct wl_opts *opts;
	uint32_t *keys;		/* NAS's key_array */
	uint32_t *by_bucket;	/* key_buff2 */
	uint32_t *ranks;	/* key_buff1: keys at or below each value */
	size_t n;
	uint32_t max_key;
	unsigned int shift;	/* a key's bucket is key >> shift */
	size_t test_index[TEST_KEYS];
	uint32_t test_key[TEST_KEYS];
	size_t test_rank[TEST_KEYS];	/* keys below each test key */
	struct key_sums sums;	/* of keys[], kept current */
	struct made *made;	/* per thread */
	struct bucket_sort sort;
	pthread_barrier_t barrier;
	const char *_Atomic wrong;	/* the first failure, by any thread */
	unsigned long wrong_at;		/* in which iteration */
	size_t ranks_checked;
};

static uint32_t make_key(uint64_t seed, size_t i, uint32_t max_key)
{
	double x = 0;
	unsigned int j;

	for (j = 0; j < 4; j++)
		x += wl_unit(wl_at(seed, 4 * (uint64_t)i + j));
	return (uint32_t)(x * (max_key / 4));
}

static void make_keys(void *ctx, unsigned int id)
{
	struct is *s = ctx;
	size_t i = wl_share(s->n, s->opts->procs, id);
	size_t end = wl_share(s->n, s->opts->procs, id + 1);
	struct made m = { 0 };
	unsigned int t;

	for (; i < end; i++) {
		s->keys[i] = make_key(s->opts->seed, i, s->max_key);
		sums_add(&m.sums, s->keys[i]);
		for (t = 0; t < TEST_KEYS; t++)
			m.below[t] += s->keys[i] < s->test_key[t];
	}
	s->made[id] = m;
}

/* Test keys come from those no iteration changes (1 to 2 * passes) */
static void choose_tests(struct is *s)
{
	size_t first = 2 * s->opts->passes + 1;
	uint64_t rng = wl_mix(~s->opts->seed);
	unsigned int t;

	for (t = 0; t < TEST_KEYS; t++) {
		s->test_index[t] = first +
				   wl_below(wl_next(&rng), s->n - first);
		s->test_key[t] = make_key(s->opts->seed, s->test_index[t],
					  s->max_key);
	}
}

static void setup_keys(struct is *s)
{
	unsigned int i, t;

	choose_tests(s);
	wl_run_threads(s->opts->procs, make_keys, s);
	for (i = 0; i < s->opts->procs; i++) {
		sums_merge(&s->sums, &s->made[i].sums);
		for (t = 0; t < TEST_KEYS; t++)
			s->test_rank[t] += s->made[i].below[t];
	}
}

static void found_wrong(struct is *s, const char *why, unsigned long it)
{
	const char *none = NULL;

	if (atomic_compare_exchange_strong(&s->wrong, &none, why))
		s->wrong_at = it;
}

/* Changes a key, and what the checks expect with it */
static void set_key(struct is *s, size_t i, uint32_t key)
{
	uint32_t old = s->keys[i];
	unsigned int t;

	sums_sub(&s->sums, old);
	sums_add(&s->sums, key);
	for (t = 0; t < TEST_KEYS; t++) {
		s->test_rank[t] -= old < s->test_key[t];
		s->test_rank[t] += key < s->test_key[t];
	}
	s->keys[i] = key;
}

static void change_keys(struct is *s, unsigned long it)
{
	set_key(s, it, it);
	set_key(s, it + s->opts->passes, s->max_key - it);
	if (it == s->opts->corrupt_at)
		wl_flip_byte(s->keys, s->n * sizeof(*s->keys),
			     wl_mix(s->opts->seed));
}

/* Counts, then prefix sums, of the values of bucket @b's keys */
static bool rank_bucket(struct is *s, unsigned int b)
{
	uint32_t lo = b << s->shift, width = 1u << s->shift, k;
	uint32_t *count = s->ranks + lo;
	size_t i = s->sort.starts[b], end = bucket_end(&s->sort, b);

	memset(count, 0, width * sizeof(*count));
	for (; i < end; i++) {
		k = s->by_bucket[i] - lo;
		/* a key outside its bucket came back wrong from memory */
		if (k >= width)
			return false;
		count[k]++;
	}
	count[0] += s->sort.starts[b];
	for (k = 1; k < width; k++)
		count[k] += count[k - 1];
	return true;
}

static void rank_buckets(struct is *s, unsigned int id, unsigned long it)
{
	unsigned int nb = 1u << BUCKET_BITS;
	unsigned int b = wl_share(nb, s->opts->procs, id);
	unsigned int end = wl_share(nb, s->opts->procs, id + 1);

	for (; b < end; b++) {
		if (!rank_bucket(s, b)) {
			found_wrong(s, "key-range", it);
			return;
		}
	}
}

/* NAS's partial verification, on keys the iterations leave alone */
static void partial_verify(struct is *s, unsigned long it)
{
	unsigned int t;
	uint32_t key;

	if (atomic_load(&s->sort.overrun))
		found_wrong(s, "digit-count", it);
	for (t = 0; t < TEST_KEYS; t++) {
		key = s->keys[s->test_index[t]];
		if (key != s->test_key[t]) {
			found_wrong(s, "test-key", it);
			return;
		}
		if ((key ? s->ranks[key - 1] : 0) != s->test_rank[t]) {
			found_wrong(s, "partial-rank", it);
			return;
		}
		s->ranks_checked++;
	}
}

static void rank_iterations(void *ctx, unsigned int id)
{
	struct is *s = ctx;
	unsigned long it;

	for (it = 1; it <= s->opts->passes; it++) {
		if (id == 0)
			change_keys(s, it);
		pthread_barrier_wait(&s->barrier);
		bucket_pass(&s->sort, id, s->keys, s->by_bucket, s->shift);
		rank_buckets(s, id, it);
		pthread_barrier_wait(&s->barrier);
		if (id == 0)
			partial_verify(s, it);
		pthread_barrier_wait(&s->barrier);
		if (atomic_load(&s->wrong))
			break;
	}
}

/* NAS's full verification: keys placed by rank must come out sorted */
static const char *full_verify(struct is *s, size_t *bad)
{
	size_t i, pos;
	uint32_t key;

	for (i = 0; i < s->n; i++) {
		key = s->by_bucket[i];
		pos = key < s->max_key ? s->ranks[key] - (size_t)1 : s->n;
		if (pos >= s->n) {
			*bad = i;
			return "rank-range";
		}
		s->ranks[key]--;
		s->keys[pos] = key;
	}
	return check_sorted(s->keys, s->n, &s->sums, bad);
}

static void size_keys(struct is *s)
{
	const struct wl_opts *o = s->opts;
	unsigned int bits = 11;	/* NAS's smallest class, S, has 2^11 */

	if (o->footprint / 132 < 1u << bits)
		wl_usage_error(o, "a footprint of %zu bytes is below %u",
			       o->footprint, 132u << bits);
	while (bits < 31 && o->footprint / 132 >= 2ul << bits)
		bits++;
	s->max_key = 1u << bits;
	s->shift = bits - BUCKET_BITS;
	s->n = (o->footprint - 4 * (size_t)s->max_key) / 8;
	if (s->n > UINT32_MAX)	/* ranks are 32-bit counts */
		wl_usage_error(o, "a footprint of %zu bytes is too large",
			       o->footprint);
	if (o->passes >= s->max_key || 2 * o->passes + 1 >= s->n)
		wl_usage_error(o, "--passes %lu is too many for %zu keys",
			       o->passes, s->n);
}

static void setup(struct is *s)
{
	unsigned int procs = s->opts->procs;

	size_keys(s);
	s->keys = wl_map(s->n * sizeof(*s->keys));
	s->by_bucket = wl_map(s->n * sizeof(*s->by_bucket));
	s->ranks = wl_map((size_t)s->max_key * sizeof(*s->ranks));
	s->made = calloc(procs, sizeof(*s->made));
	if (!s->made)
		wl_setup_error("out of memory");
	wl_barrier_init(&s->barrier, procs);
	bucket_init(&s->sort, s->n, procs, BUCKET_BITS, &s->barrier);
	atomic_init(&s->wrong, NULL);
}

static void teardown(struct is *s)
{
	bucket_free(&s->sort);
	pthread_barrier_destroy(&s->barrier);
	free(s->made);
}

static void report(const struct is *s, struct wl_result *res)
{
	res->footprint = s->n * 8 + (size_t)s->max_key * 4;
	wl_add(res, "keys", "%zu", s->n);
	wl_add(res, "max_key", "%" PRIu32, s->max_key);
	wl_add(res, "buckets", "%u", 1u << BUCKET_BITS);
	wl_add(res, "ranks_checked", "%zu", s->ranks_checked);
	wl_add(res, "checksum", "%016" PRIx64, s->sums.mix);
}

int main(int argc, char **argv)
{
	struct wl_result res;
	struct wl_opts o;
	struct is s = { .opts = &o };
	const char *wrong;
	size_t bad;
	double t0;

	wl_parse(argc, argv, &is_spec, &o);
	wl_result_init(&res, &o);
	setup(&s);
	setup_keys(&s);
	t0 = wl_now();
	wl_run_threads(o.procs, rank_iterations, &s);
	res.seconds = wl_now() - t0;
	report(&s, &res);
	wrong = atomic_load(&s.wrong);
	if (wrong) {
		wl_fail(&res, wrong);
		wl_add(&res, "iteration", "%lu", s.wrong_at);
	} else {
		wrong = full_verify(&s, &bad);
		if (wrong) {
			wl_fail(&res, wrong);
			wl_add(&res, "bad_index", "%zu", bad);
		}
	}
	teardown(&s);
	return wl_report(&res);
}
