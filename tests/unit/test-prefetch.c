// SPDX-License-Identifier: GPL-2.0-only
/*
 * Prefetch policies: each one's bookkeeping and selection, and a model
 * check of all of them against random event sequences.
 */
#include <string.h>
#include "n2l-policies.h"
#include "unit.h"

#define NSLOTS	64

static struct n2l_prefetch *mk(struct n2l_prefetch_type *t, u32 nr_slots)
{
	struct n2l_prefetch *p = t->create(nr_slots);

	p->type = t;
	return p;
}

static void write_to(struct n2l_prefetch *p, u32 slot, enum n2l_medium m)
{
	p->type->on_write(p, to_slot(slot), m);
}

/* Select up to n into out[] as plain numbers. */
static u32 pick(struct n2l_prefetch *p, u32 *out, u32 n)
{
	n2l_slot_t v[NSLOTS];
	u32 i, got = p->type->select(p, v, n);

	for (i = 0; i < got; i++)
		out[i] = from_slot(v[i]);
	return got;
}

TEST(prefetch_lrs_takes_oldest_swap_outs_first)
{
	struct n2l_prefetch *p = mk(&n2l_prefetch_lrs, NSLOTS);
	u32 v[NSLOTS];

	write_to(p, 7, N2L_NETRAM);
	write_to(p, 3, N2L_NETRAM);
	write_to(p, 9, N2L_NETRAM);
	write_to(p, 5, N2L_FLASH);		/* not a candidate */
	CHECK_EQ(pick(p, v, 2), 2);
	CHECK_EQ(v[0], 7);
	CHECK_EQ(v[1], 3);
	/* selecting removes nothing; a new swap-out makes a slot newest */
	write_to(p, 7, N2L_NETRAM);
	CHECK_EQ(pick(p, v, 8), 3);
	CHECK(v[0] == 3 && v[1] == 9 && v[2] == 7);
	/* written elsewhere, or freed: no longer a candidate */
	write_to(p, 3, N2L_DISK);
	p->type->on_free(p, to_slot(9));
	p->type->on_free(p, to_slot(9));	/* twice is harmless */
	CHECK_EQ(pick(p, v, 8), 1);
	CHECK_EQ(v[0], 7);
	p->type->destroy(p);
}

TEST(prefetch_mrs_takes_newest_swap_outs_first)
{
	struct n2l_prefetch *p = mk(&n2l_prefetch_mrs, NSLOTS);
	u32 v[NSLOTS];

	write_to(p, 1, N2L_NETRAM);
	write_to(p, 2, N2L_NETRAM);
	write_to(p, 63, N2L_NETRAM);
	CHECK_EQ(pick(p, v, 2), 2);
	CHECK(v[0] == 63 && v[1] == 2);
	write_to(p, 1, N2L_NETRAM);
	CHECK_EQ(pick(p, v, 1), 1);
	CHECK_EQ(v[0], 1);
	p->type->destroy(p);
}

TEST(prefetch_rr_sweeps_slots_in_order_and_wraps)
{
	struct n2l_prefetch *p = mk(&n2l_prefetch_rr, NSLOTS);
	u32 v[NSLOTS];

	write_to(p, 40, N2L_NETRAM);
	write_to(p, 2, N2L_NETRAM);
	write_to(p, 63, N2L_NETRAM);
	write_to(p, 17, N2L_NETRAM);
	CHECK_EQ(pick(p, v, 2), 2);
	CHECK(v[0] == 2 && v[1] == 17);
	/* the cursor goes on from there, and wraps */
	CHECK_EQ(pick(p, v, 3), 3);
	CHECK(v[0] == 40 && v[1] == 63 && v[2] == 2);
	/* never more than one sweep, even when asked for more */
	CHECK_EQ(pick(p, v, 10), 4);
	CHECK(v[0] == 17 && v[1] == 40 && v[2] == 63 && v[3] == 2);
	p->type->on_free(p, to_slot(40));
	write_to(p, 63, N2L_FLASH);
	CHECK_EQ(pick(p, v, 10), 2);
	p->type->destroy(p);
}

