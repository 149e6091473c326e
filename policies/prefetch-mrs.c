// SPDX-License-Identifier: GPL-2.0-only
/*
 * mrs: most recently swapped out: the newest Network RAM slots move first,
 * the choice that spreads the next swap-ins over Network RAM and Flash
 * when a workload reads back what it wrote last.
 */
#include "age-list.h"
#include "n2l-policies.h"

static u32 mrs_select(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n)
{
	return age_policy_select(p, victims, n, false);
}

struct n2l_prefetch_type n2l_prefetch_mrs = {
	.base = {
		.name = "mrs",
		.version = { 1, 0, 0 },
		.kind = N2L_POLICY_PREFETCH,
		.owner = THIS_MODULE,
	},
	.create = age_policy_create,
	.destroy = age_policy_destroy,
	.on_write = age_policy_on_write,
	.on_free = age_policy_on_free,
	.select = mrs_select,
};
