// SPDX-License-Identifier: GPL-2.0-only
/* Helpers of the simulator's C tests. */
#include "sim-test.h"

struct sim_trace load_text(const char *text)
{
	struct sim_trace t = { 0 };
	FILE *f = fmemopen((void *)text, strlen(text), "r");

	CHECK(f != NULL);
	if (!f)
		return t;
	CHECK_EQ(sim_trace_read(&t, f, "test"), 0);
	fclose(f);
	sim_trace_select(&t, NULL);
	return t;
}

struct sim_config config_for(const struct sim_trace *t, u64 netram)
{
	struct sim_config cfg = {
		.nr_slots = (u32)sim_trace_nr_slots(t),
		.cap = { 0, netram, SIM_UNLIMITED, SIM_UNLIMITED },
		.knobs = { .interval_ms = 1000, .amount = 10,
			   .amount_mode = SIM_AMOUNT_SWAPOUTS },
		.seed = 1,
	};

	return cfg;
}

static struct n2l_prefetch_type *prefetch_type(const char *name)
{
	static bool registered;
	struct n2l_policy_type *t;

	if (!registered) {
		CHECK_EQ(n2l_builtin_policies_register(), 0);
		registered = true;
	}
	t = n2l_policy_get(N2L_POLICY_PREFETCH, name);
	if (!t) {
		fprintf(stderr, "no policy %s\n", name);
		abort();
	}
	n2l_policy_put(t);
	return to_prefetch_type(t);
}

struct sim_result replay(const struct sim_trace *t,
			 const struct sim_config *cfg, const char *name)
{
	struct sim_result res;

	memset(&res, 0, sizeof(res));
	CHECK_EQ(sim_replay(t, cfg, prefetch_type(name), &res), 0);
	return res;
}

void model_open(struct sim_model *m, u32 nr_slots, u64 netram, u64 flash,
		const char *name)
{
	struct sim_config cfg = {
		.nr_slots = nr_slots,
		.cap = { 0, netram, flash, SIM_UNLIMITED },
		.knobs = { .interval_ms = 1000, .amount = 10,
			   .amount_mode = SIM_AMOUNT_SWAPOUTS },
		.seed = 1,
	};

	n2l_random_seed(1);
	if (sim_model_init(m, &cfg, prefetch_type(name))) {
		fprintf(stderr, "cannot make a model\n");
		abort();
	}
}

void model_close(struct sim_model *m)
{
	sim_model_exit(m);
}
