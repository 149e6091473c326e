// SPDX-License-Identifier: GPL-2.0-only
/*
 * The simulated device: a slot map, a capacity per medium, the placement
 * policy and one prefetch policy, driven by the trace's writes, reads and
 * frees the way dm-nswap2l/nswap2l-io.c drives them, slot by slot:
 *
 *  - a write asks placement where to go, with the free slots of every
 *    medium (__n2l_choose()); the current medium means "overwrite in
 *    place"; it clears the prefetched mark and counts one swap-out for
 *    the migration engine; no room anywhere: the write fails (-ENOSPC)
 *    and the slot keeps its old copy;
 *  - a read is served by the slot's medium, and the first read of a
 *    prefetched slot is a prefetch hit; unmapped slots read as zeroes;
 *  - a free unmaps.
 *
 * The prefetch policy hears on_write() for every slot written, on_read()
 * for every slot read from a medium and on_free() for every mapped slot
 * freed, as __n2l_pf_write(), __n2l_pf_read() and __n2l_pf_free() tell it.
 */
#include <errno.h>

#include "sim.h"

u32 sim_room(const struct sim_model *m, enum n2l_medium md)
{
	return m->held[md] < m->cap[md] ? m->cap[md] - m->held[md] : 0;
}

/* Point @slot at @md, counting it out of its old medium and into the new. */
void sim_remap(struct sim_model *m, u32 slot, enum n2l_medium md, u32 copy,
	       bool prefetched)
{
	struct sim_slot *e = &m->map[slot];

	if (e->medium != N2L_NONE)
		m->held[e->medium]--;
	if (md != N2L_NONE)
		m->held[md]++;
	e->medium = md;
	e->copy = copy;
	e->prefetched = prefetched;
}

/*
 * __n2l_choose() for one slot now on @now. Every server is up and the
 * Network RAM is one pool, so a Network RAM answer never fails after.
 */
static enum n2l_medium choose(struct sim_model *m, enum n2l_medium now)
{
	struct n2l_place_ctx ctx = { .now = now };
	enum n2l_medium md;

	for_each_medium(md)
		ctx.free[md] = sim_room(m, md);
	md = m->place->type->place(m->place, &ctx);
	if (md != N2L_NONE && md != ctx.now && !ctx.free[md])
		md = N2L_NONE;
	return md;
}

void sim_write(struct sim_model *m, u32 slot, u32 nr)
{
	struct n2l_prefetch *pf = m->pf;
	enum n2l_medium md;
	u32 i, s;

	for (i = 0; i < nr; i++) {
		s = slot + i;
		/* One PUT, one copy, carries at most SIM_MAX_PAGES slots. */
		if (i % SIM_MAX_PAGES == 0)
			m->next_copy++;
		md = choose(m, m->map[s].medium);
		if (md == N2L_NONE) {
			m->c.nospc++;
			continue;
		}
		sim_remap(m, s, md, md == N2L_NETRAM ? m->next_copy : 0, false);
		m->c.writes[md]++;
		m->swapouts++;
		pf->type->on_write(pf, to_slot(s), md);
	}
}

void sim_read(struct sim_model *m, u32 slot, u32 nr)
{
	struct n2l_prefetch *pf = m->pf;
	struct sim_slot *e;
	u32 i;

	for (i = 0; i < nr; i++) {
		e = &m->map[slot + i];
		m->c.reads[e->medium]++;
		if (e->medium == N2L_NONE)
			continue;
		if (e->prefetched) {
			m->c.hits++;
			e->prefetched = false;
		}
		if (pf->type->on_read)
			pf->type->on_read(pf, to_slot(slot + i), e->medium);
	}
}

void sim_free(struct sim_model *m, u32 slot, u32 nr)
{
	struct n2l_prefetch *pf = m->pf;
	u32 i;

	for (i = 0; i < nr; i++) {
		if (m->map[slot + i].medium != N2L_NONE)
			pf->type->on_free(pf, to_slot(slot + i));
		sim_remap(m, slot + i, N2L_NONE, 0, false);
	}
}

/*----------------------------------------------------------------*/

static struct n2l_placement *placement_create(void)
{
	struct n2l_policy_type *pt;
	struct n2l_placement *p;

	pt = n2l_policy_get(N2L_POLICY_PLACEMENT, "netram-first");
	if (!pt)
		return NULL;
	p = to_placement_type(pt)->create();
	if (!p) {
		n2l_policy_put(pt);
		return NULL;
	}
	p->type = to_placement_type(pt);
	return p;
}

/* @pf stays the caller's: the model takes no reference on it. */
int sim_model_init(struct sim_model *m, const struct sim_config *cfg,
		   struct n2l_prefetch_type *pf)
{
	u32 nr = max(cfg->nr_slots, 1U);
	enum n2l_medium md;

	memset(m, 0, sizeof(*m));
	m->nr_slots = nr;
	m->knobs = cfg->knobs;
	for_each_medium(md)
		m->cap[md] = (u32)min_t(u64, cfg->cap[md], nr);
	m->map = calloc(nr, sizeof(*m->map));
	m->place = placement_create();
	m->pf = pf->create(nr);
	if (m->pf)
		m->pf->type = pf;
	if (!m->map || !m->place || !m->pf) {
		sim_model_exit(m);
		return -ENOMEM;
	}
	return 0;
}

/* Copes with a partly made model. */
void sim_model_exit(struct sim_model *m)
{
	struct n2l_placement_type *pt;

	if (m->pf)
		m->pf->type->destroy(m->pf);
	if (m->place) {
		pt = m->place->type;
		pt->destroy(m->place);
		n2l_policy_put(&pt->base);
	}
	free(m->map);
	memset(m, 0, sizeof(*m));
}
