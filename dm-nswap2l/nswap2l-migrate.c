// SPDX-License-Identifier: GPL-2.0-only
/*
 * The migration engine: prefetching slots from Network RAM to Flash, to
 * free Network RAM for the next burst of swap-outs and to spread the
 * swap-ins over more devices.
 *
 * Every interval_ms, and only if slots were written since its last run
 * (while it is disabled, it does not run), the worker sets a target
 * (the policy's plan() from what the engine measured since its last run,
 * or else amount_mode: a percentage of those swap-outs, a fixed count, or
 * a percentage of the slots on Network RAM; never more than Network RAM
 * holds) and moves it, several moves at once, within its interval: what
 * an activation has not moved when the next is due is owed, and the next
 * moves it first (so the cadence holds when moving is slow, and each
 * plan() sees one interval, not however long a target took):
 *
 *  1. under the lock, the prefetch policy names candidates, which leave
 *     it and are grouped into runs of consecutive slots sharing one copy;
 *     each run gets contiguous Flash blocks, so that its slots stay one
 *     request when they are read, and is cut into moves of up to
 *     N2L_MIG_RUN_PAGES slots;
 *  2. each move goes to an idle mover, which reads it from a server
 *     holding its copies (a GET of their version, failing over between
 *     them), writes it to its Flash blocks, and under the
 *     lock points every slot still at those copies to Flash, marked
 *     prefetched; a slot written, discarded or moved meanwhile keeps its
 *     newer data and the Flash block goes back (n2l_relocate());
 *  3. slots that did not move are made up for by selecting more, until
 *     the target is moved, the policy has nothing left, Flash is full or
 *     twice the target was tried.
 *
 * Foreground I/O goes first by a budget of queue depth: up to
 * N2L_MIG_MOVERS moves are in flight while no read is, one fewer for each
 * foreground read in flight, and always at least one, so the engine never
 * stalls and never holds the device's queues for long. Nothing is locked
 * across I/O, so a swap-out never waits for a migration.
 */
#include <linux/kernel_stat.h>
#include <linux/sched/mm.h>
#include <linux/tick.h>
#include <linux/wait.h>

#include "n2l-policies.h"
#include "nswap2l.h"
#include "nswap2l-trace.h"

#define N2L_MIG_BATCH		256	/* candidates asked for at once */
#define N2L_POPULATE_BATCH	4096	/* slots a new policy learns per lock */

/*----------------------------------------------------------------*/
/* Events: what the prefetch policy hears of the slot map, under the lock. */

void __n2l_pf_write(struct n2l_store *s, n2l_slot_t slot, enum n2l_medium m)
{
	struct n2l_mig *mig = &s->mig;

	lockdep_assert_held(&s->lock);
	if (mig->policy)
		mig->policy->type->on_write(mig->policy, slot, m);
	if (mig->next && from_slot(slot) < mig->next_cursor)
		mig->next->type->on_write(mig->next, slot, m);
}

void __n2l_pf_free(struct n2l_store *s, n2l_slot_t slot)
{
	struct n2l_mig *mig = &s->mig;

	lockdep_assert_held(&s->lock);
	if (mig->policy)
		mig->policy->type->on_free(mig->policy, slot);
	if (mig->next && from_slot(slot) < mig->next_cursor)
		mig->next->type->on_free(mig->next, slot);
}

/* A read of @nr slots from @first on @m (prefetch hits counted by caller). */
void __n2l_pf_read(struct n2l_store *s, n2l_slot_t first, u32 nr,
		   enum n2l_medium m)
{
	struct n2l_prefetch *p = s->mig.policy;
	u32 i;

	lockdep_assert_held(&s->lock);
	if (!p || !p->type->on_read)
		return;
	for (i = 0; i < nr; i++)
		p->type->on_read(p, to_slot(from_slot(first) + i), m);
}

/*----------------------------------------------------------------*/
/* Policies: creation from the table line or a message, and switching. */

void n2l_prefetch_destroy(struct n2l_prefetch *p)
{
	struct n2l_prefetch_type *type;

	if (!p)
		return;
	type = p->type;
	type->destroy(p);
	n2l_policy_put(&type->base);
}