TEST(prefetch_random_draws_distinct_candidates_uniformly)
{
	struct n2l_prefetch *p = mk(&n2l_prefetch_random, NSLOTS);
	unsigned int hits[NSLOTS] = { 0 }, round, i;
	u32 v[NSLOTS];

	n2l_random_seed(42);
	for (i = 0; i < 16; i++)
		write_to(p, i * 4, N2L_NETRAM);
	for (round = 0; round < 4000; round++) {
		u32 got = pick(p, v, 4), seen = 0;

		CHECK_EQ(got, 4);
		for (i = 0; i < got; i++) {
			CHECK(v[i] % 4 == 0 && v[i] < NSLOTS);
			CHECK(!(seen & (1U << (v[i] / 4))));
			seen |= 1U << (v[i] / 4);
			hits[v[i]]++;
		}
	}
	/* 1000 expected for each of the 16; far off means a biased draw */
	for (i = 0; i < 16; i++)
		CHECK(hits[i * 4] > 850 && hits[i * 4] < 1150);
	p->type->on_free(p, to_slot(0));
	write_to(p, 4, N2L_DISK);
	CHECK_EQ(pick(p, v, 64), 14);
	p->type->destroy(p);
}

TEST(prefetch_none_never_selects)
{
	struct n2l_prefetch *p = mk(&n2l_prefetch_none, NSLOTS);
	u32 v[NSLOTS];

	write_to(p, 1, N2L_NETRAM);
	CHECK_EQ(pick(p, v, 8), 0);
	p->type->destroy(p);
}

/*----------------------------------------------------------------*/
/* auto: its plan from hand-made measures, and the ends it selects from. */

/*
 * A device of 1000 slots, 500 on Network RAM with 10 free, plenty of
 * Flash; the CPUs idle, waiting on its reads.
 */
static struct n2l_pf_view auto_view(void)
{
	struct n2l_pf_view v = {
		.swapouts = 100, .knob_amount = 10, .slots = 1000,
		.held = { [N2L_NETRAM] = 500 },
		.free = { [N2L_NETRAM] = 10, [N2L_FLASH] = 5000 },
		.cpu_idle_pm = 1000,
	};

	return v;
}

/* Mean read latencies over 100 reads each, and reads in flight. */
static void auto_reads(struct n2l_pf_view *v, u64 net_us, u64 flash_us,
		       u32 qnet, u32 qflash)
{
	v->reads[N2L_NETRAM] = v->reads[N2L_FLASH] = 100;
	v->read_us[N2L_NETRAM] = 100 * net_us;
	v->read_us[N2L_FLASH] = 100 * flash_us;
	v->reads_inflight[N2L_NETRAM] = qnet;
	v->reads_inflight[N2L_FLASH] = qflash;
}

/* No room to make; Network RAM ten times Flash's latency, and queueing. */
static struct n2l_pf_view auto_speed_view(void)
{
	struct n2l_pf_view v = auto_view();

	v.free[N2L_NETRAM] = 900;
	v.knob_amount = 1000;
	auto_reads(&v, 2000, 200, 8, 1);
	return v;
}

/* What the last plan() asked for to make room on Network RAM. */
static u64 room_asked;

static u64 plan(struct n2l_prefetch *p, const struct n2l_pf_view *v)
{
	return p->type->plan(p, v, &room_asked);
}

static struct n2l_prefetch *auto_with_slots(void)
{
	struct n2l_prefetch *p = mk(&n2l_prefetch_auto, NSLOTS);
	u32 i;

	for (i = 0; i < 40; i++)
		write_to(p, i, N2L_NETRAM);
	return p;
}

TEST(prefetch_auto_makes_room_oldest_first_when_network_ram_runs_short)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_view();
	u32 got[NSLOTS];

	/* 4 runs of 100 swap-outs wanted free, 10 are: the knobs' 10 move */
	CHECK_EQ(plan(p, &v), 10);
	CHECK_EQ(room_asked, 10);
	CHECK_EQ(pick(p, got, 4), 4);
	CHECK(got[0] == 0 && got[3] == 3);
	/* what did not move is made up for from the oldest end too */
	CHECK_EQ(pick(p, got, 20), 6);
	CHECK_EQ(pick(p, got, 1), 1);
	CHECK_EQ(got[0], 0);
	/* room for 4 runs: nothing moves */
	v.free[N2L_NETRAM] = 400;
	CHECK_EQ(plan(p, &v), 0);
	/* nor with room for every slot Network RAM does not hold yet */
	v.free[N2L_NETRAM] = 10;
	v.held[N2L_NETRAM] = 995;
	CHECK_EQ(plan(p, &v), 0);
	p->type->destroy(p);
}

