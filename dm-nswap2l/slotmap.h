/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The shadow slot map: one 8-byte entry per slot of the virtual device,
 * saying which medium holds the slot and where.
 *
 *   bits  0..1   medium (enum n2l_medium; N2L_NONE = holds no data)
 *   bits  2..5   flags (SME_MIGRATING, SME_PREFETCHED)
 *   bits  6..31  version: bumped by every write and discard of the slot
 *                when it is mapped, so that work started earlier (a write
 *                to a new location, a migration) can tell at completion
 *                whether it is still the newest and may install itself
 *   bits 32..63  location on the medium: a block index on block media;
 *                on Network RAM the server (low 6 bits) and the version
 *                of the copy it holds (high 26 bits)
 *
 * The map does no locking; the target serialises access with its lock.
 */
#ifndef N2L_SLOTMAP_H
#define N2L_SLOTMAP_H

#include "n2l-types.h"

typedef u64 sme_t;

#define SME_MEDIUM_MASK		0x3ULL
#define SME_FLAGS_SHIFT		2
#define SME_FLAGS_MASK		0xfULL
#define SME_VERSION_SHIFT	6
#define SME_VERSION_BITS	26
#define SME_VERSION_MASK	((1ULL << SME_VERSION_BITS) - 1)
#define SME_LOC_SHIFT		32

/* flags */
#define SME_MIGRATING		0x1U	/* a copy to another medium is in flight */
#define SME_PREFETCHED		0x2U	/* arrived here by prefetch, not yet read */

struct slotmap {
	sme_t *entries;
	u32 nr_slots;
};

int slotmap_init(struct slotmap *m, u32 nr_slots);
void slotmap_exit(struct slotmap *m);
u32 slotmap_contiguous(const struct slotmap *m, n2l_slot_t first, u32 max);
u32 slotmap_unmapped_run(const struct slotmap *m, n2l_slot_t first, u32 max);

static inline enum n2l_medium sme_medium(sme_t e)
{
	return (enum n2l_medium)(e & SME_MEDIUM_MASK);
}

static inline unsigned int sme_flags(sme_t e)
{
	return (unsigned int)((e >> SME_FLAGS_SHIFT) & SME_FLAGS_MASK);
}

static inline u32 sme_version(sme_t e)
{
	return (u32)((e >> SME_VERSION_SHIFT) & SME_VERSION_MASK);
}

static inline u32 sme_loc(sme_t e)
{
	return (u32)(e >> SME_LOC_SHIFT);
}

static inline sme_t sme_make(enum n2l_medium m, u32 loc, u32 version,
			     unsigned int flags)
{
	return ((sme_t)loc << SME_LOC_SHIFT) |
	       (((sme_t)version & SME_VERSION_MASK) << SME_VERSION_SHIFT) |
	       (((sme_t)flags & SME_FLAGS_MASK) << SME_FLAGS_SHIFT) |
	       ((sme_t)m & SME_MEDIUM_MASK);
}

static inline sme_t sme_set_flags(sme_t e, unsigned int flags)
{
	return sme_make(sme_medium(e), sme_loc(e), sme_version(e), flags);
}

/* The same slot, one version newer: what a write or discard stamps. */
static inline sme_t sme_bump(sme_t e)
{
	return sme_make(sme_medium(e), sme_loc(e), sme_version(e) + 1,
			sme_flags(e));
}

/* Network RAM locations: which server, and which write's copy it holds. */
#define SME_SERVER_BITS		6
#define SME_MAX_SERVERS		(1U << SME_SERVER_BITS)

static inline u32 sme_netram_loc(u32 server, u32 version)
{
	return (version << SME_SERVER_BITS) | server;
}

static inline u32 sme_netram_server(u32 loc)
{
	return loc & (SME_MAX_SERVERS - 1);
}

static inline u32 sme_netram_version(u32 loc)
{
	return loc >> SME_SERVER_BITS;
}

static inline sme_t slotmap_get(const struct slotmap *m, n2l_slot_t s)
{
	return m->entries[from_slot(s)];
}

static inline void slotmap_set(struct slotmap *m, n2l_slot_t s, sme_t e)
{
	m->entries[from_slot(s)] = e;
}

static inline size_t slotmap_bytes(u32 nr_slots)
{
	return (size_t)nr_slots * sizeof(sme_t);
}

#endif /* N2L_SLOTMAP_H */
