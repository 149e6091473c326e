// SPDX-License-Identifier: GPL-2.0-only
/*
 * n2l-sim: read a trace, pick its device, size the model, replay it
 * against every chosen prefetch policy and report. Exit status: 0 ok,
 * 1 unreadable trace or no events for the device, 2 usage error.
 */
#include <errno.h>

#include "sim.h"

enum {
	EXIT_OK = 0,
	EXIT_INPUT = 1,
	EXIT_USAGE = 2,
};

/* @name: how messages call the trace. */
static int load(const char *path, const char *name, struct sim_trace *t)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
	int r;

	if (!f) {
		r = -errno;
		fprintf(stderr, "n2l-sim: %s: %s\n", name, strerror(-r));
		return r;
	}
	r = sim_trace_read(t, f, name);
	if (f != stdin)
		fclose(f);
	if (r)
		fprintf(stderr, "n2l-sim: %s: %s\n", name, strerror(-r));
	return r;
}

/* The device's events, or why there are none. */
static int pick_device(const struct sim_opts *o, const char *name,
		       struct sim_trace *t)
{
	sim_trace_select(t, o->dev_given ? &o->dev : NULL);
	if (t->nr)
		return 0;
	fprintf(stderr, "n2l-sim: %s: no nswap2l events", name);
	if (o->dev_given)
		fprintf(stderr, " for device %u:%u", o->dev.major, o->dev.minor);
	fprintf(stderr, " (%llu malformed line%s)\n",
		(unsigned long long)t->malformed, t->malformed == 1 ? "" : "s");
	return -ENOENT;
}

/* Slots and capacities: what the options give, else what the trace shows. */
static int size_model(const struct sim_opts *o, const char *name,
		      const struct sim_trace *t, struct sim_config *cfg)
{
	u64 nr = sim_trace_nr_slots(t);
	u32 peak;

	if (nr > o->max_slots) {
		fprintf(stderr, "n2l-sim: %s: the trace names %llu slots, more than --max-slots %llu\n",
			name, (unsigned long long)nr,
			(unsigned long long)o->max_slots);
		return -E2BIG;
	}
	cfg->nr_slots = (u32)nr;
	memcpy(cfg->cap, o->cap, sizeof(cfg->cap));
	cfg->knobs = o->knobs;
	cfg->seed = o->seed;
	if (o->cap[N2L_NETRAM] != SIM_UNLIMITED)
		return 0;
	if (sim_trace_netram_peak(t, cfg->nr_slots, &peak))
		return -ENOMEM;
	cfg->cap[N2L_NETRAM] = peak;
	return 0;
}

static int replay_all(const struct sim_opts *o, const struct sim_trace *t,
		      const struct sim_config *cfg, struct sim_result *res)
{
	struct n2l_policy_type *pt;
	unsigned int i;
	int r;

	for (i = 0; i < o->nr_policies; i++) {
		pt = n2l_policy_get(N2L_POLICY_PREFETCH, o->policies[i]);
		if (!pt)
			return -ENOENT;
		r = sim_replay(t, cfg, to_prefetch_type(pt), &res[i]);
		n2l_policy_put(pt);
		if (r) {
			fprintf(stderr, "n2l-sim: %s: %s\n", o->policies[i],
				strerror(-r));
			return r;
		}
	}
	return 0;
}

static int run(struct sim_opts *o)
{
	struct sim_trace t = { 0 };
	struct sim_config cfg = { 0 };
	struct sim_result *res = NULL;
	const char *name = strcmp(o->path, "-") ? o->path : "<stdin>";
	struct sim_report rep;
	int r;

	r = load(o->path, name, &t);
	if (!r)
		r = pick_device(o, name, &t);
	if (!r)
		r = size_model(o, name, &t, &cfg);
	if (!r) {
		res = calloc(o->nr_policies, sizeof(*res));
		r = res ? replay_all(o, &t, &cfg, res) : -ENOMEM;
	}
	if (!r) {
		rep = (struct sim_report){
			.file = name,
			.t = &t, .cfg = &cfg, .dev_given = o->dev_given,
			.netram_from_trace = o->cap[N2L_NETRAM] == SIM_UNLIMITED,
			.res = res, .nr_res = o->nr_policies,
		};
		if (o->json)
			sim_print_json(stdout, &rep);
		else
			sim_print_table(stdout, &rep);
	}
	free(res);
	sim_trace_free(&t);
	return r ? EXIT_INPUT : EXIT_OK;
}

int main(int argc, char **argv)
{
	struct sim_opts o;
	int r;

	if (n2l_builtin_policies_register()) {
		fprintf(stderr, "n2l-sim: cannot register the policies\n");
		return EXIT_INPUT;
	}
	switch (sim_parse_options(argc, argv, &o)) {
	case SIM_OPTS_HELP:
		r = EXIT_OK;
		break;
	case SIM_OPTS_BAD:
		r = EXIT_USAGE;
		break;
	default:
		r = run(&o);
	}
	sim_opts_free(&o);
	n2l_builtin_policies_unregister();
	if (fflush(stdout)) {
		perror("n2l-sim: standard output");
		r = EXIT_INPUT;
	}
	return r;
}