/*
 * A slot moved for room costs a Network RAM read; the swap-out kept on
 * Network RAM saves the difference of the read latencies on each read it
 * gets, and the moved slot loses as much on each of its own. auto_view()'s
 * 100 swap-outs and auto_reads()' 200 reads: a swap-out is read twice.
 */
TEST(prefetch_auto_makes_room_only_where_a_swap_out_kept_saves_more_than_its_move_costs)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_view();

	auto_reads(&v, 200, 600, 0, 0);	/* 2 * 400 us saved > 200 us */
	CHECK_EQ(plan(p, &v), 10);
	CHECK_EQ(room_asked, 10);
	auto_reads(&v, 200, 300, 0, 0);	/* 2 * 100 us: no more than 200 */
	CHECK_EQ(plan(p, &v), 0);
	CHECK_EQ(room_asked, 0);
	auto_reads(&v, 200, 216, 0, 0);	/* Flash 8% slower, as the paper's */
	CHECK_EQ(plan(p, &v), 0);
	v.swapouts = 10;		/* 20 reads a swap-out: 20 * 16 us */
	CHECK_EQ(plan(p, &v), 10);
	/* the moved slots read back as often as the swap-outs: no gain */
	v.prefetched = 10;
	v.prefetch_reads = 200;
	CHECK_EQ(plan(p, &v), 0);
	p->type->destroy(p);
}

/*
 * Room is made before Flash was read (nothing to go by), and not as if
 * nothing were known when an interval reads too little to measure: a
 * medium's latency is its mean over the last 16 reads or more, however
 * many intervals they took.
 */
TEST(prefetch_auto_judges_room_by_latencies_measured_over_several_intervals)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_view();

	auto_reads(&v, 200, 216, 0, 0);
	v.reads[N2L_FLASH] = 0;		/* Flash not read yet */
	v.read_us[N2L_FLASH] = 0;
	CHECK_EQ(plan(p, &v), 10);
	v.reads[N2L_FLASH] = 8;		/* 8 reads: not yet */
	v.read_us[N2L_FLASH] = 8 * 216;
	CHECK_EQ(plan(p, &v), 10);
	CHECK_EQ(plan(p, &v), 0);	/* 16 of 216 us: known */
	v.reads[N2L_NETRAM] = v.reads[N2L_FLASH] = 2;
	v.read_us[N2L_NETRAM] = 2 * 200;
	v.read_us[N2L_FLASH] = 2 * 216;
	CHECK_EQ(plan(p, &v), 0);	/* a quiet interval: still known */
	p->type->destroy(p);
}

/*
 * Room kept on Network RAM pays as latency does: swap-outs that would
 * have gone to a slower Flash are read back sooner, which shortens the
 * run only while the CPUs wait, and not at all when Flash is the faster.
 */
TEST(prefetch_auto_makes_room_only_while_the_cpus_wait_and_flash_is_slower)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_view();

	auto_reads(&v, 200, 600, 0, 0);
	CHECK_EQ(plan(p, &v), 10);
	CHECK_EQ(room_asked, 10);
	v.cpu_idle_pm = 500;		/* 2 * 400 us * 0.5 > 200 us */
	CHECK_EQ(plan(p, &v), 10);
	v.cpu_idle_pm = 200;		/* 2 * 400 us * 0.2 < 200 us */
	CHECK_EQ(plan(p, &v), 0);
	v.cpu_idle_pm = 99;		/* busy 90.1% */
	CHECK_EQ(plan(p, &v), 0);
	CHECK_EQ(room_asked, 0);
	p->type->destroy(p);
	p = auto_with_slots();
	v = auto_view();
	auto_reads(&v, 210, 200, 0, 0);	/* Flash faster, within 10% */
	CHECK_EQ(plan(p, &v), 0);
	CHECK_EQ(room_asked, 0);
	auto_reads(&v, 300, 200, 0, 2);	/* faster, queueing: no speed either */
	CHECK_EQ(plan(p, &v), 0);
	CHECK_EQ(room_asked, 0);
	/*
	 * Flash the faster by enough that 3 reads a moved slot save more
	 * (3 * 400 us) than its move costs (600 + 200 us): speed, no room.
	 */
	v.knob_amount = 40;
	v.prefetched = 10;
	v.prefetch_reads = 30;
	auto_reads(&v, 600, 200, 0, 0);
	CHECK_EQ(plan(p, &v), 40);
	CHECK_EQ(room_asked, 0);
	p->type->destroy(p);
}

