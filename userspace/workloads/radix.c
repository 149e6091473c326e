// SPDX-License-Identifier: GPL-2.0-only
/*
 * Radix: parallel radix sort of 32-bit integer keys, the algorithm of
 * SPLASH-2's RADIX kernel. --procs threads each own a contiguous share of
 * the keys. For each 8-bit digit, least significant first, every thread
 * makes a histogram of its keys' digits, a prefix sum over all threads'
 * histograms tells each thread where its keys go, and each thread moves
 * its keys into the other array (bucket.c); the two arrays then swap
 * roles. Four digits bring the sorted keys back into the first array.
 *
 * Footprint: the keys and the array they move into, 4 bytes a key each:
 * N = F / 8 keys (default F = 1.5 times the limit). --passes sorts that
 * many times, each time fresh keys made from the seed and the pass, all
 * 32 bits uniform. After each sort the keys must be in order and, by
 * order-independent checksums taken as they were made, the same keys.
 * seconds adds up the sorts alone, not making or checking keys.
 *
 * Result figures: keys (a pass), digits, checksum (over every pass; the
 * same seed and footprint give the same checksum with any --procs).
 * --corrupt-at counts digits sorted, over all passes; the byte flipped is
 * in the keys just before they are sorted by that digit.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "bucket.h"

#define RADIX_BITS 8
#define DIGITS (32 / RADIX_BITS)

static const struct wl_spec radix_spec = {
	.name = "radix",
	.footprint = 1.5,
	.passes = 1,
	.procs = 4,
	.max_procs = 256,
	.passes_help = "sorts, each of freshly made keys",
};

struct radix {
	const struct wl_opts *opts;
	uint32_t *keys, *other;
	size_t n;
	uint64_t seed;			/* of this pass's keys */
	unsigned long long digits_done;	/* for --corrupt-at */
	struct key_sums *part;		/* per thread, of the keys it made */
	struct bucket_sort sort;
	pthread_barrier_t barrier;
};

static void make_keys(void *ctx, unsigned int id)
{
	struct radix *r = ctx;
	size_t i = wl_share(r->n, r->opts->procs, id);
	size_t end = wl_share(r->n, r->opts->procs, id + 1);
	struct key_sums s = { 0 };

	for (; i < end; i++) {
		r->keys[i] = wl_at(r->seed, i) >> 32;
		sums_add(&s, r->keys[i]);
	}
	r->part[id] = s;
}

static void sort_keys(void *ctx, unsigned int id)
{
	struct radix *r = ctx;
	uint32_t *src = r->keys, *dst = r->other, *t;
	unsigned int d;

	for (d = 0; d < DIGITS; d++) {
		if (id == 0 && ++r->digits_done == r->opts->corrupt_at)
			wl_flip_byte(src, r->n * sizeof(*src), wl_mix(r->seed));
		/* the flip, if any, lands before any thread reads this digit */
		pthread_barrier_wait(&r->barrier);
		bucket_pass(&r->sort, id, src, dst, d * RADIX_BITS);
		t = src;
		src = dst;
		dst = t;
	}
}

static void setup(struct radix *r)
{
	const struct wl_opts *o = r->opts;

	r->n = o->footprint / (2 * sizeof(uint32_t));
	if (r->n < o->procs)
		wl_usage_error(o, "a footprint of %zu bytes is too small",
			       o->footprint);
	r->keys = wl_map(r->n * sizeof(uint32_t));
	r->other = wl_map(r->n * sizeof(uint32_t));
	r->part = calloc(o->procs, sizeof(*r->part));
	if (!r->part)
		wl_setup_error("out of memory");
	wl_barrier_init(&r->barrier, o->procs);
	bucket_init(&r->sort, r->n, o->procs, RADIX_BITS, &r->barrier);
}

static void teardown(struct radix *r)
{
	bucket_free(&r->sort);
	pthread_barrier_destroy(&r->barrier);
	free(r->part);
}

/* One pass: fresh keys, the timed sort, the check; false if wrong */
static bool sort_pass(struct radix *r, struct wl_result *res,
		      struct key_sums *all)
{
	struct key_sums want = { 0 };
	const char *wrong;
	unsigned int i;
	size_t bad;
	double t0;

	wl_run_threads(r->opts->procs, make_keys, r);
	for (i = 0; i < r->opts->procs; i++)
		sums_merge(&want, &r->part[i]);
	sums_merge(all, &want);
	t0 = wl_now();
	wl_run_threads(r->opts->procs, sort_keys, r);
	res->seconds += wl_now() - t0;
	if (atomic_load(&r->sort.overrun))
		return wl_fail(res, "digit-count");
	wrong = check_sorted(r->keys, r->n, &want, &bad);
	if (!wrong)
		return true;
	wl_add(res, "bad_index", "%zu", bad);
	return wl_fail(res, wrong);
}

int main(int argc, char **argv)
{
	struct key_sums all = { 0 };
	struct wl_result res;
	struct wl_opts o;
	struct radix r = { .opts = &o };
	unsigned long pass;

	wl_parse(argc, argv, &radix_spec, &o);
	wl_result_init(&res, &o);
	setup(&r);
	for (pass = 0; pass < o.passes; pass++) {
		r.seed = wl_at(o.seed, pass);
		if (!sort_pass(&r, &res, &all)) {
			wl_add(&res, "bad_pass", "%lu", pass);
			break;
		}
	}
	res.footprint = 2 * r.n * sizeof(uint32_t);
	wl_add(&res, "keys", "%zu", r.n);
	wl_add(&res, "digits", "%d", DIGITS);
	wl_add(&res, "checksum", "%016" PRIx64, all.mix);
	teardown(&r);
	return wl_report(&res);
}
