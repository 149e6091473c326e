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
 *    of the device it does not hold yet, auto moves what is missing, up
 *    to what the amount knobs ask, oldest swap-outs first (the least
 *    likely to be read soon, so the cheapest to read from Flash). If the
 *    slots it moved are read back often (more than AUTO_REREAD per mille
 *    of them in an interval, on average) while Flash reads are slower
 *    than Network RAM's, it moves half as many.
 *
 *  - speed: Network RAM is the slower medium now (its mean read latency,
 *    queueing included, more than AUTO_FASTER percent above Flash's, over
 *    at least AUTO_SAMPLES reads of each) and Flash's queue is not the
 *    deeper one: auto moves up to what the amount knobs ask, newest
 *    swap-outs first (the likeliest to be read soon), so that reads
 *    spread over both media. With no Flash reads to compare with while
 *    Network RAM has AUTO_PROBE_QD reads in flight, it moves a probe of
 *    AUTO_PROBE slots, newest first, to learn Flash's latency.
 *
 * Otherwise nothing moves: with Network RAM holding all the swap and
 * faster than Flash, auto is no prefetching at all. It never plans more
 * than half the free Flash. The same code runs in n2l-sim, which has no
 * latencies and queues: there auto makes room only.
 */
#include "age-list.h"
#include "n2l-policies.h"

#define AUTO_HEADROOM	4	/* activations of swap-outs kept free */
#define AUTO_REREAD	500	/* per mille of moved slots read back */
#define AUTO_FASTER	10	/* percent slower that makes a medium slower */
#define AUTO_SAMPLES	16	/* reads of a medium before its latency counts */
#define AUTO_PROBE_QD	4	/* Network RAM reads in flight worth a probe */
#define AUTO_PROBE	64	/* slots of a probe */

struct auto_policy {
	struct age_policy age;
	u64 swapouts_avg;	/* running average of swap-outs per interval */
	u64 reread_avg;		/* running average, per mille */
	u32 cold;		/* slots still to take from the oldest end... */
	u32 hot;		/* ...and then from the newest */
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

/* Slots to move, oldest first, to keep room for the next swap-outs. */
static u64 plan_room(struct auto_policy *a, const struct n2l_pf_view *v)
{
	u64 burst = max(v->swapouts, a->swapouts_avg) * AUTO_HEADROOM;
	u64 net = mean_read_us(v, N2L_NETRAM), flash = mean_read_us(v, N2L_FLASH);
	u64 free = v->free[N2L_NETRAM], want;

	/* Writes can take no more room than the slots not there yet. */
	burst = min_t(u64, burst, v->slots - v->held[N2L_NETRAM]);
	if (free >= burst)
		return 0;
	want = min(burst - free, v->knob_amount);
	if (a->reread_avg > AUTO_REREAD && net && flash && flash > net)
		want /= 2;
	return want;
}

/* Slots to move, newest first, to spread reads over the faster medium. */
static u64 plan_speed(const struct n2l_pf_view *v)
{
	u64 net = mean_read_us(v, N2L_NETRAM), flash = mean_read_us(v, N2L_FLASH);
	u32 qnet = v->reads_inflight[N2L_NETRAM];

	if (!flash)
		return qnet >= AUTO_PROBE_QD ? min_t(u64, AUTO_PROBE, v->knob_amount) : 0;
	if (!net || !slower(net, flash) ||
	    v->reads_inflight[N2L_FLASH] > qnet)
		return 0;
	return v->knob_amount;
}

static u64 auto_plan(struct n2l_prefetch *p, const struct n2l_pf_view *v)
{
	struct auto_policy *a = to_auto(p);
	u64 reread = v->prefetched ?
		     div64_u64(v->prefetch_reads * 1000, v->prefetched) : 0;
	u64 cold, hot, room = v->free[N2L_FLASH] / 2;

	a->swapouts_avg = (a->swapouts_avg + v->swapouts) / 2;
	if (v->prefetched)
		a->reread_avg = (a->reread_avg + reread) / 2;
	cold = min(plan_room(a, v), room);
	hot = min(plan_speed(v), room - cold);
	a->cold = cold;
	a->hot = hot;
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