TEST(prefetch_auto_spreads_reads_newest_first_when_flash_is_faster)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_view();
	u32 got[NSLOTS];

	v.free[N2L_NETRAM] = 900;	/* no room to make */
	auto_reads(&v, 220, 200, 8, 1);
	CHECK_EQ(plan(p, &v), 0);	/* within 10%: no faster */
	auto_reads(&v, 230, 200, 8, 1);
	CHECK_EQ(plan(p, &v), 10);
	CHECK_EQ(pick(p, got, 3), 3);
	CHECK(got[0] == 39 && got[2] == 37);
	auto_reads(&v, 400, 200, 2, 3);		/* Flash's queue the deeper */
	CHECK_EQ(plan(p, &v), 0);
	/* no Flash reads to compare with: a probe while Network RAM queues */
	auto_reads(&v, 400, 0, 4, 0);
	v.reads[N2L_FLASH] = 0;
	v.knob_amount = 1000;
	CHECK_EQ(plan(p, &v), 64);
	v.reads_inflight[N2L_NETRAM] = 3;
	CHECK_EQ(plan(p, &v), 0);
	p->type->destroy(p);
}

/*
 * Moving a slot for speed costs a Network RAM read and a Flash write, at
 * least a read of each; it saves the difference of their read latencies
 * on each later read of it. auto first moves a probe to learn how often
 * what it moves is read, and then moves only while that pays.
 */
TEST(prefetch_auto_moves_for_speed_only_while_the_moved_slots_reads_pay_for_it)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_speed_view();

	CHECK_EQ(plan(p, &v), 64);	/* nothing moved yet: a probe */
	v.prefetched = 64;
	v.prefetch_reads = 6;	/* 0.1 a slot: saves 180 us, costs 2200 */
	CHECK_EQ(plan(p, &v), 0);
	v.prefetched = 0;
	v.prefetch_reads = 40;	/* 46 reads of 64 moved: 0.7 */
	CHECK_EQ(plan(p, &v), 0);
	/* 86 of 64: 1.34 reads a slot save more than 2200 / 1800 us */
	CHECK_EQ(plan(p, &v), 1000);
	/* slots that are read a lot pay for a smaller difference too */
	auto_reads(&v, 300, 200, 8, 1);
	CHECK_EQ(plan(p, &v), 0);	/* 126 of 64: 1.97, not 5 */
	v.prefetch_reads = 200;
	CHECK_EQ(plan(p, &v), 1000);	/* 326 of 64: 5.1 */
	p->type->destroy(p);
}

/*
 * A read's saved latency shortens the run only while the CPUs would
 * otherwise have waited for it: with them busy, a read waits while other
 * work runs, and a move only adds work. auto weighs what a read saves by
 * the share of CPU time spent idle or waiting on I/O.
 */
TEST(prefetch_auto_weighs_what_a_read_saves_by_the_cpus_idle_time)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_speed_view();

	CHECK_EQ(plan(p, &v), 64);
	v.prefetched = 64;
	v.prefetch_reads = 200;	/* 3.1 reads a slot, 5625 us saved in all */
	v.cpu_idle_pm = 300;	/* of which 1687 shorten the run: not 2200 */
	CHECK_EQ(plan(p, &v), 0);
	v.prefetched = 0;
	v.prefetch_reads = 0;
	v.cpu_idle_pm = 500;	/* 2812 do */
	CHECK_EQ(plan(p, &v), 1000);
	v.cpu_idle_pm = 90;	/* what it measured, but the CPUs are busy */
	CHECK_EQ(plan(p, &v), 0);
	p->type->destroy(p);

	p = auto_with_slots();
	v = auto_speed_view();
	v.cpu_idle_pm = 50;	/* busy 95%: not even a probe */
	CHECK_EQ(plan(p, &v), 0);
	p->type->destroy(p);
}

/*
 * A run that keeps the CPUs busy has spells of waiting (a burst of reads
 * behind a server); they do not make a move's CPU time free. auto counts
 * on idle time once it lasts (the lesser of its running average over
 * about 16 activations and the last interval's): a spell of one interval
 * never counts, however idle, two do; busy again, it stops at once.
 */