const struct n2l_mig_knobs n2l_mig_defaults = {
	.interval_ms = 1000,
	.amount = 10,
	.amount_mode = N2L_AMOUNT_SWAPOUTS,
	.enabled = 1,
};

/*
 * One key/value pair of the prefetch policy's arguments: an engine knob
 * ("interval_ms" is the knob "prefetch_interval_ms"), or "percent N",
 * short for "amount_mode swapouts amount N".
 */
static int parse_mig_arg(struct n2l_mig_knobs *mk, const char *key,
			 const char *value, char **error)
{
	const struct n2l_knob *k;
	char name[32];
	unsigned int v;
	int r;

	if (!strcmp(key, "percent")) {
		mk->amount_mode = N2L_AMOUNT_SWAPOUTS;
		key = "amount";
	}
	snprintf(name, sizeof(name), "prefetch_%s", key);
	k = n2l_find_knob(name);
	if (!k || !n2l_knob_is_mig(k)) {
		*error = "Unknown prefetch policy argument";
		return -EINVAL;
	}
	r = n2l_knob_parse(k, value, &v, error);
	if (!r)
		*n2l_mig_knob_ptr(mk, k) = v;
	return r;
}

/*
 * A prefetch policy from "<name> [<key> <value>]*", the form shared by
 * the table line (after its count) and the "prefetch" message. The pairs
 * set @mk, which starts as the caller has it.
 */
struct n2l_prefetch *n2l_prefetch_create(unsigned int argc, char **argv,
					 u32 nr_slots, bool have_flash,
					 struct n2l_mig_knobs *mk,
					 char **error)
{
	struct n2l_policy_type *pt;
	struct n2l_prefetch_type *type;
	struct n2l_prefetch *p;
	unsigned int i;
	int r;

	if (!argc) {
		*error = "Missing prefetch policy";
		return ERR_PTR(-EINVAL);
	}
	if (!(argc & 1)) {
		*error = "Prefetch policy arguments must be key/value pairs";
		return ERR_PTR(-EINVAL);
	}
	for (i = 1; i < argc; i += 2) {
		r = parse_mig_arg(mk, argv[i], argv[i + 1], error);
		if (r)
			return ERR_PTR(r);
	}
	r = n2l_mig_knobs_check(mk, error);
	if (r)
		return ERR_PTR(r);
	pt = n2l_policy_get(N2L_POLICY_PREFETCH, argv[0]);
	if (!pt) {
		*error = "Unknown prefetch policy";
		return ERR_PTR(-EINVAL);
	}
	type = to_prefetch_type(pt);
	if (type != &n2l_prefetch_none && !have_flash) {
		n2l_policy_put(pt);
		*error = "Prefetching moves slots to Flash: give a flash device";
		return ERR_PTR(-EINVAL);
	}
	p = type->create(nr_slots);
	if (!p) {
		n2l_policy_put(pt);
		*error = "Cannot allocate prefetch policy";
		return ERR_PTR(-ENOMEM);
	}
	p->type = type;
	return p;
}

/*
 * Make @p the policy. It learns where the slots are a batch at a time,
 * hearing meanwhile the events of the slots it has learned, so that a
 * switch under load misses nothing; the old policy is returned.
 */
static struct n2l_prefetch *mig_install(struct n2l_store *s,
					struct n2l_prefetch *p)
{
	u32 i = 0, end, nr = n2l_nr_slots(s);
	struct n2l_prefetch *old;
	sme_t e;

	lockdep_assert_held(&s->config_lock);
	spin_lock_irq(&s->lock);
	s->mig.next = p;
	s->mig.next_cursor = 0;
	spin_unlock_irq(&s->lock);
	while (i < nr) {
		end = i + min(nr - i, N2L_POPULATE_BATCH);
		spin_lock_irq(&s->lock);
		for (; i < end; i++) {
			e = slotmap_get(&s->map, to_slot(i));
			if (sme_medium(e) != N2L_NONE)
				p->type->on_write(p, to_slot(i), sme_medium(e));
		}
		s->mig.next_cursor = end;
		spin_unlock_irq(&s->lock);
		cond_resched();
	}
	spin_lock_irq(&s->lock);
	old = s->mig.policy;
	s->mig.policy = p;
	s->mig.next = NULL;
	spin_unlock_irq(&s->lock);
	return old;
}

