// SPDX-License-Identifier: GPL-2.0-only
/* What the table and the JSON report share. */
#include "sim.h"

const char *const sim_amount_modes[] = {
	[SIM_AMOUNT_SWAPOUTS] = "swapouts",
	[SIM_AMOUNT_FIXED] = "fixed",
	[SIM_AMOUNT_NETRAM] = "netram",
};

/* Slot reads that a medium served: zero reads are not among them. */
u64 sim_served(const struct sim_result *r)
{
	return r->c.reads[N2L_NETRAM] + r->c.reads[N2L_FLASH] +
	       r->c.reads[N2L_DISK];
}

double sim_pct(u64 n, u64 total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}
