// SPDX-License-Identifier: GPL-2.0-only
/*
 * rr: round robin. A cursor sweeps the device's slots in order and takes
 * the next ones on Network RAM, wrapping at the end, so that every
 * Network RAM slot is visited once per sweep whatever its age. The
 * candidates are one bit per slot.
 */
#include "n2l-policies.h"

struct rr_policy {
	struct n2l_prefetch base;
	unsigned long *on_netram;
	u32 nr_slots;
	u32 cursor;		/* where the next selection starts */
};

static struct rr_policy *to_rr(struct n2l_prefetch *p)
{
	return container_of(p, struct rr_policy, base);
}

static void rr_destroy(struct n2l_prefetch *p)
{
	struct rr_policy *rr = to_rr(p);

	n2l_free(rr->on_netram);
	n2l_free(rr);
}

static struct n2l_prefetch *rr_create(u32 nr_slots)
{
	struct rr_policy *rr = n2l_zalloc(sizeof(*rr));

	if (!rr)
		return NULL;
	rr->nr_slots = nr_slots;
	rr->on_netram = n2l_zalloc(n2l_bitmap_bytes(nr_slots));
	if (!rr->on_netram) {
		rr_destroy(&rr->base);
		return NULL;
	}
	return &rr->base;
}

static void rr_on_write(struct n2l_prefetch *p, n2l_slot_t slot,
			enum n2l_medium m)
{
	struct rr_policy *rr = to_rr(p);

	if (m == N2L_NETRAM)
		__set_bit(from_slot(slot), rr->on_netram);
	else
		__clear_bit(from_slot(slot), rr->on_netram);
}

static void rr_on_free(struct n2l_prefetch *p, n2l_slot_t slot)
{
	__clear_bit(from_slot(slot), to_rr(p)->on_netram);
}

/* At most one sweep: the cursor comes back to where it started. */
static u32 rr_select(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n)
{
	struct rr_policy *rr = to_rr(p);
	u32 got = 0, start = rr->cursor, s = start;
	bool wrapped = false;

	while (got < n) {
		s = find_next_bit(rr->on_netram, wrapped ? start : rr->nr_slots, s);
		if (s >= (wrapped ? start : rr->nr_slots)) {
			if (wrapped)
				break;
			wrapped = true;
			s = 0;
			continue;
		}
		victims[got++] = to_slot(s++);
	}
	rr->cursor = s < rr->nr_slots ? s : 0;
	return got;
}

struct n2l_prefetch_type n2l_prefetch_rr = {
	.base = {
		.name = "rr",
		.version = { 1, 0, 0 },
		.kind = N2L_POLICY_PREFETCH,
		.owner = THIS_MODULE,
	},
	.create = rr_create,
	.destroy = rr_destroy,
	.on_write = rr_on_write,
	.on_free = rr_on_free,
	.select = rr_select,
};
