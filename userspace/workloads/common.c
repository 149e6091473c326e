// SPDX-License-Identifier: GPL-2.0-only
/*
 * The command line, the result line, timing, memory and threads that the
 * workloads share; common.h describes the interface they all follow.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common.h"

enum {
	OPT_LIMIT_MB = 256,
	OPT_FOOTPRINT,
	OPT_FOOTPRINT_MB,
	OPT_PASSES,
	OPT_PROCS,
	OPT_SEED,
	OPT_CORRUPT_AT,
	OPT_HELP,
};

static const struct option wl_options[] = {
	{ "limit-mb",     required_argument, NULL, OPT_LIMIT_MB },
	{ "footprint",    required_argument, NULL, OPT_FOOTPRINT },
	{ "footprint-mb", required_argument, NULL, OPT_FOOTPRINT_MB },
	{ "passes",       required_argument, NULL, OPT_PASSES },
	{ "procs",        required_argument, NULL, OPT_PROCS },
	{ "seed",         required_argument, NULL, OPT_SEED },
	{ "corrupt-at",   required_argument, NULL, OPT_CORRUPT_AT },
	{ "help",         no_argument,       NULL, OPT_HELP },
	{ NULL,           0,                 NULL, 0 },
};

/* What the command line asked for, before it is turned into bytes */
struct wl_args {
	double factor;		/* --footprint */
	double mb;		/* --footprint-mb */
};

static void print_usage(FILE *f, const struct wl_spec *s)
{
	fprintf(f,
		"usage: %s --limit-mb M [--footprint X | --footprint-mb F]\n"
		"       [--passes I] [--procs P] [--seed S]\n"
		"  --limit-mb M      memory limit the workload runs under, MiB\n"
		"  --footprint X     memory to use, X times the limit (default %g)\n"
		"  --footprint-mb F  memory to use, MiB, instead of --footprint\n"
		"  --passes I        %s (default %lu)\n"
		"  --procs P         %s (default %u)\n"
		"  --seed S          seed of the data (default 1)\n",
		s->name, s->footprint, s->passes_help, s->passes,
		s->max_procs > 1 ? "processes or threads" : "must be 1",
		s->procs);
}

void wl_usage_error(const struct wl_opts *o, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", o->spec->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	print_usage(stderr, o->spec);
	exit(2);
}

void wl_setup_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(3);
}

static const char *option_name(int opt)
{
	return wl_options[opt - OPT_LIMIT_MB].name;
}

static double parse_positive(const struct wl_opts *o, int opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0)
		wl_usage_error(o, "--%s: '%s' is not a positive number",
			       option_name(opt), s);
	return v;
}

/* strtoull() takes "-1" as 2^64 - 1; a count must start with a digit */
static unsigned long long parse_count(const struct wl_opts *o, int opt,
				      const char *s, unsigned long long min,
				      unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (s[0] < '0' || s[0] > '9' || errno || *end || v < min || v > max)
		wl_usage_error(o, "--%s: '%s' is not a whole number in [%llu, %llu]",
			       option_name(opt), s, min, max);
	return v;
}

static void apply_option(struct wl_opts *o, struct wl_args *a, int opt,
			 const char *arg, const char *name)
{
	switch (opt) {
	case OPT_LIMIT_MB:
		o->limit_mb = parse_positive(o, opt, arg);
		break;
	case OPT_FOOTPRINT:
		a->factor = parse_positive(o, opt, arg);
		break;
	case OPT_FOOTPRINT_MB:
		a->mb = parse_positive(o, opt, arg);
		break;
	case OPT_PASSES:
		o->passes = parse_count(o, opt, arg, 1, 1000000);
		break;
	case OPT_PROCS:
		o->procs = parse_count(o, opt, arg, 1, o->spec->max_procs);
		break;
	case OPT_SEED:
		o->seed = parse_count(o, opt, arg, 0, UINT64_MAX);
		break;
	case OPT_CORRUPT_AT:
		o->corrupt_at = parse_count(o, opt, arg, 1, UINT64_MAX);
		break;
	case OPT_HELP:
		print_usage(stdout, o->spec);
		exit(0);
	case ':':
		wl_usage_error(o, "option '%s' needs a value", name);
	default:
		if (optopt)
			wl_usage_error(o, "unknown option '-%c'", optopt);
		wl_usage_error(o, "unknown option '%s'", name);
	}
}

