// SPDX-License-Identifier: GPL-2.0-only
/*
 * auto: decides when, how many and which slots move, from what the engine
 * measured since its last activation. Prefetching pays in two ways, and
 * auto moves slots only for them:
 *
 *  - room: the next burst of swap-outs finds Network RAM full and goes to
 *    the slower Flash. When Network RAM's free slots are fewer than
 *    AUTO_HEADROOM activations' worth of swap-outs (at the larger of the
 *    last interval's and the running average), and fewer than the slots
 *    of the device it does not hold yet, and room pays, auto moves what
 *    is missing, up to what the amount knobs ask, oldest swap-outs first
 *    (the least likely to be read soon, so the cheapest to read from
 *    Flash).
 *
 *    Room pays when what a swap-out kept on Network RAM saves exceeds
 *    what the slot moved to make its room costs. The move writes Flash
 *    once, as the swap-out would have, and adds a read of Network RAM
 *    (its latency stands for the work). Each read of the swap-out saves
 *    the difference of the two read latencies, each read of the moved
 *    slot loses it: reads a swap-out gets are the interval's reads per
 *    swap-out, reads a moved slot gets are counted (below), and a read's
 *    saving is weighed by the CPUs' idle share as for speed. With Flash
 *    reads as fast as Network RAM's, or within what a swap-out's one
 *    read back recovers, no room is made: the swap-outs go to Flash and
 *    the moves cost nothing. The latencies are each medium's mean over
 *    its last AUTO_SAMPLES reads, however many intervals they took. With
 *    either not measured yet (no Flash reads before anything moved) room
 *    is made, and under AUTO_IDLE per mille of idle CPU time none.
 *
 *  - speed: Network RAM is the slower medium now (its mean read latency,
 *    queueing included, more than AUTO_FASTER percent above Flash's, over
 *    at least AUTO_SAMPLES reads of each), Flash's queue is not the
 *    deeper one, and moving pays: auto moves up to what the amount knobs
 *    ask, newest swap-outs first (the likeliest to be read soon), so that
 *    reads spread over both media. With no Flash reads to compare with
 *    while Network RAM has AUTO_PROBE_QD reads in flight, it moves a
 *    probe of AUTO_PROBE slots, newest first, to learn Flash's latency.
 *
 *    Moving pays when the reads a moved slot gets save more than its
 *    move costs: each saves the difference of the two read latencies,
 *    the move costs a Network RAM read and a Flash write (at least a
 *    Flash read). Reads a moved slot gets are measured, not guessed:
 *    with nothing moved yet, auto moves a probe of AUTO_PROBE slots; it
 *    then counts reads of moved slots against slots moved, halving both
 *    at each activation that moves more (so that they follow what is
 *    moved now), and holding them while nothing moves (so that the last
 *    slots moved go on being counted). After AUTO_REPROBE activations
 *    held back, it forgets and probes again: what pays changes with the
 *    workload's phase. Slots moved for room count too: a read of Flash
 *    instead of Network RAM saves the same, whatever moved the slot.
 *
 *    A read's saved latency shortens the run only while the CPUs would
 *    otherwise have waited for it: with them busy, a read waits while
 *    other work runs, and a move only adds work (a Network RAM read, a
 *    Flash write). So what a read saves is weighed by the share of CPU
 *    time spent idle or waiting on I/O (the lesser of the interval's and
 *    its running average over about AUTO_IDLE_AVG activations, so that
 *    idle spells in a busy run do not count), and under AUTO_IDLE per
 *    mille of it auto neither probes nor moves for speed: a moved slot
 *    would have to be read over 1000 / AUTO_IDLE times.
 *
 * Otherwise nothing moves: with Network RAM holding all the swap and
 * faster than Flash, auto is no prefetching at all. It never plans more
 * than half the free Flash, and tells the engine how much of its plan
 * is room. The same code runs in n2l-sim, which has no latencies, queues
 * or CPU time (it passes the CPUs as idle): there auto makes room only.
 */
#include "age-list.h"
#include "n2l-policies.h"

#define AUTO_HEADROOM	4	/* activations of swap-outs kept free */
#define AUTO_FASTER	10	/* percent slower that makes a medium slower */
#define AUTO_SAMPLES	16	/* reads of a medium before its latency counts */
#define AUTO_PROBE_QD	4	/* Network RAM reads in flight worth a probe */
#define AUTO_PROBE	64	/* slots of a probe */
#define AUTO_REPROBE	64	/* activations held back before a new probe */
#define AUTO_IDLE	100	/* per mille of CPU time idle worth moving for */
#define AUTO_IDLE_AVG	16	/* activations the idle share is averaged over */
#define AUTO_READS_CAP	1000	/* reads a swap-out gets, at most, to room_pays() */