/* Called with config_lock held: the table's policy and knobs take over. */
void n2l_mig_apply(struct n2l_store *s, struct n2l_prefetch *p,
		   const struct n2l_mig_knobs *mk)
{
	lockdep_assert_held(&s->config_lock);
	s->mig.knobs = *mk;
	n2l_prefetch_destroy(mig_install(s, p));
}

/*
 * "prefetch <name> [<key> <value>]*": argv starts at the name. The policy
 * is looked up (maybe loaded) and allocated before the config_lock is
 * taken; its pairs are applied on top of the knobs as they are then.
 */
int n2l_set_prefetch(struct n2l_store *s, unsigned int argc, char **argv,
		     char **error)
{
	struct n2l_mig_knobs mk = s->mig.knobs;
	struct n2l_prefetch *p;
	unsigned int i;
	int r = 0;

	p = n2l_prefetch_create(argc, argv, n2l_nr_slots(s),
				s->media[N2L_FLASH].bdev, &mk, error);
	if (IS_ERR(p))
		return PTR_ERR(p);
	mutex_lock(&s->config_lock);
	mk = s->mig.knobs;
	for (i = 1; !r && i < argc; i += 2)
		r = parse_mig_arg(&mk, argv[i], argv[i + 1], error);
	if (!r)
		r = n2l_mig_knobs_check(&mk, error);
	if (!r)
		n2l_mig_apply(s, p, &mk);
	mutex_unlock(&s->config_lock);
	if (r) {
		n2l_prefetch_destroy(p);
		return r;
	}
	n2l_mig_kick(s);
	return 0;
}

/* "<#args> [<key> <value>]*": the knobs that differ from the defaults. */
int n2l_emit_mig_args(const struct n2l_mig_knobs *mk, char *buf, size_t len)
{
	static const char *const modes[] = { "swapouts", "fixed", "netram" };
	const struct n2l_mig_knobs *d = &n2l_mig_defaults;
	char pairs[160];
	int n = 0, words = 0;

	pairs[0] = '\0';
	if (mk->interval_ms != d->interval_ms) {
		n += scnprintf(pairs + n, sizeof(pairs) - n, " interval_ms %u",
			       mk->interval_ms);
		words += 2;
	}
	if (mk->amount_mode != d->amount_mode) {
		n += scnprintf(pairs + n, sizeof(pairs) - n, " amount_mode %s",
			       modes[mk->amount_mode]);
		words += 2;
	}
	if (mk->amount != d->amount) {
		n += scnprintf(pairs + n, sizeof(pairs) - n, " amount %u",
			       mk->amount);
		words += 2;
	}
	if (mk->enabled != d->enabled) {
		n += scnprintf(pairs + n, sizeof(pairs) - n, " enabled %u",
			       mk->enabled);
		words += 2;
	}
	return scnprintf(buf, len, "%d%s", words, pairs);
}

/*----------------------------------------------------------------*/
/* The worker. */

static void __mig_schedule(struct n2l_store *s, unsigned long delay)
{
	lockdep_assert_held(&s->lock);
	if (s->mig.running)
		mod_delayed_work(s->mig.wq, &s->mig.work, delay);
}

/* Run with the knobs just set: a shorter interval takes effect now. */
void n2l_mig_kick(struct n2l_store *s)
{
	unsigned long delay = msecs_to_jiffies(READ_ONCE(s->mig.knobs.interval_ms));

	spin_lock_irq(&s->lock);
	__mig_schedule(s, delay);
	spin_unlock_irq(&s->lock);
}

void n2l_mig_start(struct n2l_store *s)
{
	spin_lock_irq(&s->lock);
	s->mig.running = true;
	spin_unlock_irq(&s->lock);
	n2l_mig_kick(s);
}

/* No migration runs once this returns, until n2l_mig_start(). */
void n2l_mig_stop(struct n2l_store *s)
{
	if (!s->mig.wq)
		return;
	spin_lock_irq(&s->lock);
	s->mig.running = false;
	spin_unlock_irq(&s->lock);
	wake_up(&s->mig.wait);
	cancel_delayed_work_sync(&s->mig.work);
}

