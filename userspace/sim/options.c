// SPDX-License-Identifier: GPL-2.0-only
/*
 * The command line. Values are checked as the kernel checks its knobs
 * (nswap2l-control.c): the same ranges, and an amount that is a
 * percentage is at most 100.
 */
#include <getopt.h>
#include <stdarg.h>

#include "sim.h"

/* include/linux/compiler_attributes.h's, which userspace lacks */
#define __printf(a, b)		__attribute__((format(printf, a, b)))

#define SIM_INTERVAL_MIN	10
#define SIM_INTERVAL_MAX	3600000
#define SIM_AMOUNT_MAX		(1U << 30)

enum {
	OPT_DEV = 256,
	OPT_POLICY,
	OPT_NETRAM,
	OPT_FLASH,
	OPT_DISK,
	OPT_INTERVAL,
	OPT_AMOUNT_MODE,
	OPT_AMOUNT,
	OPT_SEED,
	OPT_MAX_SLOTS,
	OPT_JSON,
};

static const struct option long_opts[] = {
	{ "dev", required_argument, NULL, OPT_DEV },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "netram-slots", required_argument, NULL, OPT_NETRAM },
	{ "flash-slots", required_argument, NULL, OPT_FLASH },
	{ "disk-slots", required_argument, NULL, OPT_DISK },
	{ "interval-ms", required_argument, NULL, OPT_INTERVAL },
	{ "amount-mode", required_argument, NULL, OPT_AMOUNT_MODE },
	{ "amount", required_argument, NULL, OPT_AMOUNT },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "max-slots", required_argument, NULL, OPT_MAX_SLOTS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* "a b c": the registered prefetch policies. */
static const char *policy_names(char *buf, size_t len)
{
	n2l_policy_names(N2L_POLICY_PREFETCH, "", buf, len);
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

static void print_usage(FILE *f)
{
	char names[256];

	fprintf(f,
		"Usage: n2l-sim [OPTION]... TRACE\n"
		"Replay a slot trace of nswap2l's tracepoints against its prefetch policies\n"
		"and report, per policy, the slots prefetched, the prefetch hits, the\n"
		"read/prefetch ratio and the share of slot reads each medium served.\n"
		"\n"
		"TRACE is the text of the nswap2l_write/read/free/migrate tracepoints as\n"
		"/sys/kernel/tracing/trace or trace_pipe, 'trace-cmd report' or 'perf script'\n"
		"print it; - reads standard input. Writes are replayed as swap-outs placed by\n"
		"the netram-first policy, reads as swap-ins from wherever the simulated slot\n"
		"map has the slot, frees as discards; the trace's own migrations are ignored\n"
		"and the kernel's migration engine is simulated for each policy instead.\n"
		"\n"
		"  --dev MAJ:MIN        the device to replay (default: the first one seen)\n"
		"  --policy NAME        a prefetch policy to run; repeatable\n"
		"                       (default: every one registered: %s)\n"
		"  --netram-slots N     Network RAM capacity in slots (default: the most slots\n"
		"                       the trace itself shows on Network RAM at once)\n"
		"  --flash-slots N      Flash capacity in slots (default: unlimited)\n"
		"  --disk-slots N       disk capacity in slots (default: unlimited)\n"
		"  --interval-ms N      a migration run every N ms of trace time, %u..%u\n"
		"                       (default: 1000)\n"
		"  --amount-mode MODE   what a run moves: swapouts, a percentage of the slots\n"
		"                       written since the last run; fixed, a number of slots;\n"
		"                       netram, a percentage of the slots on Network RAM\n"
		"                       (default: swapouts)\n"
		"  --amount N           that percentage (at most 100) or number (default: 10)\n"
		"  --seed N             seed of the random policy's generator (default: 1)\n"
		"  --max-slots N        refuse a trace naming more slots (default: %u)\n"
		"  --json               print one JSON object instead of a table\n"
		"  -h, --help           print this help and exit\n"
		"\n"
		"Exit status: 0 ok, 1 unreadable trace or no events for the device,\n"
		"2 usage error.\n",
		policy_names(names, sizeof(names)), SIM_INTERVAL_MIN,
		SIM_INTERVAL_MAX, SIM_DEFAULT_MAX_SLOTS);
}

/* Say what is wrong with the command line; false. */
static __printf(1, 2) bool bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "n2l-sim: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry 'n2l-sim --help' for more information.\n");
	va_end(ap);
	return false;
}

/* @arg as a number of @name between @lo and @hi. */
static bool get_number(const char *name, const char *arg, u64 lo, u64 hi,
		       u64 *out)
{
	if (!sim_parse_u64(arg, strlen(arg), UINT64_MAX, out) &&
	    *out >= lo && *out <= hi)
		return true;
	return bad("--%s wants a number from %llu to %llu, not '%s'", name,
		   (unsigned long long)lo, (unsigned long long)hi, arg);
}

