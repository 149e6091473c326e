// SPDX-License-Identifier: GPL-2.0-only
/*
 * Whole traces: malformed lines counted, the device chosen, the slots and
 * the Network RAM peak the model is sized by.
 */
#include "sim-test.h"

static const char two_devices[] =
	"# tracer: nop\n"
	"  a-1 [000] ..... 1.0: nswap2l_write: dev=254:1 slot=0 nr=2 medium=netram\n"
	"  a-1 [000] ..... 1.1: nswap2l_write: dev=254:0 slot=10 nr=6 medium=netram\n"
	"  a-1 [000] ..... 1.2: nswap2l_write: dev=254:1 slot=2 nr=1 medium=netram\n"
	"  a-1 [000] ..... 1.3: nswap2l_write: dev=254:1 slot=X nr=1 medium=netram\n"
	"  a-1 [000] ..... 1.4: nswap2l_read: dev=254:0 slot=10 nr=1 medium=netram\n"
	"garbage \x01\x02\xff nswap2l_free\n"
	"  a-1 [000] ..... 1.5: sched_switch: prev_comm=a\n";

TEST(load_counts_and_keeps_the_first_device)
{
	struct sim_trace t = load_text(two_devices);

	CHECK_EQ(t.lines, 8);
	CHECK_EQ(t.malformed, 2);
	CHECK_EQ(t.devices, 2);
	CHECK_EQ(t.dev.major, 254);
	CHECK_EQ(t.dev.minor, 1);
	CHECK_EQ(t.nr, 2);
	CHECK_EQ(t.ev[1].slot, 2);
	CHECK_EQ(sim_trace_nr_slots(&t), 3);
	sim_trace_free(&t);
}

TEST(load_keeps_the_device_asked_for)
{
	struct sim_trace t = load_text(two_devices);
	struct sim_dev want = { 254, 0 };
	FILE *f = fmemopen((void *)two_devices, strlen(two_devices), "r");

	sim_trace_free(&t);
	CHECK_EQ(sim_trace_read(&t, f, "test"), 0);
	fclose(f);
	sim_trace_select(&t, &want);
	CHECK_EQ(t.nr, 2);
	CHECK_EQ(t.ev[0].type, SIM_EV_WRITE);
	CHECK_EQ(t.ev[1].type, SIM_EV_READ);
	CHECK_EQ(sim_trace_nr_slots(&t), 16);
	want.minor = 9;
	sim_trace_select(&t, &want);
	CHECK_EQ(t.nr, 0);
	sim_trace_free(&t);
}

/*
 * On Network RAM: 6, then 4 after a free of 2, 7 after 3 more, 4 after
 * the kernel moved 3 of a run of 5 (slots 5, 8 and 9: 6 and 7 were on
 * Flash already), 8 after 4 more: the peak is 8. Ignoring the migration
 * would make it 11; moving slots 5 to 7 would make it 10.
 */
TEST(load_netram_peak_follows_the_recorded_media)
{
	struct sim_trace t = load_text(
		"x-1 [0] 1.0: nswap2l_write: dev=1:0 slot=0 nr=6 medium=netram\n"
		"x-1 [0] 1.1: nswap2l_free: dev=1:0 slot=0 nr=2 medium=none\n"
		"x-1 [0] 1.2: nswap2l_write: dev=1:0 slot=6 nr=2 medium=flash\n"
		"x-1 [0] 1.3: nswap2l_write: dev=1:0 slot=8 nr=3 medium=netram\n"
		"x-1 [0] 1.4: nswap2l_read: dev=1:0 slot=0 nr=11 medium=netram\n"
		"x-1 [0] 1.5: nswap2l_migrate: dev=1:0 slot=5 nr=5 moved=3 from=netram to=flash\n"
		"x-1 [0] 1.6: nswap2l_write: dev=1:0 slot=20 nr=4 medium=netram\n");
	u32 peak = 0;

	CHECK_EQ(t.nr, 7);
	CHECK_EQ(sim_trace_netram_peak(&t, 24, &peak), 0);
	CHECK_EQ(peak, 8);
	sim_trace_free(&t);
}