/* How many slots the knobs ask this run to move. */
static u64 mig_amount(struct n2l_store *s, u64 swapouts)
{
	u64 amount = READ_ONCE(s->mig.knobs.amount);

	switch (READ_ONCE(s->mig.knobs.amount_mode)) {
	case N2L_AMOUNT_FIXED:
		return amount;
	case N2L_AMOUNT_NETRAM:
		return DIV_ROUND_UP_ULL(READ_ONCE(s->media[N2L_NETRAM].held) *
					amount, 100);
	default:
		return DIV_ROUND_UP_ULL(swapouts * amount, 100);
	}
}

/* @now less @*last, which becomes @now: a counter's growth since. */
static u64 since(u64 now, u64 *last)
{
	u64 d = now >= *last ? now - *last : now;	/* cleared meanwhile */

	*last = now;
	return d;
}

/*
 * Time the online CPUs spent idle or waiting on I/O since boot, in ns, as
 * /proc/stat counts it: by nohz's clocks, or by the tick without them.
 */
static u64 cpus_idle_ns(void)
{
	u64 sum = 0, idle, iowait;
	int cpu;

	for_each_online_cpu(cpu) {
		idle = get_cpu_idle_time_us(cpu, NULL);
		iowait = get_cpu_iowait_time_us(cpu, NULL);
		if (idle == -1ULL || iowait == -1ULL)
			sum += kcpustat_cpu(cpu).cpustat[CPUTIME_IDLE] +
			       kcpustat_cpu(cpu).cpustat[CPUTIME_IOWAIT];
		else
			sum += (idle + iowait) * NSEC_PER_USEC;
	}
	return sum;
}

/* Per mille of the CPUs' time idle or waiting on I/O since the last run. */
static u32 cpus_idle_pm(struct n2l_mig_seen *seen)
{
	u64 idle = since(cpus_idle_ns(), &seen->idle_ns);
	u64 clock = since(ktime_get_ns(), &seen->clock_ns) * num_online_cpus();

	return clock ? min_t(u64, div64_u64(idle * 1000, clock), 1000) : 0;
}

/* What a policy's plan() sees: the engine's measures since its last run. */
static void mig_view(struct n2l_store *s, u64 swapouts, struct n2l_pf_view *v)
{
	struct n2l_mig_seen *seen = &s->mig.seen;
	struct n2l_medium_stats *st;
	enum n2l_medium m;

	memset(v, 0, sizeof(*v));
	v->swapouts = swapouts;
	v->knob_amount = mig_amount(s, swapouts);
	v->prefetched = since(atomic64_read(&s->stats.prefetched),
			      &seen->prefetched);
	v->prefetch_reads = since(atomic64_read(&s->stats.prefetch_reads),
				  &seen->prefetch_reads);
	for_each_medium(m) {
		st = &s->media[m].stats;
		v->reads[m] = since(atomic64_read(&st->lat_done[READ]),
				    &seen->reads[m]);
		v->read_us[m] = since(atomic64_read(&st->lat_sum_us[READ]),
				      &seen->read_us[m]);
		v->reads_inflight[m] = atomic_read(&st->reads_inflight);
	}
	v->cpu_idle_pm = cpus_idle_pm(seen);
	v->slots = n2l_nr_slots(s);
	spin_lock_irq(&s->lock);
	__n2l_media_free(s, v->free, 0);
	for_each_medium(m)
		v->held[m] = s->media[m].held;
	spin_unlock_irq(&s->lock);
}

/*
 * What this run sets out to move: the policy's plan, or the knobs; @room:
 * how much of it the policy asks for to make room on Network RAM.
 */
static u64 mig_plan(struct n2l_store *s, u64 swapouts, u64 *room)
{
	struct n2l_pf_view v;
	struct n2l_prefetch *p;
	u64 amount;

	*room = 0;
	mig_view(s, swapouts, &v);
	spin_lock_irq(&s->lock);
	p = s->mig.policy;
	amount = p && p->type->plan ? p->type->plan(p, &v, room) :
		 v.knob_amount;
	spin_unlock_irq(&s->lock);
	trace_nswap2l_prefetch_plan(s->devt, &v, amount, *room);
	return amount;
}

