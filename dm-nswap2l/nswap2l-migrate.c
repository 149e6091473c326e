// SPDX-License-Identifier: GPL-2.0-only
/*
 * The migration engine: prefetching slots from Network RAM to Flash, to
 * free Network RAM for the next burst of swap-outs and to spread the
 * swap-ins over more devices.
 *
 * Every interval_ms, and only if slots were written since its last run
 * (while it is disabled, it does not run),
 * the worker works out how many slots to move (amount_mode: a percentage
 * of those swap-outs, a fixed count, or a percentage of the slots on
 * Network RAM) and moves them, a run at a time:
 *
 *  1. under the lock, the prefetch policy names candidates, which are
 *     grouped into runs of consecutive slots sharing one copy;
 *  2. the run is read from a server holding its copies (a GET of their
 *     version, failing over between them);
 *  3. written to freshly allocated Flash blocks;
 *  4. under the lock, every slot still pointing at those copies now
 *     points at Flash, marked prefetched, and the copies are invalidated;
 *     a slot written, discarded or moved meanwhile keeps its newer data
 *     and the Flash block goes back (n2l_relocate()).
 *
 * Nothing is locked across I/O, so a swap-out never waits for a
 * migration; between runs the worker yields to foreground reads.
 */
#include <linux/delay.h>
#include <linux/sched/mm.h>

#include "n2l-policies.h"
#include "nswap2l.h"

#define N2L_MIG_BATCH		256	/* candidates asked for at once */
#define N2L_MIG_YIELD_MS	20	/* longest wait for foreground reads */
#define N2L_POPULATE_BATCH	4096	/* slots a new policy learns per lock */

/* The candidates of one selection, grouped by copy. */
struct n2l_mig_run {
	n2l_slot_t first;
	u32 nr;
	u64 loc;		/* the Network RAM copies they share */
};

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
	cancel_delayed_work_sync(&s->mig.work);
}

static u32 reads_inflight(struct n2l_store *s)
{
	enum n2l_medium m;
	u32 n = 0;

	for_each_medium(m)
		n += atomic_read(&s->media[m].stats.reads_inflight);
	return n;
}