struct auto_policy {
	struct age_policy age;
	u64 swapouts_avg;	/* running average of swap-outs per interval */
	u64 lat_reads[N2L_NR_MEDIA];	/* reads not yet AUTO_SAMPLES... */
	u64 lat_us[N2L_NR_MEDIA];	/* ...and their latencies, summed */
	u64 known_us[N2L_NR_MEDIA];	/* the last mean over AUTO_SAMPLES */
	u32 cold;		/* slots still to take from the oldest end... */
	u32 hot;		/* ...and then from the newest */
	u64 moved;		/* slots moved, and reads of moved slots, */
	u64 moved_reads;	/* both halved at each activation that moves */
	u32 held_back;		/* activations the speed rule did not pay */
	u32 idle_avg;		/* running average of the idle share */
	bool planned;		/* plan() ran: idle_avg holds a measure */
};

static struct auto_policy *to_auto(struct n2l_prefetch *p)
{
	return container_of(p, struct auto_policy, age.base);
}

static struct n2l_prefetch *auto_create(u32 nr_slots)
{
	struct auto_policy *a = n2l_zalloc(sizeof(*a));

	if (!a)
		return NULL;
	if (age_list_init(&a->age, nr_slots)) {
		age_list_exit(&a->age);
		n2l_free(a);
		return NULL;
	}
	return &a->age.base;
}

static void auto_destroy(struct n2l_prefetch *p)
{
	struct auto_policy *a = to_auto(p);

	age_list_exit(&a->age);
	n2l_free(a);
}

/* Mean read latency of @m in us; 0 without AUTO_SAMPLES reads. */
static u64 mean_read_us(const struct n2l_pf_view *v, enum n2l_medium m)
{
	if (v->reads[m] < AUTO_SAMPLES)
		return 0;
	return div64_u64(v->read_us[m], v->reads[m]);
}

/* Whether @slow's latency is more than AUTO_FASTER percent above @fast's. */
static bool slower(u64 slow, u64 fast)
{
	return slow * 100 > fast * (100 + AUTO_FASTER);
}

/*
 * The CPUs' idle share that moving may count on: the lesser of the last
 * interval's and its running average over about AUTO_IDLE_AVG
 * activations. A run that keeps the CPUs busy has short idle spells
 * (a burst of reads waiting on a server); they do not make the CPU time
 * a move costs free, and a move made in one delays the work after it.
 * Busy again, auto stops at once.
 */
static u32 idle_share(struct auto_policy *a, u32 idle_pm)
{
	if (!a->planned)
		a->idle_avg = idle_pm;
	else
		a->idle_avg = (a->idle_avg * (AUTO_IDLE_AVG - 1) + idle_pm) /
			      AUTO_IDLE_AVG;
	a->planned = true;
	return min(a->idle_avg, idle_pm);
}

/*
 * A medium's read latency over the last AUTO_SAMPLES reads or more, however
 * many intervals they took: a swap-out rate of a few slots an interval
 * reads too little in one to measure, and room must not be made as if
 * nothing were known then.
 */
static void learn_latencies(struct auto_policy *a, const struct n2l_pf_view *v)
{
	enum n2l_medium m;

	for (m = 0; m < N2L_NR_MEDIA; m++) {
		a->lat_reads[m] += v->reads[m];
		a->lat_us[m] += v->read_us[m];
		if (a->lat_reads[m] < AUTO_SAMPLES)
			continue;
		a->known_us[m] = div64_u64(a->lat_us[m], a->lat_reads[m]);
		a->lat_reads[m] = 0;
		a->lat_us[m] = 0;
	}
}

/* Reads per mille that the interval's swap-outs and the moved slots get. */
static u64 reads_per_swapout(const struct n2l_pf_view *v)
{
	u64 reads = 0;
	enum n2l_medium m;

	for (m = 0; m < N2L_NR_MEDIA; m++)
		reads += v->reads[m];
	/* capped at AUTO_READS_CAP reads a swap-out, so that room_pays() cannot overflow */
	return v->swapouts ? min_t(u64, div64_u64(reads * 1000, v->swapouts),
				   AUTO_READS_CAP * 1000) : 0;
}

static u64 reads_per_moved(const struct auto_policy *a)
{
	return a->moved ? div64_u64(a->moved_reads * 1000, a->moved) : 0;
}

/*
 * Whether a swap-out kept on Network RAM, its reads each saving @flash -
 * @net us of which the CPUs' idle share @idle_pm shortens the run, saves
 * more than the slot moved for it loses on its own reads and costs in a
 * Network RAM read. Unmeasured latencies (either 0): room pays.
 */
