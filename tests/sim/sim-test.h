/* SPDX-License-Identifier: GPL-2.0-only */
/* Helpers of the simulator's C tests (helpers.c). */
#ifndef N2L_SIM_TEST_H
#define N2L_SIM_TEST_H

#include "sim.h"
#include "unit.h"

/* A trace from text, as the simulator reads a file; device: the first. */
struct sim_trace load_text(const char *text);

/* A config for @t: netram @netram slots, Flash and disk unlimited. */
struct sim_config config_for(const struct sim_trace *t, u64 netram);

/* Replays @t against the prefetch policy @name. */
struct sim_result replay(const struct sim_trace *t,
			 const struct sim_config *cfg, const char *name);

/* Each migration run moves @n slots. */
static inline void fixed_amount(struct sim_knobs *k, u32 n)
{
	k->amount_mode = SIM_AMOUNT_FIXED;
	k->amount = n;
}

/* A model of @nr_slots slots with the policy @name, for step-by-step tests. */
void model_open(struct sim_model *m, u32 nr_slots, u64 netram, u64 flash,
		const char *name);
void model_close(struct sim_model *m);

#endif
