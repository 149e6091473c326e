// SPDX-License-Identifier: GPL-2.0-only
/* Registers the policies built into nswap2l.ko; adding one is one line. */
#include "n2l-policies.h"

static struct n2l_policy_type *const builtin[] = {
	&n2l_placement_netram_first.base,
	&n2l_prefetch_none.base,
	&n2l_prefetch_rr.base,
	&n2l_prefetch_random.base,
	&n2l_prefetch_lrs.base,
	&n2l_prefetch_mrs.base,
	&n2l_prefetch_auto.base,
};

void n2l_builtin_policies_unregister(void)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(builtin); i++)
		n2l_policy_unregister(builtin[i]);
}

int n2l_builtin_policies_register(void)
{
	unsigned int i;
	int r;

	for (i = 0; i < ARRAY_SIZE(builtin); i++) {
		r = n2l_policy_register(builtin[i]);
		if (r) {
			while (i--)
				n2l_policy_unregister(builtin[i]);
			return r;
		}
	}
	return 0;
}