/*
 * The run's target: what the plan asks, but no more than Network RAM
 * holds. Counted, so that what the engine moved can be held against it,
 * and why it moved against what it cost.
 */
static u64 mig_target(struct n2l_store *s, u64 swapouts)
{
	u64 room, target = mig_plan(s, swapouts, &room);

	target = min_t(u64, target, READ_ONCE(s->media[N2L_NETRAM].held));
	if (target) {
		atomic64_add(target, &s->stats.prefetch_target);
		atomic64_add(min(room, target), &s->stats.prefetch_room_target);
		atomic64_inc(&s->stats.prefetch_activations);
	}
	return target;
}

/* Whether @slot (entry @e) extends @run, at either end. */
static bool run_extends(struct n2l_mig_run *run, n2l_slot_t slot, sme_t e)
{
	u32 s = from_slot(slot), first = from_slot(run->first);

	if (sme_loc(e) != run->loc || run->nr >= N2L_MAX_PAGES)
		return false;
	if (s == first + run->nr) {
		run->nr++;
		return true;
	}
	if (s + 1 == first) {
		run->first = slot;
		run->nr++;
		return true;
	}
	return false;
}

/*
 * Up to @want candidates that are on Network RAM, grouped into runs in
 * s->mig.runs; the number of runs, and in @nr how many slots they hold.
 * A candidate taken leaves the policy at once (as if freed), so that the
 * next selection names others while it moves; what becomes of it is
 * reported when its move ends. The policy may name slots that are
 * elsewhere by now: it is put right, and they do not count.
 */
static u32 mig_select(struct n2l_store *s, u64 want, u32 *nr)
{
	struct n2l_mig_run *runs = s->mig.runs;
	n2l_slot_t *v = s->mig.victims;
	u32 i, asked, nruns = 0;
	sme_t e;

	*nr = 0;
	spin_lock_irq(&s->lock);
	asked = s->mig.policy ?
		s->mig.policy->type->select(s->mig.policy, v,
					    min_t(u64, want, N2L_MIG_BATCH)) : 0;
	for (i = 0; i < asked; i++) {
		e = slotmap_get(&s->map, v[i]);
		if (sme_medium(e) != N2L_NETRAM) {
			if (sme_medium(e) == N2L_NONE)
				__n2l_pf_free(s, v[i]);
			else
				__n2l_pf_write(s, v[i], sme_medium(e));
			continue;
		}
		__n2l_pf_free(s, v[i]);
		(*nr)++;
		if (nruns && run_extends(&runs[nruns - 1], v[i], e))
			continue;
		runs[nruns].first = v[i];
		runs[nruns].nr = 1;
		runs[nruns].loc = sme_loc(e);
		nruns++;
	}
	spin_unlock_irq(&s->lock);
	return nruns;
}

/*
 * The slots of a run that did not move and are still where they were
 * become candidates again, reported as swapped out anew so that they do
 * not come straight back; those whose copies are lost are none.
 */
static void mig_give_back(struct n2l_store *s, struct n2l_mig_run *run, bool lost)
{
	n2l_slot_t slot;
	sme_t e;
	u32 i;

	spin_lock_irq(&s->lock);
	for (i = 0; i < run->nr; i++) {
		slot = to_slot(from_slot(run->first) + i);
		e = slotmap_get(&s->map, slot);
		if (sme_medium(e) != N2L_NETRAM || sme_loc(e) != run->loc)
			continue;
		if (lost)
			__n2l_pf_free(s, slot);
		else
			__n2l_pf_write(s, slot, N2L_NETRAM);
	}
	spin_unlock_irq(&s->lock);
}

/*
 * One move, in a mover: read the run from a server holding its copies,
 * write it to fresh Flash blocks, and point the slots still at those
 * copies there (n2l_relocate()). 0, -ENOSPC when Flash is full, or an
 * error; @moved counts the slots that moved.
 */
