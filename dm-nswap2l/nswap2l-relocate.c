// SPDX-License-Identifier: GPL-2.0-only
/*
 * Relocation: moving a run of slots off their Network RAM copies (a group
 * and a version), their data in hand. Prefetching moves them to Flash;
 * drains, repairs, hand-backs (RETURN) and moves (MOVED) give them other
 * servers. The steps:
 *
 *  1. the new copies are made: fresh blocks are written, or the data is
 *     PUT to the servers added (a MOVED's server has it already);
 *  2. under the lock, every slot still at those copies and not being
 *     written points at the new ones, and the copies it leaves are
 *     invalidated;
 *  3. for a slot written, discarded or moved meanwhile the new copies are
 *     dropped, and only those: never a copy the slot map points at. So a
 *     relocation done twice (a MOVED or RETURN delivered again) changes
 *     nothing the first did not.
 *
 * The caller holds a reference on the source group, so that it keeps
 * naming the same servers while the lock is dropped.
 */
#include "nswap2l.h"
#include "nswap2l-trace.h"

static void count_moves(struct n2l_store *s, struct n2l_reloc *r, u32 done,
			u32 n, u32 moved, enum n2l_medium to)
{
	atomic64_add(moved, &s->media[N2L_NETRAM].stats.moved_out);
	atomic64_add(moved, &s->media[to].stats.moved_in);
	atomic64_add(n - moved, &s->stats.dropped);
	trace_nswap2l_migrate(s->devt, from_slot(r->first) + done, n, moved,
			      N2L_NETRAM, to);
}

static bool __still_there(struct n2l_reloc *r, sme_t e)
{
	return sme_at(e, r->group, r->vers) && !(sme_flags(e) & SME_WRITING);
}

/*
 * The flags of a slot that moves: it is prefetched only if this move is a
 * prefetch (a slot is prefetched while it stays where the engine put it).
 */
static unsigned int moved_flags(struct n2l_reloc *r, sme_t e)
{
	return (sme_flags(e) & ~SME_PREFETCH_FLAGS) | r->flags;
}

/*----------------------------------------------------------------*/
/* To a block medium. */

static u32 install_blocks(struct n2l_store *s, struct n2l_reloc *r, u32 done,
			  u32 n, enum n2l_medium m, u32 blk)
{
	n2l_slot_t slot;
	u32 i, moved = 0;
	sme_t e, new;

	spin_lock_irq(&s->lock);
	for (i = 0; i < n; i++) {
		slot = to_slot(from_slot(r->first) + done + i);
		e = slotmap_get(&s->map, slot);
		if (!__still_there(r, e)) {
			runalloc_put(&s->media[m].alloc, to_blk(blk + i), 1);
			continue;
		}
		new = sme_make(m, blk + i, moved_flags(r, e));
		__n2l_free_copy(s, slot, e);
		slotmap_set(&s->map, slot, new);
		__n2l_held_add(s, new, 1);
		__n2l_pf_free(s, slot);
		moved++;
	}
	spin_unlock_irq(&s->lock);
	count_moves(s, r, done, n, moved, m);
	return moved;
}

/* The block medium to move to: @r's, or what placement says without Network RAM. */
static enum n2l_medium __block_target(struct n2l_store *s, struct n2l_reloc *r)
{
	u32 free[N2L_NR_MEDIA];

	if (r->to != N2L_NONE)
		return r->to;
	__n2l_media_free(s, free, 0);
	free[N2L_NETRAM] = 0;
	return __n2l_ask_placement(s, free, N2L_NONE);
}

static int reloc_blocks(struct n2l_store *s, struct n2l_reloc *r)
{
	u32 done = 0, n;
	enum n2l_medium m;
	n2l_blk_t blk;
	int err;

	while (done < r->nr) {
		if (r->have_blk) {
			/* the caller took them: all the run's, at once */
			m = r->to;
			n = r->nr;
			blk = r->blk;
			r->have_blk = false;
		} else {
			spin_lock_irq(&s->lock);
			m = __block_target(s, r);
			n = m == N2L_NONE ? 0 :
			    runalloc_get(&s->media[m].alloc, r->nr - done, &blk);
			spin_unlock_irq(&s->lock);
		}
		if (!n)
			return -ENOSPC;
		err = n2l_block_io(s, r->data, done, n, m, from_blk(blk),
				   REQ_OP_WRITE);
		if (err) {
			spin_lock_irq(&s->lock);
			runalloc_put(&s->media[m].alloc, blk, n);
			spin_unlock_irq(&s->lock);
			return err;
		}
		r->moved += install_blocks(s, r, done, n, m, from_blk(blk));
		done += n;
	}
	return 0;
}

/*----------------------------------------------------------------*/
/* To other servers. */

/*
 * A slot that did not move: the copies made for it on @added go, except
 * one the slot points at (this move done before, or another to there).
 */
static void __drop_added(struct n2l_store *s, n2l_slot_t slot, sme_t e,
			 u64 vers, const u8 *added, unsigned int nadded)
{
	bool points = sme_medium(e) == N2L_NETRAM && sme_vers(e) == vers;
	unsigned int i;

	for (i = 0; i < nadded; i++)
		if (!points ||
		    !n2l_group_has(&s->netram.groups[sme_group(e)], added[i]))
			n2l_net_inval(s->netram.net, added[i], from_slot(slot), vers);
}

