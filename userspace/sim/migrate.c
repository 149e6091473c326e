// SPDX-License-Identifier: GPL-2.0-only
/*
 * The migration engine of dm-nswap2l/nswap2l-migrate.c, one run of its
 * worker at a time and without the I/O: the same amount, the same batches
 * of candidates, the same runs of one Network RAM copy, the same stop
 * when Flash is full.
 *
 *  1. the amount: a percentage of the slots written since the last run
 *     (rounded up), a fixed count, or a percentage of Network RAM held;
 *  2. the policy names up to SIM_MIG_BATCH candidates; a candidate not on
 *     Network RAM puts the policy right (on_free() or on_write()); the
 *     others are grouped into runs of consecutive slots of one copy;
 *  3. a run moves to Flash as far as Flash has room: each moved slot is
 *     marked prefetched and leaves the policy with on_free(); once Flash
 *     is full the whole run of the worker ends;
 *  4. until the amount is reached or the policy has nothing more.
 *
 * Nothing runs concurrently here, so no slot changes while it moves.
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

/* mig_select(): step 2; the number of runs, and in @asked the candidates. */
static u32 mig_select(struct sim_model *m, u64 want, u32 *asked)
{
	struct n2l_prefetch *pf = m->pf;
	struct sim_slot *e;
	u32 i, s, nruns = 0;

	*asked = pf->type->select(pf, m->victims,
				  (u32)min_t(u64, want, SIM_MIG_BATCH));
	for (i = 0; i < *asked; i++) {
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
		if (nruns && run_extends(&m->runs[nruns - 1], s, e->copy))
			continue;
		m->runs[nruns].first = s;
		m->runs[nruns].nr = 1;
		m->runs[nruns].copy = e->copy;
		nruns++;
	}
	return nruns;
}

/* install_move() of one slot still on the run's copy. */
static void move_slot(struct sim_model *m, const struct sim_run *run, u32 s)
{
	const struct sim_slot *e = &m->map[s];

	if (e->medium != N2L_NETRAM || e->copy != run->copy)
		return;
	sim_remap(m, s, N2L_FLASH, 0, true);
	m->c.prefetched++;
	m->pf->type->on_free(m->pf, to_slot(s));
}

/* n2l_move_out() to Flash: step 3; false once Flash is full. */
static bool mig_move_run(struct sim_model *m, const struct sim_run *run)
{
	u32 done = 0, n, i;

	while (done < run->nr) {
		n = min(run->nr - done, sim_room(m, N2L_FLASH));
		if (!n)
			return false;
		for (i = 0; i < n; i++)
			move_slot(m, run, run->first + done + i);
		done += n;
	}
	return true;
}

/* mig_round(). */
static void mig_round(struct sim_model *m, u64 want)
{
	u32 nruns, asked, i;

	while (want) {
		nruns = mig_select(m, want, &asked);
		if (!asked)
			return;
		want -= min_t(u64, want, asked);
		for (i = 0; i < nruns; i++)
			if (!mig_move_run(m, &m->runs[i]))
				return;
	}
}

/* mig_work(): only if slots were written since the last run. */
void sim_mig_tick(struct sim_model *m)
{
	u64 swapouts = m->swapouts;

	m->swapouts = 0;
	if (!swapouts)
		return;
	m->c.ticks++;
	mig_round(m, sim_mig_amount(m, swapouts));
}
