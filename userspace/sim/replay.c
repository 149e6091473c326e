// SPDX-License-Identifier: GPL-2.0-only
/*
 * One policy against one trace. Trace time drives the migration worker:
 * it runs every interval from the first event's time on, before any event
 * stamped at or after its time, and never after the last event (what it
 * would do then changes no read of the trace). The kernel's worker is
 * rescheduled after each run and so drifts by the time a run takes; the
 * simulated one runs on the exact grid. Events are taken in the order of
 * the trace; a timestamp that goes back only delays the next run.
 *
 * The trace's own migrate events are not replayed: the engine makes its
 * own, as the policy under test chooses.
 */
#include <errno.h>

#include "sim.h"

/* The first time of the grid that lies after @now. */
static u64 next_tick_after(u64 next, u64 interval, u64 now)
{
	u64 skip = (now - next) / interval + 1;

	if (skip > (UINT64_MAX - next) / interval)
		return UINT64_MAX;
	return next + skip * interval;
}

/*
 * The runs due by @now, and when the next one is. Only the first can have
 * work: no slot is written between runs that no event separates.
 */
static u64 run_ticks(struct sim_model *m, u64 next, u64 interval, u64 now)
{
	if (next > now)
		return next;
	sim_mig_tick(m);
	return next_tick_after(next, interval, now);
}

static void apply(struct sim_model *m, const struct sim_event *ev)
{
	switch (ev->type) {
	case SIM_EV_WRITE:
		sim_write(m, ev->slot, ev->nr);
		break;
	case SIM_EV_READ:
		sim_read(m, ev->slot, ev->nr);
		break;
	case SIM_EV_FREE:
		sim_free(m, ev->slot, ev->nr);
		break;
	default:
		break;
	}
}

int sim_replay(const struct sim_trace *t, const struct sim_config *cfg,
	       struct n2l_prefetch_type *pf, struct sim_result *res)
{
	u64 interval = (u64)max(cfg->knobs.interval_ms, 1U) * 1000000;
	struct sim_model *m;
	u64 next = 0;
	size_t i;
	int r;

	if (sim_trace_nr_slots(t) > cfg->nr_slots)
		return -EINVAL;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	n2l_random_seed(cfg->seed);
	r = sim_model_init(m, cfg, pf);
	if (r) {
		free(m);
		return r;
	}
	if (t->nr)
		next = next_tick_after(t->ev[0].ns, interval, t->ev[0].ns);
	for (i = 0; i < t->nr; i++) {
		next = run_ticks(m, next, interval, t->ev[i].ns);
		apply(m, &t->ev[i]);
	}
	res->policy = pf->base.name;
	res->c = m->c;
	memcpy(res->held, m->held, sizeof(res->held));
	sim_model_exit(m);
	free(m);
	return 0;
}
