// SPDX-License-Identifier: GPL-2.0-only
/*
 * How much Network RAM the traced device had: the most slots the trace
 * itself shows there at once, replaying the media it recorded (writes
 * where they went, frees, and the kernel's own migrations). This is the
 * simulated Network RAM's default capacity, so that a replay with the
 * recorded settings starts from what the real device could hold.
 *
 * A migrate event says how many of its run moved, not which: the first
 * slots of the run still on the source medium are taken to be those.
 */
#include <errno.h>

#include "sim.h"

struct peak {
	u8 *medium;		/* per slot, as recorded */
	u32 held, most;
};

static void set_medium(struct peak *pk, u32 slot, u8 m)
{
	pk->held -= pk->medium[slot] == N2L_NETRAM;
	pk->medium[slot] = m;
	pk->held += m == N2L_NETRAM;
	pk->most = max(pk->most, pk->held);
}

static void apply(struct peak *pk, const struct sim_event *ev)
{
	u32 i, moved = ev->moved;

	for (i = 0; i < ev->nr; i++) {
		switch (ev->type) {
		case SIM_EV_WRITE:
			set_medium(pk, ev->slot + i, ev->medium);
			break;
		case SIM_EV_FREE:
			set_medium(pk, ev->slot + i, N2L_NONE);
			break;
		case SIM_EV_MIGRATE:
			if (moved && pk->medium[ev->slot + i] == ev->from) {
				set_medium(pk, ev->slot + i, ev->to);
				moved--;
			}
			break;
		default:
			return;
		}
	}
}

int sim_trace_netram_peak(const struct sim_trace *t, u32 nr_slots, u32 *peak)
{
	struct peak pk = { .medium = calloc(max(nr_slots, 1U), 1) };
	size_t i;

	if (!pk.medium)
		return -ENOMEM;
	for (i = 0; i < t->nr; i++)
		apply(&pk, &t->ev[i]);
	free(pk.medium);
	*peak = pk.most;
	return 0;
}