static bool amount_mode(const char *arg, struct sim_knobs *k)
{
	u32 i;

	for (i = 0; i <= SIM_AMOUNT_NETRAM; i++) {
		if (!strcmp(arg, sim_amount_modes[i])) {
			k->amount_mode = i;
			return true;
		}
	}
	return bad("--amount-mode is swapouts, fixed or netram, not '%s'", arg);
}

/* Kept by the name the policy registered ("default" is an alias). */
static bool add_policy(struct sim_opts *o, const char *name)
{
	struct n2l_policy_type *t = n2l_policy_get(N2L_POLICY_PREFETCH, name);
	char names[256];
	unsigned int i;

	if (!t)
		return bad("no prefetch policy '%s'; there are: %s", name,
			   policy_names(names, sizeof(names)));
	n2l_policy_put(t);
	for (i = 0; i < o->nr_policies; i++)
		if (!strcmp(o->policies[i], t->name))
			return bad("--policy %s given twice", t->name);
	o->policies[o->nr_policies++] = t->name;
	return true;
}

static bool one_option(struct sim_opts *o, int c, const char *arg)
{
	const struct option *lo;
	u64 v;

	for (lo = long_opts; lo->name && lo->val != c; lo++)
		;
	switch (c) {
	case OPT_DEV:
		o->dev_given = true;
		return !sim_parse_dev(arg, strlen(arg), &o->dev) ||
		       bad("--dev wants MAJOR:MINOR, as in the trace's dev=, not '%s'",
			   arg);
	case OPT_POLICY:
		return add_policy(o, arg);
	case OPT_NETRAM:
	case OPT_FLASH:
	case OPT_DISK:
		return get_number(lo->name, arg, 0, U32_MAX,
				  &o->cap[N2L_NETRAM + (c - OPT_NETRAM)]);
	case OPT_INTERVAL:
		if (!get_number(lo->name, arg, SIM_INTERVAL_MIN,
				SIM_INTERVAL_MAX, &v))
			return false;
		o->knobs.interval_ms = (u32)v;
		return true;
	case OPT_AMOUNT_MODE:
		return amount_mode(arg, &o->knobs);
	case OPT_AMOUNT:
		if (!get_number(lo->name, arg, 0, SIM_AMOUNT_MAX, &v))
			return false;
		o->knobs.amount = (u32)v;
		return true;
	case OPT_SEED:
		return get_number(lo->name, arg, 0, UINT64_MAX, &o->seed);
	case OPT_MAX_SLOTS:
		return get_number(lo->name, arg, 1, U32_MAX, &o->max_slots);
	case OPT_JSON:
		o->json = true;
		return true;
	default:	/* getopt said what is wrong */
		fprintf(stderr, "Try 'n2l-sim --help' for more information.\n");
		return false;
	}
}

static void defaults(struct sim_opts *o)
{
	enum n2l_medium m;

	memset(o, 0, sizeof(*o));
	for_each_medium(m)
		o->cap[m] = SIM_UNLIMITED;
	o->knobs.interval_ms = 1000;
	o->knobs.amount = 10;
	o->knobs.amount_mode = SIM_AMOUNT_SWAPOUTS;
	o->seed = 1;
	o->max_slots = SIM_DEFAULT_MAX_SLOTS;
}

/*
 * Room for every registered policy: no name is kept twice. With none
 * named, they are all kept, in name order.
 */
static bool policies_init(struct sim_opts *o, bool all)
{
	char names[256], *name, *save = NULL;
	size_t n = 1;

	policy_names(names, sizeof(names));
	for (name = names; *name; name++)
		n += *name == ' ';
	if (!o->policies)
		o->policies = calloc(n, sizeof(*o->policies));
	if (!o->policies)
		return bad("out of memory");
	for (name = strtok_r(names, " ", &save); all && name;
	     name = strtok_r(NULL, " ", &save))
		if (!add_policy(o, name))
			return false;
	return true;
}

enum sim_opts_result sim_parse_options(int argc, char **argv,
				       struct sim_opts *o)
{
	int c;

	defaults(o);
	if (!policies_init(o, false))
		return SIM_OPTS_BAD;
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		if (c == 'h') {
			print_usage(stdout);
			return SIM_OPTS_HELP;
		}
		if (!one_option(o, c, optarg))
			return SIM_OPTS_BAD;
	}
	if (o->knobs.amount_mode != SIM_AMOUNT_FIXED && o->knobs.amount > 100) {
		bad("--amount is a percentage in --amount-mode %s: at most 100",
		    sim_amount_modes[o->knobs.amount_mode]);
		return SIM_OPTS_BAD;
	}
	if (optind == argc) {
		bad("no TRACE given (- reads standard input)");
		return SIM_OPTS_BAD;
	}
	if (optind < argc - 1) {
		bad("one TRACE only, not '%s'", argv[optind + 1]);
		return SIM_OPTS_BAD;
	}
	o->path = argv[optind];
	if (!o->nr_policies && !policies_init(o, true))
		return SIM_OPTS_BAD;
	return SIM_OPTS_RUN;
}

void sim_opts_free(struct sim_opts *o)
{
	free(o->policies);
	o->policies = NULL;
}
