// SPDX-License-Identifier: GPL-2.0-only
/*
 * none: never prefetch. Slots stay on Network RAM until they are written
 * again elsewhere; the baseline every other policy is measured against.
 */
#include "n2l-policies.h"

static struct n2l_prefetch *none_create(u32 nr_slots)
{
	return n2l_zalloc(sizeof(struct n2l_prefetch));
}

static void none_destroy(struct n2l_prefetch *p)
{
	n2l_free(p);
}

static void none_on_write(struct n2l_prefetch *p, n2l_slot_t slot,
			  enum n2l_medium m)
{
}

static void none_on_free(struct n2l_prefetch *p, n2l_slot_t slot)
{
}

static u32 none_select(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n)
{
	return 0;
}

/* It asks for nothing: no target, no activation to count. */
static u64 none_plan(struct n2l_prefetch *p, const struct n2l_pf_view *v,
		     u64 *room)
{
	return 0;
}

struct n2l_prefetch_type n2l_prefetch_none = {
	.base = {
		.name = "none",
		.version = { 1, 0, 0 },
		.kind = N2L_POLICY_PREFETCH,
		.owner = THIS_MODULE,
	},
	.create = none_create,
	.destroy = none_destroy,
	.on_write = none_on_write,
	.on_free = none_on_free,
	.select = none_select,
	.plan = none_plan,
};
