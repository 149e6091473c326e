// SPDX-License-Identifier: GPL-2.0-only
/*
 * When it is safe to reuse a block, and when a version may be stamped.
 *
 * A block freed by an overwrite elsewhere or a discard may still be the
 * target of a read or write mapped before it was freed. Every remapped
 * bio joins the current I/O generation (of two) while the lock is held,
 * and a freed block is quarantined under the current generation. To
 * release a quarantine the gate flips: new I/O joins the other
 * generation, and once the old one has no I/O in flight its quarantined
 * blocks are trimmed and put back. A second flip waits until the first
 * release is done. It is SRCU with two counters, specialised to blocks.
 *
 */
#include "nswap2l.h"

/*----------------------------------------------------------------*/

unsigned int n2l_gate_enter(struct n2l_store *s)
{
	unsigned int gen = s->gate.cur;

	lockdep_assert_held(&s->lock);
	atomic_inc(&s->gate.inflight[gen]);
	return gen;
}

/*
 * Pairs with the barrier in __gate_flip(): either the flip sees our
 * decrement, or we see the flip; whichever it is queues the release.
 */
void n2l_gate_exit(struct n2l_store *s, unsigned int gen)
{
	if (atomic_dec_and_test(&s->gate.inflight[gen]) &&
	    READ_ONCE(s->gate.cur) != gen)
		queue_work(s->wq, &s->worker);
}

static void __gate_flip(struct n2l_store *s)
{
	struct n2l_gate *g = &s->gate;

	lockdep_assert_held(&s->lock);
	if (g->draining)
		return;
	WRITE_ONCE(g->cur, g->cur ^ 1);
	g->draining = true;
	/* Order the flip before reading the count; see n2l_gate_exit(). */
	smp_mb();
	if (!atomic_read(&g->inflight[g->cur ^ 1]))
		queue_work(s->wq, &s->worker);
}

/* Quarantine blocks that I/O mapped before now may still be using. */
void __n2l_free_blocks(struct n2l_store *s, enum n2l_medium m, n2l_blk_t blk,
		       u32 len)
{
	lockdep_assert_held(&s->lock);
	runalloc_defer(&s->media[m].alloc, s->gate.cur, blk, len);
	__gate_flip(s);
}

/* Whether blocks wait for I/O to drain, or are on their way back. */
static bool __gate_pending(struct n2l_store *s)
{
	enum n2l_medium m;

	lockdep_assert_held(&s->lock);
	if (s->gate.releasing)
		return true;
	for_each_medium(m)
		if (runalloc_quarantined(&s->media[m].alloc, 0) ||
		    runalloc_quarantined(&s->media[m].alloc, 1))
			return true;
	return false;
}

/*
 * Whether blocks are in quarantine, so that room will appear shortly:
 * once I/O drains, or once a commit no longer names them.
 */
bool __n2l_free_pending(struct n2l_store *s)
{
	return __gate_pending(s) || __n2l_meta_holds(s);
}

/*----------------------------------------------------------------*/

#define N2L_TRIM_BATCH	32

struct n2l_run {
	n2l_blk_t blk;
	u32 len;
};

/* TRIM is a hint: a failure costs the medium some efficiency, no data. */
static void trim_runs(struct n2l_medium_dev *md, struct n2l_run *runs,
		      unsigned int nr)
{
	struct bio *bio = NULL;
	unsigned int i;
	int r = 0;

	for (i = 0; i < nr && !r; i++)
		r = __blkdev_issue_discard(md->bdev,
					   (sector_t)from_blk(runs[i].blk) << N2L_SLOT_SHIFT,
					   (sector_t)runs[i].len << N2L_SLOT_SHIFT,
					   GFP_NOIO, &bio);
	if (bio) {
		r = submit_bio_wait(bio);
		bio_put(bio);
	}
	if (r && r != -EOPNOTSUPP)
		DMERR_LIMIT("%s: TRIM failed: %d", n2l_medium_name(md->kind), r);
}

/*
 * Trim and put back everything quarantined on @md under @gen, a batch of
 * runs per hold of the lock: interrupts are off while it is held. Only
 * one worker takes from a quarantine (this one from the old generation's,
 * the metadata's from the one its commit covered), so it stays ours while
 * the lock is dropped.
 */
static void __release_medium(struct n2l_store *s, struct n2l_medium_dev *md,
			     unsigned int gen)
	__must_hold(&s->lock)
{
	struct n2l_run runs[N2L_TRIM_BATCH];
	unsigned int nr, i;

	for (;;) {
		for (nr = 0; nr < N2L_TRIM_BATCH; nr++) {
			runs[nr].len =
				runalloc_take_quarantined(&md->alloc, gen,
							  N2L_RELEASE_RUN,
							  &runs[nr].blk);
			if (!runs[nr].len)
				break;
		}
		if (!nr)
			return;
		spin_unlock_irq(&s->lock);
		if (md->discard)
			trim_runs(md, runs, nr);
		cond_resched();
		spin_lock_irq(&s->lock);
		for (i = 0; i < nr; i++)
			runalloc_put(&md->alloc, runs[i].blk, runs[i].len);
	}
}

/*
 * With a metadata device, drained blocks wait for the commit that stops
 * naming them: they move to the metadata's pending quarantine, untrimmed.
 */
static void __hold_medium(struct n2l_store *s, struct n2l_medium_dev *md,
			  unsigned int gen)
{
	unsigned int q = __n2l_meta_pending(s);
	n2l_blk_t blk;
	u32 len;

	while ((len = runalloc_take_quarantined(&md->alloc, gen,
						N2L_RELEASE_RUN, &blk)))
		runalloc_defer(&md->alloc, q, blk, len);
}

/*
 * A commit no longer names the blocks in quarantine @q: they go back,
 * trimmed first with the lock dropped. Meanwhile they are in no
 * quarantine, and a write that finds no room must still wait for them.
 */
void n2l_gate_release_held(struct n2l_store *s, unsigned int q)
{
	enum n2l_medium m;

	spin_lock_irq(&s->lock);
	s->gate.releasing++;
	for_each_medium(m)
		__release_medium(s, &s->media[m], q);
	s->gate.releasing--;
	spin_unlock_irq(&s->lock);
	/* Writes that waited for room try again. */
	queue_work(s->wq, &s->worker);
}

/*
 * Called from the worker: if the old generation has drained, release its
 * quarantine and flip again for frees that arrived meanwhile. Blocks are
 * put back only after their TRIM completed, so TRIM never hits new data.
 */
void n2l_gate_release(struct n2l_store *s)
{
	struct n2l_gate *g = &s->gate;
	unsigned int old;
	enum n2l_medium m;

	spin_lock_irq(&s->lock);
	old = g->cur ^ 1;
	if (g->draining && !atomic_read_acquire(&g->inflight[old])) {
		/* Blocks in our hands are room about to appear. */
		g->releasing++;
		for_each_medium(m)
			if (s->meta)
				__hold_medium(s, &s->media[m], old);
			else
				__release_medium(s, &s->media[m], old);
		g->releasing--;
		g->draining = false;
		if (__gate_pending(s))
			__gate_flip(s);
	}
	spin_unlock_irq(&s->lock);
}