static bool room_pays(const struct auto_policy *a, const struct n2l_pf_view *v,
		      u64 net, u64 flash, u32 idle_pm)
{
	u64 kept = reads_per_swapout(v), moved = reads_per_moved(a);

	if (!net || !flash)
		return true;
	if (flash <= net || kept <= moved)
		return false;
	return (kept - moved) * (flash - net) * idle_pm > net * 1000 * 1000;
}

/* Slots to move, oldest first, to keep room for the next swap-outs. */
static u64 plan_room(struct auto_policy *a, const struct n2l_pf_view *v,
		     u32 idle_pm)
{
	u64 burst = max(v->swapouts, a->swapouts_avg) * AUTO_HEADROOM;
	u64 net = a->known_us[N2L_NETRAM], flash = a->known_us[N2L_FLASH];
	u64 free = v->free[N2L_NETRAM];

	if (idle_pm < AUTO_IDLE || !room_pays(a, v, net, flash, idle_pm))
		return 0;
	/* Writes can take no more room than the slots not there yet. */
	burst = min_t(u64, burst, v->slots - v->held[N2L_NETRAM]);
	if (free >= burst)
		return 0;
	return min(burst - free, v->knob_amount);
}

/* How many reads moved slots get, from what moved since the last activation. */
static void count_moved_reads(struct auto_policy *a, const struct n2l_pf_view *v)
{
	if (v->prefetched) {
		a->moved /= 2;
		a->moved_reads /= 2;
	}
	a->moved += v->prefetched;
	a->moved_reads += v->prefetch_reads;
}

/*
 * Whether the reads a moved slot gets, each saving @net - @flash us of
 * which the CPUs' idle share @idle_pm shortens the run, pay for its move,
 * a read of each medium at least.
 */
static bool moving_pays(const struct auto_policy *a, u64 net, u64 flash,
			u32 idle_pm)
{
	return a->moved_reads * (net - flash) * idle_pm >
	       a->moved * (net + flash) * 1000;
}

/* Slots to move, newest first, to spread reads over the faster medium. */
static u64 plan_speed(struct auto_policy *a, const struct n2l_pf_view *v,
		      u32 idle_pm)
{
	u64 net = mean_read_us(v, N2L_NETRAM), flash = mean_read_us(v, N2L_FLASH);
	u32 qnet = v->reads_inflight[N2L_NETRAM];
	u64 probe = min_t(u64, AUTO_PROBE, v->knob_amount);

	if (idle_pm < AUTO_IDLE)
		return 0;
	if (!flash)
		return qnet >= AUTO_PROBE_QD ? probe : 0;
	if (!net || !slower(net, flash) ||
	    v->reads_inflight[N2L_FLASH] > qnet)
		return 0;
	if (++a->held_back >= AUTO_REPROBE)
		a->moved = a->moved_reads = 0;
	if (!a->moved) {
		a->held_back = 0;
		return probe;
	}
	if (!moving_pays(a, net, flash, idle_pm))
		return 0;
	a->held_back = 0;
	return v->knob_amount;
}

static u64 auto_plan(struct n2l_prefetch *p, const struct n2l_pf_view *v,
		     u64 *room_asked)
{
	struct auto_policy *a = to_auto(p);
	u64 cold, hot, room = v->free[N2L_FLASH] / 2;
	u32 idle_pm = idle_share(a, v->cpu_idle_pm);

	a->swapouts_avg = (a->swapouts_avg + v->swapouts) / 2;
	learn_latencies(a, v);
	count_moved_reads(a, v);
	cold = min(plan_room(a, v, idle_pm), room);
	hot = min(plan_speed(a, v, idle_pm), room - cold);
	a->cold = cold;
	a->hot = hot;
	*room_asked = cold;
	return cold + hot;
}

/*
 * The oldest while room is being made, then the newest; slots that did
 * not move are made up for with the oldest again.
 */
static u32 auto_select(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n)
{
	struct auto_policy *a = to_auto(p);
	bool oldest = a->cold || !a->hot;
	u32 *left = a->cold ? &a->cold : &a->hot;
	u32 got;

	got = age_policy_select(p, victims, *left ? min(n, *left) : n, oldest);
	*left -= min(*left, got);
	return got;
}

struct n2l_prefetch_type n2l_prefetch_auto = {
	.base = {
		.name = "auto",
		.version = { 1, 0, 0 },
		.kind = N2L_POLICY_PREFETCH,
		.owner = THIS_MODULE,
	},
	.create = auto_create,
	.destroy = auto_destroy,
	.on_write = age_policy_on_write,
	.on_free = age_policy_on_free,
	.select = auto_select,
	.plan = auto_plan,
};