/* A slot whose last copy goes with no new one: lost. */
static void __mark_lost(struct n2l_store *s, n2l_slot_t slot, sme_t e)
{
	__n2l_held_add(s, e, -1);
	__n2l_pf_free(s, slot);
	slotmap_set(&s->map, slot, sme_make(N2L_NONE, 0, SME_LOST));
	s->netram.lost_marked++;
}

/*
 * Step 2 for servers, under the lock, slot by slot: a slot moves only if
 * it is still at the copies the move was decided on (the entry may have
 * changed since). 0, or -ENOSPC if no group was free (none moved).
 */
static int install_servers(struct n2l_store *s, struct n2l_reloc *r,
			   u8 *added, u32 *epoch, unsigned int nadded)
{
	unsigned int nkeep, fresh;
	const u8 *keep;
	n2l_slot_t slot;
	u32 i, moved = 0;
	sme_t e, new;
	int g;

	spin_lock_irq(&s->lock);
	/* A server that restarted since it took its copies has none. */
	fresh = __n2l_fresh_copies(s, added, epoch, nadded);
	g = nadded && !fresh ? -ENOSPC :
	    __n2l_group_change(s, r->group, r->drop, r->ndrop, added, fresh);
	keep = g >= 0 ? s->netram.groups[g].srv : NULL;
	nkeep = g >= 0 ? s->netram.groups[g].nr : 0;
	for (i = 0; i < r->nr; i++) {
		slot = to_slot(from_slot(r->first) + i);
		e = slotmap_get(&s->map, slot);
		if (!__still_there(r, e) || g == -ENOSPC) {
			__drop_added(s, slot, e, r->vers, added, nadded);
			continue;
		}
		__n2l_netram_inval_group(s, r->group, slot, r->vers, keep, nkeep);
		if (g < 0) {
			__mark_lost(s, slot, e);
		} else {
			new = sme_make(N2L_NETRAM, sme_netram_loc(g, r->vers),
				       moved_flags(r, e));
			__n2l_held_add(s, e, -1);
			slotmap_set(&s->map, slot, new);
			__n2l_held_add(s, new, 1);
			/* a restarted server's new process may have them */
			__drop_added(s, slot, new, r->vers, added + fresh,
				     nadded - fresh);
		}
		moved++;
	}
	if (g >= 0)
		__n2l_group_put(s, g);
	if (!r->add_present)
		for (i = 0; i < nadded; i++)
			n2l_netram_settled(s, added[i]);
	spin_unlock_irq(&s->lock);
	if (nadded)
		count_moves(s, r, 0, r->nr, moved, N2L_NETRAM);
	r->moved += moved;
	return g == -ENOSPC ? -ENOSPC : 0;
}

static int reloc_servers(struct n2l_store *s, struct n2l_reloc *r)
{
	u32 epoch[N2L_MAX_REPLICAS];
	u8 added[N2L_MAX_REPLICAS];
	unsigned int i, nadded = 0;

	for (i = 0; i < r->nadd; i++) {
		epoch[nadded] = r->add_present ? r->epoch[i] :
				READ_ONCE(s->netram.restarts[r->add[i]]);
		if (!r->add_present &&
		    n2l_netram_put_sync(s, r->add[i], from_slot(r->first), r->nr,
					r->vers, r->data, 0))
			continue;
		added[nadded++] = r->add[i];
	}
	if (r->nadd && !nadded)
		return -ENOSPC;
	n2l_test_delay(N2L_TEST_RELOCATED, "before a relocation installs its copies");
	return install_servers(s, r, added, epoch, nadded);
}

/*----------------------------------------------------------------*/

/*
 * Move the slots of @r, their data in r->data (unless only servers go),
 * off (r->group, r->vers). Returns 0, -ENOSPC when nothing could take
 * them, or an I/O error; r->moved counts the slots that moved. A slot
 * changed since the move was decided stays as it is: 0 does not mean
 * that every slot moved, and a caller that tells a server it may drop
 * its copies must look at the slot map first.
 */
int n2l_relocate(struct n2l_store *s, struct n2l_reloc *r)
{
	if (r->to == N2L_NETRAM)
		return reloc_servers(s, r);
	return reloc_blocks(s, r);
}

/*
 * Up to @want servers with room for @r's slots that hold no copy of them
 * and are not leaving, into r->add; how many.
 */
u32 n2l_relocate_pick(struct n2l_store *s, struct n2l_reloc *r,
		      unsigned int want)
{
	const struct n2l_group *grp;
	u64 avoid;
	unsigned int i;

	spin_lock_irq(&s->lock);
	grp = &s->netram.groups[r->group];
	avoid = s->netram.draining | __n2l_deferred_moving(s);
	for (i = 0; i < grp->nr; i++)
		avoid |= BIT_ULL(grp->srv[i]);
	spin_unlock_irq(&s->lock);
	for (i = 0; i < r->ndrop; i++)
		avoid |= BIT_ULL(r->drop[i]);
	r->nadd = n2l_net_best(s->netram.net, r->nr, avoid, s->netram.srv_held,
			       min_t(unsigned int, want, N2L_MAX_REPLICAS), r->add);
	return r->nadd;
}
