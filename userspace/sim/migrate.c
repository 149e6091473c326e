// SPDX-License-Identifier: GPL-2.0-only
/*
 * The migration engine of dm-nswap2l/nswap2l-migrate.c, one activation of
 * its worker at a time and without the I/O: the same target, the same
 * batches of candidates, the same runs of one Network RAM copy, the same
 * stop when Flash is full.
 *
 *  1. the target: the policy's plan(), or else a percentage of the slots
 *     written since the last run (rounded up), a fixed count, or a
 *     percentage of Network RAM held; never more than Network RAM holds;
 *  2. the policy names up to SIM_MIG_BATCH candidates; a candidate not on
 *     Network RAM puts the policy right (on_free() or on_write()); the
 *     others leave the policy (on_free()) and are grouped into runs of
 *     consecutive slots of one copy;
 *  3. a run moves to Flash as far as Flash has room: each moved slot is
 *     marked prefetched; once Flash is full the slots left go back to the
 *     policy (on_write() to Network RAM) and the activation ends;
 *  4. until the target is moved, the policy has nothing more, or twice
 *     the target was tried.
 *
 * Nothing runs concurrently here, so no slot changes while it moves: the
 * kernel's moves of 64 slots, several in flight at once, change which
 * slots move only when the workload writes them meanwhile.
 */
#include "sim.h"

static u64 div_round_up(u64 n, u64 d)
{
	return n / d + (n % d != 0);
}

/* mig_amount(). */
u64 sim_mig_amount(const struct sim_model *m, u64 swapouts)
{
	u64 amount = m->knobs.amount;

	switch (m->knobs.amount_mode) {
	case SIM_AMOUNT_FIXED:
		return amount;
	case SIM_AMOUNT_NETRAM:
		return div_round_up((u64)m->held[N2L_NETRAM] * amount, 100);
	default:
		return div_round_up(swapouts * amount, 100);
	}
}

/* run_extends(): whether slot @s of copy @copy extends @run, at either end. */
static bool run_extends(struct sim_run *run, u32 s, u32 copy)
{
	if (copy != run->copy || run->nr >= SIM_MAX_PAGES)
		return false;
	if (s == run->first + run->nr) {
		run->nr++;
		return true;
	}
	if (s + 1 == run->first) {
		run->first = s;
		run->nr++;
		return true;
	}
	return false;
}

/* mig_select(): step 2; the number of runs, and in @nr the slots they hold. */
static u32 mig_select(struct sim_model *m, u64 want, u32 *nr)
{
	struct n2l_prefetch *pf = m->pf;
	struct sim_slot *e;
	u32 i, s, asked, nruns = 0;

	*nr = 0;
	asked = pf->type->select(pf, m->victims,
				 (u32)min_t(u64, want, SIM_MIG_BATCH));
	for (i = 0; i < asked; i++) {
		s = from_slot(m->victims[i]);
		if (WARN_ON_ONCE(s >= m->nr_slots))
			continue;
		e = &m->map[s];
		if (e->medium != N2L_NETRAM) {
			if (e->medium == N2L_NONE)
				pf->type->on_free(pf, m->victims[i]);
			else
				pf->type->on_write(pf, m->victims[i], e->medium);
			continue;
		}
		pf->type->on_free(pf, m->victims[i]);
		(*nr)++;
		if (nruns && run_extends(&m->runs[nruns - 1], s, e->copy))
			continue;
		m->runs[nruns].first = s;
		m->runs[nruns].nr = 1;
		m->runs[nruns].copy = e->copy;
		nruns++;
	}
	return nruns;
}

/* mig_give_back(): slots of @run from @from on that did not move. */
static void give_back(struct sim_model *m, const struct sim_run *run, u32 from)
{
	u32 i;

	for (i = from; i < run->nr; i++)
		m->pf->type->on_write(m->pf, to_slot(run->first + i), N2L_NETRAM);
}

/* mig_move_run() to Flash: step 3; the slots moved, all of them unless Flash is full. */
static u32 mig_move_run(struct sim_model *m, const struct sim_run *run)
{
	u32 n = min(run->nr, sim_room(m, N2L_FLASH)), i;

	for (i = 0; i < n; i++) {
		sim_remap(m, run->first + i, N2L_FLASH, 0, true);
		m->c.prefetched++;
	}
	give_back(m, run, n);
	return n;
}

/* mig_round(). */
static void mig_round(struct sim_model *m, u64 target)
{
	u64 moved = 0, tried = 0;
	u32 nruns, nr, i;

	while (moved < target && tried < 2 * target) {
		nruns = mig_select(m, target - moved, &nr);
		if (!nr)
			return;
		tried += nr;
		for (i = 0; i < nruns; i++) {
			moved += mig_move_run(m, &m->runs[i]);
			if (!sim_room(m, N2L_FLASH))
				break;
		}
		if (i < nruns) {
			for (i++; i < nruns; i++)
				give_back(m, &m->runs[i], 0);
			return;
		}
	}
}

/*
 * mig_plan(): a policy's plan() sees what the model knows, free room,
 * swap-outs and the first reads of prefetched slots (the model counts no
 * later ones), and no latency, queue or CPU time: the kernel's engine
 * measures those, the model has none, and its CPUs wait on every read.
 * @room: how much of the plan makes room on Network RAM.
 */
static u64 mig_plan(struct sim_model *m, u64 swapouts, u64 *room)
{
	struct n2l_pf_view v = {
		.swapouts = swapouts,
		.knob_amount = sim_mig_amount(m, swapouts),
		.prefetched = m->c.prefetched - m->seen_prefetched,
		.prefetch_reads = m->c.hits - m->seen_hits,
		.cpu_idle_pm = 1000,	/* the model charges no CPU time */
	};
	enum n2l_medium md;

	m->seen_prefetched = m->c.prefetched;
	m->seen_hits = m->c.hits;
	v.slots = m->nr_slots;
	for_each_medium(md) {
		v.held[md] = m->held[md];
		v.free[md] = sim_room(m, md);
	}
	*room = 0;
	if (!m->pf->type->plan)
		return v.knob_amount;
	return m->pf->type->plan(m->pf, &v, room);
}

/* mig_target(). */
static u64 mig_target(struct sim_model *m, u64 swapouts)
{
	u64 room, target = mig_plan(m, swapouts, &room);

	target = min_t(u64, target, m->held[N2L_NETRAM]);
	if (target) {
		m->c.target += target;
		m->c.room_target += min(room, target);
		m->c.activations++;
	}
	return target;
}

/* mig_work(): only if slots were written since the last run. */
void sim_mig_tick(struct sim_model *m)
{
	u64 swapouts = m->swapouts;

	m->swapouts = 0;
	if (!swapouts)
		return;
	m->c.ticks++;
	mig_round(m, mig_target(m, swapouts));
}
