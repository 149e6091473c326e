/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What every benchmark workload shares: the command line, sizing from the
 * memory limit, a seeded PRNG, timing, threads and the result line.
 *
 * A workload is run as
 *
 *   <name> --limit-mb M [--footprint X | --footprint-mb F] [--passes I]
 *          [--procs P] [--seed S]
 *
 * and prints exactly one line on stdout,
 *
 *   workload=<name> status=ok|wrong [reason=<code>] seconds=<s>
 *   wall_seconds=<s> footprint_mb=<MiB> limit_mb=<M> passes=<I> procs=<P>
 *   seed=<S> <workload-specific key=value ...>
 *
 * (one line, split here). Exit status: 0 ok, 1 wrong data (the run was
 * verified and failed), 2 usage error, 3 setup failure (mmap, threads).
 *
 * Hidden, for the tests only: --corrupt-at N flips one byte of the
 * workload's data after its N-th operation, as a faulty swap device would;
 * each workload says what its operations are.
 */
#ifndef WL_COMMON_H
#define WL_COMMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define __printf(a, b) __attribute__((format(printf, a, b)))
#define __noreturn __attribute__((noreturn))

#define WL_MIB (1024.0 * 1024.0)
#define WL_GOLDEN 0x9e3779b97f4a7c15ULL

struct wl_spec {
	const char *name;
	double footprint;	/* default footprint, a multiple of the limit */
	unsigned long passes;	/* default --passes */
	unsigned int procs;	/* default --procs */
	unsigned int max_procs;	/* 1: a single-process workload */
	const char *passes_help; /* what --passes means here */
};

struct wl_opts {
	const struct wl_spec *spec;
	double limit_mb;
	size_t footprint;	/* bytes the workload should keep resident */
	unsigned long passes;
	unsigned int procs;
	uint64_t seed;
	unsigned long long corrupt_at;	/* 0: never */
	double started;		/* wl_now() when the options were parsed */
};

struct wl_result {
	const struct wl_opts *opts;
	double seconds;		/* the timed compute phase */
	size_t footprint;	/* bytes the algorithm really uses */
	const char *reason;	/* NULL while the data is right */
	char extra[512];	/* workload-specific " key=value" pairs */
	size_t len;
};

void wl_parse(int argc, char **argv, const struct wl_spec *spec,
	      struct wl_opts *o);
__noreturn __printf(2, 3)
void wl_usage_error(const struct wl_opts *o, const char *fmt, ...);
__noreturn __printf(1, 2)
void wl_setup_error(const char *fmt, ...);

void wl_result_init(struct wl_result *r, const struct wl_opts *o);
__printf(3, 4)
void wl_add(struct wl_result *r, const char *key, const char *fmt, ...);
bool wl_fail(struct wl_result *r, const char *reason);
int wl_report(const struct wl_result *r);

double wl_now(void);
void *wl_map(size_t bytes);
void wl_flip_byte(void *base, size_t bytes, uint64_t where);
size_t wl_share(size_t n, unsigned int parts, unsigned int i);
void wl_run_threads(unsigned int n, void (*fn)(void *ctx, unsigned int id),
		    void *ctx);
void wl_barrier_init(pthread_barrier_t *b, unsigned int n);

/* splitmix64's output function: a bijection that mixes every input bit */
static inline uint64_t wl_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The i-th number of the stream @seed, so threads can fill any range */
static inline uint64_t wl_at(uint64_t seed, uint64_t i)
{
	return wl_mix(seed + (i + 1) * WL_GOLDEN);
}

static inline uint64_t wl_next(uint64_t *state)
{
	*state += WL_GOLDEN;
	return wl_mix(*state);
}

/* Uniform in [0, n): the high half of a 64x64 product, bias n / 2^64 */
static inline uint64_t wl_below(uint64_t r, uint64_t n)
{
	return (uint64_t)(((__uint128_t)r * n) >> 64);
}

static inline double wl_unit(uint64_t r)
{
	return (double)(r >> 11) * 0x1p-53;
}

#endif
