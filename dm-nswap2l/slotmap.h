/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The shadow slot map: one 8-byte entry per slot of the virtual device,
 * saying which medium holds the slot and where.
 *
 *   bits  0..1   medium (enum n2l_medium; N2L_NONE = holds no data)
 *   bits  2..7   flags (SME_PREFETCHED, SME_WRITING, SME_LOST, SME_PF_READ)
 *   bits  8..63  location on the medium:
 *                block media: the block (32 bits);
 *                Network RAM: the replica group (8 bits), then the
 *                version of the copies (48 bits)
 *
 * A version names one write of a slot to Network RAM; the device's
 * counter never hands one out twice. A slot being written (SME_WRITING)
 * has exactly one write in flight: a second write or a discard of it
 * waits, so a completing write never has to ask whether it is still the
 * newest. A lost slot (N2L_NONE with SME_LOST) reads as -EIO until it is
 * written or discarded.
 *
 * A slot the migration engine moved to Flash is prefetched
 * (SME_PREFETCHED) for as long as it stays there unwritten: every read of
 * it is a read of a prefetched slot, the first (SME_PF_READ not yet set)
 * a prefetch hit. Writing, discarding or moving the slot clears both.
 *
 * The map does no locking; the target serialises access with its lock.
 */
#ifndef N2L_SLOTMAP_H
#define N2L_SLOTMAP_H

#include "n2l-types.h"

typedef u64 sme_t;

#define SME_MEDIUM_MASK		0x3ULL
#define SME_FLAGS_SHIFT		2
#define SME_FLAGS_MASK		0x3fULL
#define SME_LOC_SHIFT		8

/* flags */
#define SME_PREFETCHED		0x1U	/* on Flash by prefetch, not written since */
#define SME_WRITING		0x2U	/* a write of the slot is in flight */
#define SME_LOST		0x4U	/* N2L_NONE: its data is gone, reads fail */
#define SME_PF_READ		0x8U	/* prefetched, and read since */
/* What a slot loses when it is written, or moved off the medium it is on. */
#define SME_PREFETCH_FLAGS	(SME_PREFETCHED | SME_PF_READ)

/*
 * What a change must touch to matter to a metadata device: the medium,
 * the lost flag and the location (the other flags are the running
 * device's own).
 */
#define SME_PERSISTENT		(~((sme_t)(SME_FLAGS_MASK & ~SME_LOST) << SME_FLAGS_SHIFT))

/* Network RAM locations: a replica group and a version. */
#define SME_GROUP_BITS		8
#define SME_GROUPS		(1U << SME_GROUP_BITS)
#define SME_VERS_BITS		48
#define SME_VERS_MAX		((1ULL << SME_VERS_BITS) - 1)

/*
 * With a metadata device, the map tracks which runs of @per entries
 * changed (in what SME_PERSISTENT covers) since each of the device's two
 * map areas was last written: dirty[a] has a bit per run.
 */
struct slotmap {
	sme_t *entries;
	u32 nr_slots;
	u32 per;
	unsigned long *dirty[2];
};

int slotmap_init(struct slotmap *m, u32 nr_slots);
void slotmap_exit(struct slotmap *m);
int slotmap_track(struct slotmap *m, u32 per);
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

static inline u64 sme_loc(sme_t e)
{
	return e >> SME_LOC_SHIFT;
}

static inline sme_t sme_make(enum n2l_medium m, u64 loc, unsigned int flags)
{
	return (loc << SME_LOC_SHIFT) |
	       (((sme_t)flags & SME_FLAGS_MASK) << SME_FLAGS_SHIFT) |
	       ((sme_t)m & SME_MEDIUM_MASK);
}

static inline sme_t sme_set_flags(sme_t e, unsigned int flags)
{
	return sme_make(sme_medium(e), sme_loc(e), flags);
}

/* The block of a slot on a block medium. */
static inline u32 sme_blk(sme_t e)
{
	return (u32)sme_loc(e);
}

static inline u64 sme_netram_loc(unsigned int group, u64 vers)
{
	return (vers << SME_GROUP_BITS) | group;
}

static inline unsigned int sme_group(sme_t e)
{
	return sme_loc(e) & (SME_GROUPS - 1);
}

static inline u64 sme_vers(sme_t e)
{
	return sme_loc(e) >> SME_GROUP_BITS;
}

/* Whether @e is on Network RAM at (@group, @vers). */
static inline bool sme_at(sme_t e, unsigned int group, u64 vers)
{
	return sme_medium(e) == N2L_NETRAM && sme_group(e) == group &&
	       sme_vers(e) == vers;
}

static inline bool sme_lost(sme_t e)
{
	return sme_medium(e) == N2L_NONE && (sme_flags(e) & SME_LOST);
}

static inline sme_t slotmap_get(const struct slotmap *m, n2l_slot_t s)
{
	return m->entries[from_slot(s)];
}

static inline void slotmap_set(struct slotmap *m, n2l_slot_t s, sme_t e)
{
	u32 i = from_slot(s);

	if (m->per && ((m->entries[i] ^ e) & SME_PERSISTENT)) {
		__set_bit(i / m->per, m->dirty[0]);
		__set_bit(i / m->per, m->dirty[1]);
	}
	m->entries[i] = e;
}

/* Runs of entries that dirty[a] has bits for. */
static inline u32 slotmap_runs(const struct slotmap *m)
{
	return DIV_ROUND_UP(m->nr_slots, m->per);
}

static inline size_t slotmap_bytes(u32 nr_slots)
{
	return (size_t)nr_slots * sizeof(sme_t);
}

#endif /* N2L_SLOTMAP_H */