static int mig_move_run(struct n2l_store *s, struct n2l_mig_run *run,
			struct bio *buf, u32 *moved)
{
	struct n2l_reloc r = {
		.first = run->first, .nr = run->nr,
		.group = run->loc & (SME_GROUPS - 1),
		.vers = run->loc >> SME_GROUP_BITS,
		.data = buf, .to = N2L_FLASH, .flags = SME_PREFETCHED,
		.have_blk = true, .blk = run->blk,
	};
	bool lost, there = false;
	u64 tried = 0;
	u32 i;
	int err;

	spin_lock_irq(&s->lock);
	for (i = 0; i < run->nr && !there; i++)
		there = sme_at(slotmap_get(&s->map, to_slot(from_slot(run->first) + i)),
			       r.group, r.vers);
	if (there)
		s->netram.groups[r.group].refs++;
	else	/* written or moved meanwhile */
		runalloc_put(&s->media[N2L_FLASH].alloc, run->blk, run->nr);
	spin_unlock_irq(&s->lock);
	*moved = 0;
	if (!there)
		return 0;

	err = n2l_netram_read_any(s, r.group, from_slot(r.first), r.nr, r.vers,
				  r.data, 0, &tried);
	if (err) {
		spin_lock_irq(&s->lock);
		runalloc_put(&s->media[N2L_FLASH].alloc, run->blk, run->nr);
		spin_unlock_irq(&s->lock);
	} else {
		err = n2l_relocate(s, &r);
	}
	*moved = r.moved;
	spin_lock_irq(&s->lock);
	lost = !s->netram.groups[r.group].nr;
	__n2l_group_put(s, r.group);
	spin_unlock_irq(&s->lock);
	if (err)
		mig_give_back(s, run, lost);
	return err;
}

static void mover_work(struct work_struct *w)
{
	struct n2l_mover *mv = container_of(w, struct n2l_mover, work);
	struct n2l_store *s = mv->store;
	struct n2l_mig *mig = &s->mig;
	unsigned int noio = memalloc_noio_save();
	u32 moved;
	int err;

	err = mig_move_run(s, &mv->run, mv->buf, &moved);
	memalloc_noio_restore(noio);
	atomic64_add(moved, &s->stats.prefetched);

	spin_lock_irq(&s->lock);
	mig->round_moved += moved;
	mig->round_busy -= mv->run.nr;
	if (err == -ENOSPC)
		mig->flash_full = true;
	mig->idle[mig->nr_idle++] = mv;
	spin_unlock_irq(&s->lock);
	wake_up(&mig->wait);
}

/* Foreground reads in flight, on every medium. */
static u32 reads_inflight(struct n2l_store *s)
{
	enum n2l_medium m;
	u32 n = 0;

	for_each_medium(m)
		n += atomic_read(&s->media[m].stats.reads_inflight);
	return n;
}

/*
 * The moves the budget allows in flight now: every mover while no
 * foreground read is in flight, one fewer for each read that is, and
 * never none, so that the engine keeps moving under any load.
 */
static unsigned int mig_budget(struct n2l_store *s)
{
	u32 reads = reads_inflight(s);

	return reads >= N2L_MIG_MOVERS ? 1 : N2L_MIG_MOVERS - reads;
}

/* An idle mover once the budget allows one more move; NULL once stopped. */
static struct n2l_mover *mig_get_mover(struct n2l_store *s)
{
	struct n2l_mig *mig = &s->mig;
	struct n2l_mover *mv = NULL;

	/*
	 * With fewer idle movers than the budget allows, at least one move
	 * is in flight: its end wakes this up, so no reads need polling.
	 */
	wait_event(mig->wait, !READ_ONCE(mig->running) ||
		   N2L_MIG_MOVERS - READ_ONCE(mig->nr_idle) < mig_budget(s));
	spin_lock_irq(&s->lock);
	if (mig->running && mig->nr_idle)
		mv = mig->idle[--mig->nr_idle];
	spin_unlock_irq(&s->lock);
	return mv;
}

static void mig_wait_all(struct n2l_store *s)
{
	wait_event(s->mig.wait, READ_ONCE(s->mig.nr_idle) == N2L_MIG_MOVERS);
}

/* Whether this activation's interval is over: it hands out no more moves. */
static bool mig_round_over(struct n2l_store *s)
{
	return time_after_eq(jiffies, s->mig.round_end);
}