/* Let foreground reads go first, for a while. */
static void mig_yield(struct n2l_store *s)
{
	unsigned int waited;

	for (waited = 0; waited < N2L_MIG_YIELD_MS && reads_inflight(s); waited++)
		usleep_range(1000, 1500);
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

/*
 * The run's target: what the knobs ask, but no more than Network RAM
 * holds. Counted, so that what the engine moved can be held against it.
 */
static u64 mig_target(struct n2l_store *s, u64 swapouts)
{
	u64 target = min_t(u64, mig_amount(s, swapouts),
			   READ_ONCE(s->media[N2L_NETRAM].held));

	if (target) {
		atomic64_add(target, &s->stats.prefetch_target);
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
 * Step 1: up to @want candidates, grouped into runs in s->mig.runs; the
 * number of runs, and in @asked how many candidates the policy gave.
 */
static u32 mig_select(struct n2l_store *s, u64 want, u32 *asked)
{
	struct n2l_mig_run *runs = s->mig.runs;
	n2l_slot_t *v = s->mig.victims;
	u32 i, nruns = 0;
	sme_t e;

	spin_lock_irq(&s->lock);
	*asked = s->mig.policy ?
		 s->mig.policy->type->select(s->mig.policy, v,
					     min_t(u64, want, N2L_MIG_BATCH)) : 0;
	for (i = 0; i < *asked; i++) {
		e = slotmap_get(&s->map, v[i]);
		if (sme_medium(e) != N2L_NETRAM) {
			/* The policy is out of step: put it right. */
			if (sme_medium(e) == N2L_NONE)
				__n2l_pf_free(s, v[i]);
			else
				__n2l_pf_write(s, v[i], sme_medium(e));
			continue;
		}
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
 * A run that could not move stays a candidate, reported as swapped out
 * again so that it does not come straight back; one whose copy is lost
 * is no candidate any more.
 */
static void mig_give_back(struct n2l_store *s, struct n2l_mig_run *run, bool lost)
{
	n2l_slot_t slot;
	u32 i;

	spin_lock_irq(&s->lock);
	for (i = 0; i < run->nr; i++) {
		slot = to_slot(from_slot(run->first) + i);
		if (sme_medium(slotmap_get(&s->map, slot)) != N2L_NETRAM ||
		    sme_loc(slotmap_get(&s->map, slot)) != run->loc)
			continue;
		if (lost)
			__n2l_pf_free(s, slot);
		else
			__n2l_pf_write(s, slot, N2L_NETRAM);
	}
	spin_unlock_irq(&s->lock);
}

/* Steps 2 to 4 for one run; false once Flash is full. */
static bool mig_move_run(struct n2l_store *s, struct n2l_mig_run *run)
{
	struct n2l_reloc r = {
		.first = run->first, .nr = run->nr,
		.group = run->loc & (SME_GROUPS - 1),
		.vers = run->loc >> SME_GROUP_BITS,
		.data = s->mig.buf, .to = N2L_FLASH, .flags = SME_PREFETCHED,
	};
	bool lost, there;
	u64 tried = 0;
	int err;

	spin_lock_irq(&s->lock);
	there = sme_at(slotmap_get(&s->map, run->first), r.group, r.vers);
	if (there)
		s->netram.groups[r.group].refs++;
	spin_unlock_irq(&s->lock);
	if (!there)
		return true;	/* moved meanwhile */

	err = n2l_netram_read_any(s, r.group, from_slot(r.first), r.nr, r.vers,
				  r.data, 0, &tried);
	if (!err)
		err = n2l_relocate(s, &r);
	atomic64_add(r.moved, &s->stats.prefetched);
	spin_lock_irq(&s->lock);
	lost = !s->netram.groups[r.group].nr;
	__n2l_group_put(s, r.group);
	spin_unlock_irq(&s->lock);
	if (err == -ENOSPC)
		return false;
	if (err)
		mig_give_back(s, run, lost);
	return true;
}

static void mig_round(struct n2l_store *s, u64 want)
{
	u32 nruns, asked, i;

	while (want && READ_ONCE(s->mig.running)) {
		nruns = mig_select(s, want, &asked);
		if (!asked)
			return;
		want -= min_t(u64, want, asked);
		for (i = 0; i < nruns; i++) {
			if (!mig_move_run(s, &s->mig.runs[i]))
				return;
			mig_yield(s);
		}
		cond_resched();
	}
}

static void mig_work(struct work_struct *w)
{
	struct n2l_store *s = container_of(to_delayed_work(w), struct n2l_store,
					   mig.work);
	unsigned int noio = memalloc_noio_save();
	u64 swapouts;

	/* Disabled, it does not run: swap-outs count from its last run. */
	if (READ_ONCE(s->mig.knobs.enabled)) {
		swapouts = atomic64_xchg(&s->mig.swapouts, 0);
		if (swapouts)
			mig_round(s, mig_target(s, swapouts));
	}
	memalloc_noio_restore(noio);

	spin_lock_irq(&s->lock);
	__mig_schedule(s, msecs_to_jiffies(READ_ONCE(s->mig.knobs.interval_ms)));
	spin_unlock_irq(&s->lock);
}

/*----------------------------------------------------------------*/

int n2l_mig_init(struct n2l_store *s)
{
	struct n2l_mig *mig = &s->mig;

	mig->knobs = n2l_mig_defaults;
	INIT_DELAYED_WORK(&mig->work, mig_work);
	mig->victims = kvcalloc(N2L_MIG_BATCH, sizeof(*mig->victims), GFP_KERNEL);
	mig->runs = kvcalloc(N2L_MIG_BATCH, sizeof(*mig->runs), GFP_KERNEL);
	mig->buf = n2l_alloc_buffer(N2L_MAX_PAGES);
	mig->wq = alloc_workqueue("nswap2l-mig-%s", WQ_UNBOUND, 1,
				  dm_device_name(s->md));
	if (!mig->victims || !mig->runs || !mig->buf || !mig->wq)
		return -ENOMEM;
	return 0;
}

/* Copes with a partly made engine. */
void n2l_mig_exit(struct n2l_store *s)
{
	struct n2l_mig *mig = &s->mig;

	if (mig->wq) {
		n2l_mig_stop(s);
		destroy_workqueue(mig->wq);
		mig->wq = NULL;
	}
	n2l_prefetch_destroy(mig->policy);
	if (mig->buf)
		n2l_free_buffer(mig->buf);
	kvfree(mig->runs);
	kvfree(mig->victims);
}
