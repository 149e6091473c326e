// SPDX-License-Identifier: GPL-2.0-only
/*
 * netram-first: the Nswap2L default. A write goes to the fastest medium
 * with room: Network RAM, then Flash, then disk. A slot is rewritten where
 * it already is when nothing faster has room, so that an overwrite never
 * needs a free block and never fails for lack of one.
 */
#include "n2l-policy.h"
#include "n2l-policies.h"

static const enum n2l_medium netram_first_order[] = {
	N2L_NETRAM, N2L_FLASH, N2L_DISK
};

static enum n2l_medium netram_first_place(struct n2l_placement *p,
					  const struct n2l_place_ctx *ctx)
{
	unsigned int i;
	enum n2l_medium m;

	for (i = 0; i < ARRAY_SIZE(netram_first_order); i++) {
		m = netram_first_order[i];
		if (m == ctx->now || ctx->free[m])
			return m;
	}
	return N2L_NONE;
}

static struct n2l_placement *netram_first_create(void)
{
	return n2l_zalloc(sizeof(struct n2l_placement));
}

static void netram_first_destroy(struct n2l_placement *p)
{
	n2l_free(p);
}

struct n2l_placement_type n2l_placement_netram_first = {
	.base = {
		.name = "netram-first",
		.version = { 1, 0, 0 },
		.kind = N2L_POLICY_PLACEMENT,
		.owner = THIS_MODULE,
	},
	.create = netram_first_create,
	.destroy = netram_first_destroy,
	.place = netram_first_place,
};