/* Hand @move to a mover; false once the engine stops or the round is over. */
static bool mig_hand_over(struct n2l_store *s, struct n2l_mig_run *move)
{
	struct n2l_mover *mv;

	if (mig_round_over(s))
		return false;
	mv = mig_get_mover(s);
	if (!mv)
		return false;
	mv->run = *move;
	spin_lock_irq(&s->lock);
	s->mig.round_busy += move->nr;
	spin_unlock_irq(&s->lock);
	queue_work(s->mig.movers_wq, &mv->work);
	return true;
}

/*
 * Move @run: Flash blocks for as much of it as they come contiguous (so
 * that its slots stay one request when read), then moves of up to
 * N2L_MIG_RUN_PAGES slots each, to the movers. False once the engine
 * stops, the round is over or Flash is full; what was not handed over
 * goes back.
 */
static bool mig_dispatch(struct n2l_store *s, struct n2l_mig_run *run)
{
	struct n2l_mig_run move = { .loc = run->loc };
	u32 done = 0, n, i;
	n2l_blk_t blk;

	while (done < run->nr) {
		spin_lock_irq(&s->lock);
		n = runalloc_get(&s->media[N2L_FLASH].alloc, run->nr - done, &blk);
		if (!n)
			s->mig.flash_full = true;
		spin_unlock_irq(&s->lock);
		for (i = 0; i < n; i += move.nr) {
			move.first = to_slot(from_slot(run->first) + done + i);
			move.nr = min(n - i, N2L_MIG_RUN_PAGES);
			move.blk = to_blk(from_blk(blk) + i);
			if (!mig_hand_over(s, &move))
				break;
		}
		if (i < n) {	/* stopped: these blocks and slots go back */
			spin_lock_irq(&s->lock);
			runalloc_put(&s->media[N2L_FLASH].alloc,
				     to_blk(from_blk(blk) + i), n - i);
			spin_unlock_irq(&s->lock);
		}
		done += i;
		if (i < n || !n)
			break;
	}
	if (done < run->nr) {
		move.first = to_slot(from_slot(run->first) + done);
		move.nr = run->nr - done;
		mig_give_back(s, &move, false);
	}
	return done == run->nr;
}

/* Until a move of the @busy slots in flight has ended, or the engine stops. */
static void mig_wait_fewer_busy(struct n2l_store *s, u64 busy)
{
	wait_event(s->mig.wait, READ_ONCE(s->mig.round_busy) < busy ||
		   !READ_ONCE(s->mig.running));
}

/*
 * One activation: move @target slots, several moves in flight, until
 * @end (jiffies). Slots that did not move (written meanwhile, or their
 * move failed) are made up for by selecting more, until the target is
 * moved, the policy has no candidate left, Flash is full, or twice the
 * target was tried. Returns what it still owes: the slots not moved when
 * @end came first, 0 when it ended for any other reason.
 */
static u64 mig_round(struct n2l_store *s, u64 target, unsigned long end)
{
	struct n2l_mig *mig = &s->mig;
	u64 tried = 0, moved, busy;
	u32 nruns, nr, i;
	bool full, cut = false;

	mig->round_end = end;
	spin_lock_irq(&s->lock);
	mig->round_moved = 0;
	mig->round_busy = 0;
	mig->flash_full = false;
	spin_unlock_irq(&s->lock);
	while (READ_ONCE(mig->running) && tried < 2 * target) {
		spin_lock_irq(&s->lock);
		moved = mig->round_moved;
		busy = mig->round_busy;
		full = mig->flash_full;
		spin_unlock_irq(&s->lock);
		if (full || moved >= target)
			break;
		cut = mig_round_over(s);
		if (cut)
			break;
		if (moved + busy >= target) {
			/* What is in flight may fall short: see it end. */
			mig_wait_fewer_busy(s, busy);
			continue;
		}
		nruns = mig_select(s, target - moved - busy, &nr);
		if (!nr) {
			if (!busy)
				break;	/* no candidate left */
			mig_wait_fewer_busy(s, busy);
			continue;
		}
		tried += nr;
		for (i = 0; i < nruns; i++)
			if (!mig_dispatch(s, &mig->runs[i]))
				break;
		for (i++; i < nruns; i++)
			mig_give_back(s, &mig->runs[i], false);
		cond_resched();
	}
	mig_wait_all(s);
	if (!cut)
		return 0;
	/* What is still short, counting the moves that ended since the cut. */
	spin_lock_irq(&s->lock);
	moved = mig->round_moved;
	spin_unlock_irq(&s->lock);
	return moved < target ? target - moved : 0;
}

