// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the engine tells a policy and asks of it, seen by a spy: lrs's own
 * code, with every call counted.
 */
#include "age-list.h"
#include "sim-test.h"

static struct {
	u32 writes, reads, frees, selects, most_asked;
} spy;

static void spy_on_write(struct n2l_prefetch *p, n2l_slot_t slot,
			 enum n2l_medium m)
{
	spy.writes++;
	age_policy_on_write(p, slot, m);
}

static void spy_on_read(struct n2l_prefetch *p, n2l_slot_t slot,
			enum n2l_medium m)
{
	spy.reads++;
}

static void spy_on_free(struct n2l_prefetch *p, n2l_slot_t slot)
{
	spy.frees++;
	age_policy_on_free(p, slot);
}

static u32 spy_select(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n)
{
	spy.selects++;
	spy.most_asked = max(spy.most_asked, n);
	return age_policy_select(p, victims, n, true);
}

static struct n2l_prefetch_type spy_policy = {
	.base = { .name = "spy", .kind = N2L_POLICY_PREFETCH },
	.create = age_policy_create,
	.destroy = age_policy_destroy,
	.on_write = spy_on_write,
	.on_read = spy_on_read,
	.on_free = spy_on_free,
	.select = spy_select,
};

static void open_spy(struct sim_model *m, u32 nr_slots)
{
	struct sim_config cfg = {
		.nr_slots = nr_slots,
		.cap = { 0, nr_slots, SIM_UNLIMITED, SIM_UNLIMITED },
		.knobs = { .interval_ms = 1000, .amount = 100000,
			   .amount_mode = SIM_AMOUNT_FIXED },
	};

	memset(&spy, 0, sizeof(spy));
	CHECK_EQ(sim_model_init(m, &cfg, &spy_policy), 0);
}

/*
 * 600 slots to move: the engine asks 256, 256, 88, and stops there with
 * its target moved. Each slot is written once and leaves the policy once
 * (on_free, when it is selected); reads are told; a free of mapped slots
 * is told, of unmapped ones not.
 */
TEST(engine_asks_in_batches_and_tells_every_event)
{
	struct sim_model m;

	open_spy(&m, 700);
	sim_write(&m, 0, 600);
	CHECK_EQ(spy.writes, 600);
	sim_mig_tick(&m);
	CHECK_EQ(m.c.prefetched, 600);
	CHECK_EQ(spy.most_asked, SIM_MIG_BATCH);
	CHECK_EQ(spy.selects, 3);
	CHECK_EQ(spy.frees, 600);
	CHECK_EQ(m.c.target, 600);
	CHECK_EQ(m.c.activations, 1);
	sim_read(&m, 590, 20);		/* 10 mapped, 10 zero reads */
	CHECK_EQ(spy.reads, 10);
	CHECK_EQ(m.c.reads[N2L_NONE], 10);
	sim_free(&m, 595, 10);
	CHECK_EQ(spy.frees, 605);
	sim_model_exit(&m);
}

/*
 * A candidate that is not on Network RAM any more (the policy is out of
 * step) is not moved: the policy hears where it is, and the engine asks
 * for another in its place, as mig_select() and mig_round() do.
 */
TEST(engine_puts_an_out_of_step_policy_right)
{
	struct sim_model m;

	open_spy(&m, 8);
	m.knobs.amount = 2;
	sim_write(&m, 0, 4);
	sim_remap(&m, 0, N2L_DISK, 0, false);	/* behind the policy's back */
	sim_mig_tick(&m);
	CHECK_EQ(spy.writes, 4 + 1);
	CHECK_EQ(m.c.prefetched, 2);
	CHECK_EQ(m.c.target, 2);
	CHECK_EQ(m.map[0].medium, N2L_DISK);
	CHECK_EQ(m.map[1].medium, N2L_FLASH);
	CHECK_EQ(m.map[2].medium, N2L_FLASH);
	CHECK_EQ(m.map[3].medium, N2L_NETRAM);
	sim_model_exit(&m);
}
