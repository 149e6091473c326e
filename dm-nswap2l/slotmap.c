// SPDX-License-Identifier: GPL-2.0-only
/*
 * Shadow slot map: allocation and the run queries that let one bio cover
 * many slots.
 */
#include "slotmap.h"

int slotmap_init(struct slotmap *m, u32 nr_slots)
{
	m->entries = n2l_zalloc(slotmap_bytes(nr_slots));
	if (!m->entries)
		return -ENOMEM;
	m->nr_slots = nr_slots;
	return 0;
}

void slotmap_exit(struct slotmap *m)
{
	n2l_free(m->entries);
	n2l_free(m->dirty[0]);
	n2l_free(m->dirty[1]);
	memset(m, 0, sizeof(*m));
}

/* Start tracking changes by runs of @per entries; every run is dirty. */
int slotmap_track(struct slotmap *m, u32 per)
{
	u32 runs = DIV_ROUND_UP(m->nr_slots, per);
	unsigned int a;

	for (a = 0; a < 2; a++) {
		m->dirty[a] = n2l_zalloc(n2l_bitmap_bytes(runs));
		if (!m->dirty[a])
			return -ENOMEM;
		bitmap_set(m->dirty[a], 0, runs);
	}
	m->per = per;
	return 0;
}

/*
 * Whether @next can be read in the same request as @prev, the entry of the
 * slot just before it: same medium, and the next block on a block medium;
 * on Network RAM, the same group and the same write's copies, since one
 * GET carries one version.
 */
static bool sme_follows(sme_t prev, sme_t next)
{
	if (sme_medium(prev) != sme_medium(next))
		return false;
	switch (sme_medium(next)) {
	case N2L_NETRAM:
		return sme_loc(next) == sme_loc(prev);
	case N2L_NONE:
		return (sme_flags(next) & SME_LOST) == (sme_flags(prev) & SME_LOST);
	default:
		return sme_blk(next) == sme_blk(prev) + 1;
	}
}

/*
 * How many slots from @first (at least 1, at most @max) sit one after the
 * other on the medium of @first, so that one remapped bio reaches them all.
 */
u32 slotmap_contiguous(const struct slotmap *m, n2l_slot_t first, u32 max)
{
	u32 s = from_slot(first), n;

	max = min(max, m->nr_slots - s);
	for (n = 1; n < max; n++)
		if (!sme_follows(m->entries[s + n - 1], m->entries[s + n]))
			break;
	return n;
}

/* How many slots from @first (up to @max) hold no data and lost none. */
u32 slotmap_unmapped_run(const struct slotmap *m, n2l_slot_t first, u32 max)
{
	u32 s = from_slot(first), n;
	sme_t e;

	max = min(max, m->nr_slots - s);
	for (n = 0; n < max; n++) {
		e = m->entries[s + n];
		if (sme_medium(e) != N2L_NONE || sme_lost(e))
			break;
	}
	return n;
}