TEST(prefetch_auto_does_not_count_on_idle_spells_in_a_busy_run)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_view();
	u32 i;

	auto_reads(&v, 200, 1000, 0, 0);	/* room pays down to 12.5% idle */
	v.cpu_idle_pm = 20;
	for (i = 0; i < 8; i++)
		CHECK_EQ(plan(p, &v), 0);
	v.cpu_idle_pm = 1000;		/* a spell: the average is 81 */
	CHECK_EQ(plan(p, &v), 0);
	CHECK_EQ(plan(p, &v), 10);	/* it lasts: 138 */
	v.cpu_idle_pm = 50;		/* busy again */
	CHECK_EQ(plan(p, &v), 0);
	p->type->destroy(p);
}

/* What it learnt holds back the speed rule for a while, then it probes anew. */
TEST(prefetch_auto_probes_again_after_holding_back_for_a_while)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_speed_view();
	u32 i;

	CHECK_EQ(plan(p, &v), 64);
	v.prefetched = 64;
	for (i = 1; i < 64; i++) {	/* AUTO_REPROBE activations */
		CHECK_EQ(plan(p, &v), 0);
		v.prefetched = 0;
	}
	CHECK_EQ(plan(p, &v), 64);
	p->type->destroy(p);
}

TEST(prefetch_auto_plans_no_more_than_half_the_free_flash)
{
	struct n2l_prefetch *p = auto_with_slots();
	struct n2l_pf_view v = auto_view();

	auto_reads(&v, 400, 200, 8, 0);
	v.free[N2L_FLASH] = 14;
	CHECK_EQ(plan(p, &v), 7);
	v.free[N2L_FLASH] = 0;
	CHECK_EQ(plan(p, &v), 0);
	p->type->destroy(p);
}

/*----------------------------------------------------------------*/

/* The reference: which slots are candidates, and when each became one. */
struct model {
	bool cand[NSLOTS];
	u64 age[NSLOTS];
	u64 clock;
};

static void model_event(struct model *m, struct n2l_prefetch *p, u32 r)
{
	u32 slot = r % NSLOTS, what = (r / NSLOTS) % 4;

	if (what == 3) {
		p->type->on_free(p, to_slot(slot));
		m->cand[slot] = false;
		return;
	}
	/* netram twice as often as flash or disk */
	write_to(p, slot, what < 2 ? N2L_NETRAM : N2L_FLASH);
	m->cand[slot] = what < 2;
	m->age[slot] = ++m->clock;
}

static u32 model_count(const struct model *m)
{
	u32 i, n = 0;

	for (i = 0; i < NSLOTS; i++)
		n += m->cand[i];
	return n;
}

/* The candidate of rank @k by age (0: oldest) */
static bool model_rank_ok(const struct model *m, u32 slot, u32 k, bool oldest)
{
	u32 i, before = 0;

	for (i = 0; i < NSLOTS; i++)
		if (m->cand[i] && (oldest ? m->age[i] < m->age[slot] :
					    m->age[i] > m->age[slot]))
			before++;
	return before == k;
}

static void check_selection(struct n2l_prefetch *p, const struct model *m,
			    u32 n)
{
	/* auto with no plan made takes the oldest, as lrs */
	bool lrs = p->type == &n2l_prefetch_lrs || p->type == &n2l_prefetch_auto;
	bool mrs = p->type == &n2l_prefetch_mrs;
	u32 v[NSLOTS], i, got = pick(p, v, n), seen[NSLOTS] = { 0 };
	u32 want = min(n, model_count(m));

	if (p->type == &n2l_prefetch_none)
		want = 0;
	CHECK_EQ(got, want);
	for (i = 0; i < got; i++) {
		CHECK(v[i] < NSLOTS && m->cand[v[i]]);
		CHECK(!seen[v[i]]++);
		if (lrs || mrs)
			CHECK(model_rank_ok(m, v[i], i, lrs));
	}
}

TEST(prefetch_every_policy_matches_the_model)
{
	struct n2l_prefetch_type *types[] = {
		&n2l_prefetch_none, &n2l_prefetch_rr, &n2l_prefetch_random,
		&n2l_prefetch_lrs, &n2l_prefetch_mrs, &n2l_prefetch_auto,
	};
	unsigned int t, step;

	for (t = 0; t < ARRAY_SIZE(types); t++) {
		struct n2l_prefetch *p = mk(types[t], NSLOTS);
		struct model m;

		memset(&m, 0, sizeof(m));
		n2l_random_seed(7 + t);
		for (step = 0; step < 20000; step++) {
			model_event(&m, p, n2l_random_u32());
			if (step % 97 == 0)
				check_selection(p, &m, 1 + step % 13);
		}
		check_selection(p, &m, NSLOTS);
		p->type->destroy(p);
	}
}