static void size_footprint(struct wl_opts *o, const struct wl_args *a)
{
	double mb;

	if (!o->limit_mb)
		wl_usage_error(o, "--limit-mb is required");
	if (a->factor && a->mb)
		wl_usage_error(o, "give --footprint or --footprint-mb, not both");
	if (a->mb)
		mb = a->mb;
	else
		mb = (a->factor ? a->factor : o->spec->footprint) * o->limit_mb;
	/* far beyond any machine, and keeps byte counts clear of overflow */
	if (mb > 1 << 30)
		wl_usage_error(o, "a footprint of %g MiB is too large", mb);
	o->footprint = (size_t)(mb * WL_MIB);
}

void wl_parse(int argc, char **argv, const struct wl_spec *spec,
	      struct wl_opts *o)
{
	struct wl_args a = { 0 };
	int opt;

	*o = (struct wl_opts){
		.spec = spec,
		.passes = spec->passes,
		.procs = spec->procs,
		.seed = 1,
		.started = wl_now(),
	};
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":", wl_options, NULL)) != -1)
		apply_option(o, &a, opt, optarg, argv[optind - 1]);
	if (optind < argc)
		wl_usage_error(o, "unexpected argument '%s'", argv[optind]);
	size_footprint(o, &a);
}

void wl_result_init(struct wl_result *r, const struct wl_opts *o)
{
	memset(r, 0, sizeof(*r));
	r->opts = o;
}

void wl_add(struct wl_result *r, const char *key, const char *fmt, ...)
{
	size_t room = sizeof(r->extra) - r->len;
	char value[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	n = snprintf(r->extra + r->len, room, " %s=%s", key, value);
	/* a pair that does not fit is left out whole, never cut short */
	if (n > 0 && (size_t)n < room)
		r->len += n;
	else
		r->extra[r->len] = '\0';
}

/* The first failure is the one worth reporting: later ones follow from it */
bool wl_fail(struct wl_result *r, const char *reason)
{
	if (!r->reason)
		r->reason = reason;
	return false;
}

int wl_report(const struct wl_result *r)
{
	const struct wl_opts *o = r->opts;

	printf("workload=%s status=%s", o->spec->name,
	       r->reason ? "wrong" : "ok");
	if (r->reason)
		printf(" reason=%s", r->reason);
	printf(" seconds=%.6f wall_seconds=%.6f footprint_mb=%.2f",
	       r->seconds, wl_now() - o->started, r->footprint / WL_MIB);
	printf(" limit_mb=%g passes=%lu procs=%u seed=%" PRIu64 "%s\n",
	       o->limit_mb, o->passes, o->procs, o->seed, r->extra);
	fflush(stdout);
	return r->reason ? 1 : 0;
}

double wl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void *wl_map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		wl_setup_error("mmap of %zu bytes: %s", bytes, strerror(errno));
	/*
	 * Whatever the system's THP setting, every fault and every swap
	 * slot is one 4 KiB page, as on the machines the workloads model.
	 */
	madvise(p, bytes, MADV_NOHUGEPAGE);
	return p;
}

/* The test hook behind --corrupt-at: what a faulty swap device would do */
void wl_flip_byte(void *base, size_t bytes, uint64_t where)
{
	((unsigned char *)base)[where % bytes] ^= 0xff;
}

/* Where part @i of @n items split into @parts contiguous shares begins */
size_t wl_share(size_t n, unsigned int parts, unsigned int i)
{
	return (size_t)((__uint128_t)n * i / parts);
}

struct wl_thread {
	pthread_t tid;
	void (*fn)(void *ctx, unsigned int id);
	void *ctx;
	unsigned int id;
};

static void *thread_main(void *arg)
{
	struct wl_thread *t = arg;

	t->fn(t->ctx, t->id);
	return NULL;
}

/* Runs fn(ctx, id) for id 0..n-1, id 0 in the caller, and waits for all */
void wl_run_threads(unsigned int n, void (*fn)(void *ctx, unsigned int id),
		    void *ctx)
{
	struct wl_thread *t = calloc(n, sizeof(*t));
	unsigned int i;
	int err;

	if (!t)
		wl_setup_error("out of memory for %u threads", n);
	for (i = 0; i < n; i++)
		t[i] = (struct wl_thread){ .fn = fn, .ctx = ctx, .id = i };
	for (i = 1; i < n; i++) {
		err = pthread_create(&t[i].tid, NULL, thread_main, &t[i]);
		if (err)
			wl_setup_error("pthread_create: %s", strerror(err));
	}
	fn(ctx, 0);
	for (i = 1; i < n; i++)
		pthread_join(t[i].tid, NULL);
	free(t);
}

void wl_barrier_init(pthread_barrier_t *b, unsigned int n)
{
	int err = pthread_barrier_init(b, NULL, n);

	if (err)
		wl_setup_error("pthread_barrier_init: %s", strerror(err));
}