/*
 * What this run sets out to move: what the last one owed, then this
 * one's target, together no more than Network RAM holds. A run without
 * swap-outs since the last asks the policy nothing, and is no activation.
 */
static u64 mig_owed_and_target(struct n2l_store *s, u64 swapouts)
{
	u64 target = swapouts ? mig_target(s, swapouts) : 0;

	return min_t(u64, s->mig.owed + target,
		     READ_ONCE(s->media[N2L_NETRAM].held));
}

static void mig_work(struct work_struct *w)
{
	struct n2l_store *s = container_of(to_delayed_work(w), struct n2l_store,
					   mig.work);
	unsigned long start = jiffies, next;
	u64 swapouts, target;

	next = start + msecs_to_jiffies(READ_ONCE(s->mig.knobs.interval_ms));
	/* Disabled, it does not run: swap-outs count from its last run. */
	if (READ_ONCE(s->mig.knobs.enabled)) {
		swapouts = atomic64_xchg(&s->mig.swapouts, 0);
		target = mig_owed_and_target(s, swapouts);
		s->mig.owed = target ? mig_round(s, target, next) : 0;
	} else {
		s->mig.owed = 0;
	}

	/* The next an interval after this one began: at once if it is due. */
	spin_lock_irq(&s->lock);
	__mig_schedule(s, time_after(next, jiffies) ? next - jiffies : 0);
	spin_unlock_irq(&s->lock);
}

/*----------------------------------------------------------------*/

int n2l_mig_init(struct n2l_store *s)
{
	struct n2l_mig *mig = &s->mig;
	struct n2l_mover *mv;
	unsigned int i;

	mig->knobs = n2l_mig_defaults;
	INIT_DELAYED_WORK(&mig->work, mig_work);
	init_waitqueue_head(&mig->wait);
	mig->victims = kvcalloc(N2L_MIG_BATCH, sizeof(*mig->victims), GFP_KERNEL);
	mig->runs = kvcalloc(N2L_MIG_BATCH, sizeof(*mig->runs), GFP_KERNEL);
	mig->wq = alloc_workqueue("nswap2l-mig-%s", WQ_UNBOUND, 1,
				  dm_device_name(s->md));
	mig->movers_wq = alloc_workqueue("nswap2l-mover-%s", WQ_UNBOUND,
					 N2L_MIG_MOVERS, dm_device_name(s->md));
	if (!mig->victims || !mig->runs || !mig->wq || !mig->movers_wq)
		return -ENOMEM;
	for (i = 0; i < N2L_MIG_MOVERS; i++) {
		mv = &mig->movers[i];
		mv->store = s;
		INIT_WORK(&mv->work, mover_work);
		mv->buf = n2l_alloc_buffer(N2L_MIG_RUN_PAGES);
		if (!mv->buf)
			return -ENOMEM;
		mig->idle[mig->nr_idle++] = mv;
	}
	/* The first view's idle share counts from here, not from boot. */
	cpus_idle_pm(&mig->seen);
	return 0;
}

/* Copes with a partly made engine. */
void n2l_mig_exit(struct n2l_store *s)
{
	struct n2l_mig *mig = &s->mig;
	unsigned int i;

	if (mig->wq) {
		n2l_mig_stop(s);
		destroy_workqueue(mig->wq);
		mig->wq = NULL;
	}
	if (mig->movers_wq)
		destroy_workqueue(mig->movers_wq);
	n2l_prefetch_destroy(mig->policy);
	for (i = 0; i < N2L_MIG_MOVERS; i++)
		if (mig->movers[i].buf)
			n2l_free_buffer(mig->movers[i].buf);
	kvfree(mig->runs);
	kvfree(mig->victims);
}
