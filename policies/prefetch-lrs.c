// SPDX-License-Identifier: GPL-2.0-only
/*
 * lrs: least recently swapped out: the Network RAM slots whose last swap-out
 * is oldest move first; they are the least likely to be read soon, so
 * moving them frees Network RAM for the next burst at the lowest cost.
 */
#include "age-list.h"
#include "n2l-policies.h"

static u32 lrs_select(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n)
{
	return age_policy_select(p, victims, n, true);
}

struct n2l_prefetch_type n2l_prefetch_lrs = {
	.base = {
		.name = "lrs",
		.version = { 1, 0, 0 },
		.kind = N2L_POLICY_PREFETCH,
		.owner = THIS_MODULE,
	},
	.create = age_policy_create,
	.destroy = age_policy_destroy,
	.on_write = age_policy_on_write,
	.on_free = age_policy_on_free,
	.select = lrs_select,
};
