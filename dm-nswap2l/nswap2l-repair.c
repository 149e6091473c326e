// SPDX-License-Identifier: GPL-2.0-only
/*
 * What servers do to the slot map, and how the device mends it.
 *
 * Events from the client (nswap-net/kclient/netram.h), each in its
 * server's event work:
 *   - a server that restarted kept nothing: it leaves every group;
 *   - reconciliation lists what the slot map expects on a server, and
 *     copies it no longer has leave their slots;
 *   - MOVED: the pages are read back from the peer, their seals checked,
 *     claimed there, and only then do their slots point at it;
 *   - RETURN: the pages go to another server, else to Flash or disk;
 *   - a server usable again, or away: writes waiting go, repairs start.
 *
 * The repair work, on a queue of its own, walks the slot map a batch at a
 * time and:
 *   - drains servers being removed: their copies are made elsewhere from
 *     any copy, and a server leaves once no slot and no write needs it;
 *   - gives slots with fewer reachable copies than replicas their copies
 *     back, from a surviving one (or moves them to Flash or disk when no
 *     server has room);
 *   - marks the slots of groups left with no server as lost.
 */
#include <linux/delay.h>
#include <linux/moduleparam.h>
#include <linux/sched/mm.h>

#include "nswap2l.h"

#define N2L_SCAN_BATCH		1024	/* slots looked at per hold of the lock */
#define N2L_REPAIR_MS		1000	/* between passes while work remains */
#define N2L_REPAIR_MAX_MS	30000	/* ... when none of it could be done */
#define N2L_MENDERS		8	/* runs mended side by side */
#define N2L_MEND_PAGES		16	/* longest run a mender takes at once */

/* The test-only pauses (enum n2l_test_site): off (0) unless a test sets them. */
static unsigned int test_delay_ms;
module_param(test_delay_ms, uint, 0644);
MODULE_PARM_DESC(test_delay_ms,
		 "Testing only: pause this long at the places test_delay_at names");
static unsigned int test_delay_at;
module_param(test_delay_at, uint, 0644);
MODULE_PARM_DESC(test_delay_at,
		 "Testing only: where to pause (bits): 1 a MOVED or RETURN before it installs, 2 a repair kick before it queues, 4 the repair work as it starts, 8 a relocation with its copies made, before it installs, 16 a reconciliation with copies listed, before it retains them, 32 a commit with its lists switched, before it copies the map");

/* A pause at @site if a test asked for one; never where we may not sleep. */
void n2l_test_delay(unsigned int site, const char *what)
{
	unsigned int ms = READ_ONCE(test_delay_ms);

	if (!ms || !(READ_ONCE(test_delay_at) & site) || irqs_disabled())
		return;
	pr_info("nswap2l: test delay: %u ms %s\n", ms, what);
	msleep(ms);
}

static const char *store_name(struct n2l_store *s)
{
	return dm_device_name(s->md);
}

static void server_name(struct n2l_store *s, unsigned int idx, char *buf)
{
	if (n2l_net_server_name(s->netram.net, idx, buf, N2L_ADDR_LEN) < 0)
		snprintf(buf, N2L_ADDR_LEN, "#%u", idx);
}

/*
 * Queue the repair work: @now, or after its own delay (if it is not
 * queued already). Never once the device stops: the check and the
 * queueing are one step under kick_lock, so that nothing queues it after
 * n2l_repair_stop() has cancelled it. Any context: the I/O path kicks
 * under the store's lock.
 */
static void repair_queue(struct n2l_store *s, bool now)
{
	struct n2l_netram *nr = &s->netram;
	unsigned long flags;

	spin_lock_irqsave(&nr->kick_lock, flags);
	if (!nr->stopping && now)
		mod_delayed_work(nr->repair_wq, &nr->repair, 0);
	else if (!nr->stopping)
		queue_delayed_work(nr->repair_wq, &nr->repair,
				   msecs_to_jiffies(nr->repair_delay));
	spin_unlock_irqrestore(&nr->kick_lock, flags);
}

void n2l_repair_kick(struct n2l_store *s)
{
	n2l_test_delay(N2L_TEST_KICK, "before a repair kick queues");
	repair_queue(s, true);
}

/*
 * Copies of @idx that are gone (@copies), out of their slots' groups; how
 * many the slot map still named.
 */
static u32 drop_copies(struct n2l_store *s, unsigned int idx,
		       const struct n2l_copy *copies, u32 n)
{
	u8 drop = idx;
	u32 i, lost = 0, named = 0;
	sme_t e, new;
	int g;

	spin_lock_irq(&s->lock);
	for (i = 0; i < n; i++) {
		n2l_slot_t slot = to_slot(copies[i].key);

		e = slotmap_get(&s->map, slot);
		if (sme_medium(e) != N2L_NETRAM || sme_vers(e) != copies[i].vers ||
		    !n2l_group_has(&s->netram.groups[sme_group(e)], idx))
			continue;
		named++;
		g = __n2l_group_change(s, sme_group(e), &drop, 1, NULL, 0);
		if (g == -ENOSPC)
			continue;
		__n2l_held_add(s, e, -1);
		if (g < 0) {
			__n2l_pf_free(s, slot);
			new = sme_make(N2L_NONE, 0, SME_LOST |
				       (sme_flags(e) & SME_WRITING));
			s->netram.lost_marked++;
			lost++;
		} else {
			new = sme_make(N2L_NETRAM, sme_netram_loc(g, copies[i].vers),
				       sme_flags(e));
			__n2l_held_add(s, new, 1);
			__n2l_group_put(s, g);
		}
		slotmap_set(&s->map, slot, new);
	}
	spin_unlock_irq(&s->lock);
	if (lost)
		DMERR_LIMIT("%s: %u slots lost: their only copy is gone",
			    store_name(s), lost);
	n2l_repair_kick(s);
	return named;
}

/*----------------------------------------------------------------*/
/* Events from the client. */

static void ev_restarted(void *owner, unsigned int idx)
{
	struct n2l_store *s = owner;
	char name[N2L_ADDR_LEN];
	u32 lost;

	spin_lock_irq(&s->lock);
	lost = __n2l_groups_drop_server(s, idx);
	s->netram.restarts[idx]++;
	spin_unlock_irq(&s->lock);
	server_name(s, idx, name);
	DMERR("%s: server %s restarted: the copies it held are gone (%u slots lost)",
	      store_name(s), name, lost);
	n2l_repair_kick(s);
}

static int ev_list_copies(void *owner, unsigned int idx, u64 *cursor,
			  struct n2l_copy *copies, u32 max)
{
	struct n2l_store *s = owner;
	u32 nr = n2l_nr_slots(s), end, i, n = 0;
	sme_t e;

	if (!*cursor && !n2l_netram_wait_settled(s, idx))
		return -ETIMEDOUT;
	while (*cursor < nr && n < max) {
		spin_lock_irq(&s->lock);
		end = min_t(u64, *cursor + N2L_SCAN_BATCH, nr);
		for (i = *cursor; i < end && n < max; i++) {
			e = slotmap_get(&s->map, to_slot(i));
			if (sme_medium(e) == N2L_NETRAM &&
			    n2l_group_has(&s->netram.groups[sme_group(e)], idx)) {
				copies[n].key = i;
				copies[n].vers = sme_vers(e);
				n++;
			}
		}
		*cursor = i;
		spin_unlock_irq(&s->lock);
		cond_resched();
	}
	if (*cursor >= nr)
		n += n2l_deferred_list(s, idx, nr, cursor, copies + n, max - n);
	if (n)
		n2l_test_delay(N2L_TEST_LISTED, "with copies listed, before they are retained");
	return n;
}

static u32 ev_missing(void *owner, unsigned int idx,
		      const struct n2l_copy *copies, u32 n)
{
	return drop_copies(owner, idx, copies, n);
}

static void ev_usable(void *owner, unsigned int idx)
{
	struct n2l_store *s = owner;

	queue_work(s->wq, &s->worker);
	n2l_repair_kick(s);
	n2l_netram_check_size(s);
}

static void ev_room(void *owner)
{
	struct n2l_store *s = owner;

	queue_work(s->wq, &s->worker);
}

static void ev_away(void *owner, unsigned int idx)
{
	struct n2l_store *s = owner;

	/* Writes waiting for it give up; its groups get repaired. */
	queue_work(s->wq, &s->worker);
	n2l_repair_kick(s);
	n2l_netram_check_size(s);
}

/*
 * The entries of @c that form one run for moves: consecutive keys, one
 * version, and the same slot map location (*@first), up to @count.
 */
static u32 __run_of(struct n2l_store *s, const struct n2l_copy *c, u32 count,
		    sme_t *first)
{
	u32 n = 1;

	lockdep_assert_held(&s->lock);
	*first = slotmap_get(&s->map, to_slot(c[0].key));
	while (n < count && n < N2L_MAX_PAGES &&
	       c[n].key == c[0].key + n && c[n].vers == c[0].vers &&
	       slotmap_get(&s->map, to_slot(c[n].key)) == *first)
		n++;
	return n;
}

/* Whether entry @e is a copy (@vers) that server @idx holds for it. */
static bool __on_server(struct n2l_store *s, sme_t e, u64 vers,
			unsigned int idx)
{
	return sme_medium(e) == N2L_NETRAM && sme_vers(e) == vers &&
	       n2l_group_has(&s->netram.groups[sme_group(e)], idx);
}

/* Servers of @g but @idx that can serve reads now or soon (not away). */
static unsigned int __live_others(struct n2l_store *s, unsigned int g,
				  unsigned int idx)
{
	const struct n2l_group *grp = &s->netram.groups[g];
	struct n2l_net_info info;
	unsigned int i, n = 0;

	for (i = 0; i < grp->nr; i++)
		if (grp->srv[i] != idx &&
		    n2l_net_server_info(s->netram.net, grp->srv[i], &info) &&
		    info.state != N2L_SRV_AWAY && info.state != N2L_SRV_STOPPED)
			n++;
	return n;
}

/*
 * What to answer server @from, which gives up the run of @n copies at
 * @c: OK only once no slot of it names @from's copy. The relocation that
 * was to move them decided on the slot map as it was when the run was
 * read; it skips slots that changed since (another server's move or
 * hand-back of the same slots, a repair, a write in flight that may yet
 * fail), may find no group free, or may fail to write. Told OK then,
 * the server would drop a copy the slot map still names, perhaps the
 * last one; told FULL, it keeps it and asks again, and the next time
 * the run is read as it is then.
 */
static int answer_for(struct n2l_store *s, unsigned int from,
		      const struct n2l_copy *c, u32 n)
{
	bool names = false;
	u32 i;

	spin_lock_irq(&s->lock);
	for (i = 0; i < n && !names; i++)
		names = __on_server(s, slotmap_get(&s->map, to_slot(c->key + i)),
				    c->vers, from);
	spin_unlock_irq(&s->lock);
	return names ? N2L_ST_FULL : N2L_ST_OK;
}

/*
 * Whether server @to may take a MOVED's copies: still a server of the
 * device and not leaving. Seen under the lock, in the same hold that
 * counts the move as unsettled on @to: a drain that starts after it
 * keeps @to until the move is installed (finish_drains), and one that
 * started before shows here (the client's draining flag is set before
 * the store's and stays until the server is removed).
 */
static bool __may_take(struct n2l_store *s, unsigned int to)
{
	return (s->netram.present & BIT_ULL(to)) &&
	       !(s->netram.draining & BIT_ULL(to)) &&
	       n2l_net_usable(s->netram.net, to);
}

/*
 * The first run of a MOVED from @from to @to in @c (*@n of its @count
 * copies). Only once the pages read back from @to with good seals, and
 * are claimed there, do the slots still on @from's copies point at
 * @to's; a run already moved is claimed again and left alone. Until the
 * move is installed, @to counts it as a write of its own (unsettled): a
 * reconciliation of @to waits for it (else it would drop the claimed
 * pages that no slot names yet), and a drain cannot remove @to.
 */
static int moved_run(struct n2l_store *s, unsigned int from, unsigned int to,
		     const struct n2l_copy *c, u32 count, u32 *n,
		     struct bio *buf)
{
	struct n2l_reloc r = {
		.first = to_slot(c->key), .vers = c->vers,
		.to = N2L_NETRAM, .drop = { from }, .ndrop = 1,
		.add = { to }, .nadd = 1, .add_present = true,
	};
	bool here, there;
	sme_t e;
	int err;
	u32 i;

	spin_lock_irq(&s->lock);
	*n = __run_of(s, c, count, &e);
	here = __on_server(s, e, c->vers, from);
	there = __on_server(s, e, c->vers, to);
	if (here && !__may_take(s, to)) {
		spin_unlock_irq(&s->lock);
		return N2L_ST_FULL;	/* @to leaves: @from keeps them for now */
	}
	if (here) {
		s->netram.groups[sme_group(e)].refs++;
		atomic_inc(&s->netram.unsettled[to]);
	}
	if (!here && !there) {
		/* Written or moved since: the peer's copies are junk. */
		for (i = 0; i < *n; i++)
			n2l_net_inval(s->netram.net, to, c->key + i, c->vers);
	}
	spin_unlock_irq(&s->lock);
	if (!here && !there)
		return N2L_ST_OK;

	r.nr = *n;
	r.group = sme_group(e);
	r.epoch[0] = READ_ONCE(s->netram.restarts[to]);
	err = here ? n2l_netram_get_sync(s, to, c->key, *n, c->vers, buf, 0) : 0;
	if (!err)
		err = n2l_net_claim(s->netram.net, to, c, *n);
	if (!err && here) {
		n2l_test_delay(N2L_TEST_INSTALL, "before a MOVED installs");
		err = n2l_relocate(s, &r);
	}
	if (here) {
		spin_lock_irq(&s->lock);
		__n2l_group_put(s, r.group);
		spin_unlock_irq(&s->lock);
		n2l_netram_settled(s, to);
	}
	return err ? N2L_ST_FULL : answer_for(s, from, c, *n);
}

/*
 * OK lets the server drop its pages, which a committed map may still
 * name: with metadata, a commit first (else FULL: it keeps them).
 */
static int settled_answer(struct n2l_store *s)
{
	return n2l_meta_sync(s) ? N2L_ST_FULL : N2L_ST_OK;
}

/*
 * The read-back buffer is the device's: another server's MOVED may have
 * it, for as long as its requests take (they time out), never waiting
 * for memory or for another event.
 */
static int ev_moved(void *owner, unsigned int from, unsigned int to,
		    const struct n2l_copy *copies, u32 count)
{
	struct n2l_store *s = owner;
	struct bio *buf = s->netram.move_buf;
	int status = N2L_ST_OK;
	u32 i, n;

	mutex_lock(&s->netram.move_lock);
	for (i = 0; i < count && status == N2L_ST_OK; i += n)
		status = moved_run(s, from, to, &copies[i], count - i, &n, buf);
	mutex_unlock(&s->netram.move_lock);
	status = status ?: settled_answer(s);
	if (status == N2L_ST_OK)
		atomic64_add(count, &s->netram.moved_pages);
	/* A move to a server with the other copy leaves one copy fewer. */
	n2l_repair_kick(s);
	return status;
}

/*
 * The first run of a RETURN from @from in @c (*@n of its @count copies,
 * their pages in @pages from @at on): another server takes the place of
 * @from in the slots' group; with none, the other servers of the group
 * that can be reached keep theirs; with none of those (an away server's
 * copy is no copy to leave a slot with), the slots go to Flash or disk.
 */
static int returned_run(struct n2l_store *s, unsigned int from,
			const struct n2l_copy *c, u32 count, u32 *n,
			struct bio *pages, u32 at)
{
	struct n2l_reloc r = {
		.first = to_slot(c->key), .vers = c->vers,
		.to = N2L_NETRAM, .drop = { from }, .ndrop = 1,
	};
	unsigned int others;
	sme_t e;
	int err;

	spin_lock_irq(&s->lock);
	*n = __run_of(s, c, count, &e);
	if (!__on_server(s, e, c->vers, from)) {
		spin_unlock_irq(&s->lock);
		return N2L_ST_OK;	/* written or moved since: nothing to keep */
	}
	r.nr = *n;
	r.group = sme_group(e);
	s->netram.groups[r.group].refs++;
	others = __live_others(s, r.group, from);
	spin_unlock_irq(&s->lock);

	r.data = n2l_sub_bio(s, pages, at, *n);
	if (!n2l_relocate_pick(s, &r, 1) && !others)
		r.to = N2L_NONE;
	n2l_test_delay(N2L_TEST_INSTALL, "before a RETURN installs");
	err = n2l_relocate(s, &r);
	if (err == -ENOSPC && r.to == N2L_NETRAM) {
		/* No server took them after all, or no group was free. */
		r.to = N2L_NONE;
		err = n2l_relocate(s, &r);
	}
	bio_put(r.data);
	spin_lock_irq(&s->lock);
	__n2l_group_put(s, r.group);
	spin_unlock_irq(&s->lock);
	return err ? N2L_ST_FULL : answer_for(s, from, c, *n);
}

static int ev_returned(void *owner, unsigned int from,
		       const struct n2l_copy *copies, u32 count,
		       struct bio *pages, const unsigned long *bad)
{
	struct n2l_store *s = owner;
	u32 i, n;

	for (i = 0; i < count; i += n) {
		if (test_bit(i, bad)) {
			/* Not the page we wrote: that copy is as good as gone. */
			drop_copies(s, from, &copies[i], 1);
			n = 1;
			continue;
		}
		if (returned_run(s, from, &copies[i],
				 find_next_bit(bad, count, i) - i, &n, pages,
				 i) != N2L_ST_OK)
			return N2L_ST_FULL;	/* keep them; ask again later */
	}
	if (settled_answer(s))
		return N2L_ST_FULL;
	atomic64_add(count, &s->netram.returned_pages);
	n2l_repair_kick(s);
	return N2L_ST_OK;
}

const struct n2l_net_ops n2l_net_ops = {
	.restarted = ev_restarted,
	.list_copies = ev_list_copies,
	.missing = ev_missing,
	.usable = ev_usable,
	.room = ev_room,
	.away = ev_away,
	.moved = ev_moved,
	.returned = ev_returned,
};

/*----------------------------------------------------------------*/
/* The repair work. */

enum repair_need { NEED_NOTHING, NEED_LOST, NEED_DRAIN, NEED_COPIES };

/* What each group needs, worked out once per pass. */
struct repair_plan {
	u8 need[SME_GROUPS];
	u8 leaving[SME_GROUPS];		/* NEED_DRAIN: the server that leaves */
	bool any;
};

static enum repair_need __group_need(struct n2l_store *s, unsigned int g,
				     u8 *leaving)
{
	const struct n2l_group *grp = &s->netram.groups[g];
	unsigned int i;

	if (!grp->held)
		return NEED_NOTHING;
	if (!grp->nr)
		return NEED_LOST;
	for (i = 0; i < grp->nr; i++) {
		if (s->netram.draining & BIT_ULL(grp->srv[i])) {
			*leaving = grp->srv[i];
			return NEED_DRAIN;
		}
	}
	if (__n2l_group_live(s, g) < READ_ONCE(s->netram.replicas))
		return NEED_COPIES;
	return NEED_NOTHING;
}

static void make_plan(struct n2l_store *s, struct repair_plan *p)
{
	unsigned int g;

	p->any = false;
	spin_lock_irq(&s->lock);
	for (g = 0; g < SME_GROUPS; g++) {
		p->need[g] = __group_need(s, g, &p->leaving[g]);
		p->any |= p->need[g] != NEED_NOTHING;
	}
	spin_unlock_irq(&s->lock);
}

/* What slot entry @e needs, by its group's plan. */
static enum repair_need slot_need(const struct repair_plan *p, sme_t e)
{
	if (sme_medium(e) != N2L_NETRAM || (sme_flags(e) & SME_WRITING))
		return NEED_NOTHING;
	return p->need[sme_group(e)];
}

/* Servers of @g that are away: their copies are not worth keeping. */
static unsigned int away_members(struct n2l_store *s, unsigned int g, u8 *out)
{
	const struct n2l_group *grp = &s->netram.groups[g];
	struct n2l_net_info info;
	unsigned int i, n = 0;

	for (i = 0; i < grp->nr; i++)
		if (n2l_net_server_info(s->netram.net, grp->srv[i], &info) &&
		    info.state == N2L_SRV_AWAY)
			out[n++] = grp->srv[i];
	return n;
}

/*
 * Mend one run: read it from a copy, then give it the copies it lacks
 * (dropping a leaving or away server's), else move it to Flash or disk:
 * always when no server has room and a drain would leave it no copy
 * that can be read. False if it could not be done now.
 */
static bool mend_run(struct n2l_store *s, struct n2l_reloc *r,
		     enum repair_need need, unsigned int leaving)
{
	unsigned int have, want;
	u64 tried = 0;
	int err;

	spin_lock_irq(&s->lock);
	if (need == NEED_DRAIN) {
		/*
		 * An away server's copy is no copy to leave a slot with:
		 * only the others that can be read count as holders.
		 */
		r->drop[0] = leaving;
		r->ndrop = 1;
		have = __live_others(s, r->group, leaving);
	} else {
		r->ndrop = away_members(s, r->group, r->drop);
		have = s->netram.groups[r->group].nr - r->ndrop;
	}
	spin_unlock_irq(&s->lock);

	err = n2l_netram_read_any(s, r->group, from_slot(r->first), r->nr,
				  r->vers, r->data, 0, &tried);
	if (err)
		return false;
	want = READ_ONCE(s->netram.replicas);
	r->to = N2L_NETRAM;
	if (!n2l_relocate_pick(s, r, want > have ? want - have : 0) &&
	    (need != NEED_DRAIN || !have))
		r->to = N2L_NONE;	/* no server has room: a block medium */
	err = n2l_relocate(s, r);
	if (err == -ENOSPC && r->to == N2L_NETRAM) {
		/* The servers said they had room, then did not: a block medium. */
		r->to = N2L_NONE;
		err = n2l_relocate(s, r);
	}
	if (!err && need == NEED_COPIES)
		atomic64_add(r->moved, &s->netram.rereplicated);
	return !err && r->moved;
}

/*
 * The slots of a group with no server left are lost: mark them. A slot
 * of the run may be being written (the run is cut by location, not by
 * flags): it stays so, or a second write of it could overtake the first.
 */
static void __mark_lost_run(struct n2l_store *s, u32 first, u32 n)
{
	n2l_slot_t slot;
	u32 i;
	sme_t e;

	for (i = 0; i < n; i++) {
		slot = to_slot(first + i);
		e = slotmap_get(&s->map, slot);
		__n2l_held_add(s, e, -1);
		__n2l_pf_free(s, slot);
		slotmap_set(&s->map, slot, sme_make(N2L_NONE, 0, SME_LOST |
					      (sme_flags(e) & SME_WRITING)));
		s->netram.lost_marked++;
	}
}

/*
 * Menders copy runs side by side: a run is mostly one slot (swap writes
 * them one by one), and two round trips each, one after the other, would
 * leave the links idle. Each has a buffer of its own; longer runs are
 * cut to its size.
 */
struct n2l_mender {
	struct n2l_store *s;
	struct work_struct work;
	struct n2l_reloc r;
	enum repair_need need;
	unsigned int leaving;
	bool mended;
	struct bio *buf;
	atomic_t *pending;
	struct completion *done;
};

static void mender_work(struct work_struct *w)
{
	struct n2l_mender *m = container_of(w, struct n2l_mender, work);
	unsigned int noio = memalloc_noio_save();
	struct n2l_store *s = m->s;

	m->mended = mend_run(s, &m->r, m->need, m->leaving);
	spin_lock_irq(&s->lock);
	__n2l_group_put(s, m->r.group);
	spin_unlock_irq(&s->lock);
	memalloc_noio_restore(noio);
	if (atomic_dec_and_test(m->pending))
		complete(m->done);
}

/*
 * The next run from *@cursor that needs mending, referenced and described
 * in @m; false at the end of the map. Lost runs are marked on the way.
 */
static bool next_run(struct n2l_store *s, const struct repair_plan *p,
		     u32 *cursor, struct n2l_mender *m)
{
	u32 nr = n2l_nr_slots(s), end, n;
	enum repair_need need;
	sme_t e;

	while (*cursor < nr && !READ_ONCE(s->netram.stopping)) {
		spin_lock_irq(&s->lock);
		end = min(*cursor + N2L_SCAN_BATCH, nr);
		for (need = NEED_NOTHING; *cursor < end; (*cursor)++) {
			e = slotmap_get(&s->map, to_slot(*cursor));
			need = slot_need(p, e);
			if (need != NEED_NOTHING)
				break;
		}
		if (need == NEED_NOTHING) {
			spin_unlock_irq(&s->lock);
			cond_resched();
			continue;
		}
		n = min(slotmap_contiguous(&s->map, to_slot(*cursor), nr - *cursor),
			(u32)N2L_MEND_PAGES);
		if (need == NEED_LOST) {
			/* Only if the group is still empty: groups change. */
			if (!s->netram.groups[sme_group(e)].nr)
				__mark_lost_run(s, *cursor, n);
			spin_unlock_irq(&s->lock);
			*cursor += n;
			continue;
		}
		memset(&m->r, 0, sizeof(m->r));
		m->r.first = to_slot(*cursor);
		m->r.nr = n;
		m->r.group = sme_group(e);
		m->r.vers = sme_vers(e);
		m->r.data = m->buf;
		m->need = need;
		m->leaving = p->leaving[m->r.group];
		s->netram.groups[m->r.group].refs++;
		spin_unlock_irq(&s->lock);
		*cursor += n;
		return true;
	}
	return false;
}

/* One pass over the slot map; the number of runs mended, or -1 if none could be. */
static int repair_pass(struct n2l_store *s, const struct repair_plan *p)
{
	struct n2l_mender *menders = s->netram.menders;
	DECLARE_COMPLETION_ONSTACK(done);
	int mended = 0, failed = 0;
	unsigned int i, n;
	atomic_t pending;
	u32 cursor = 0;

	do {
		for (n = 0; n < N2L_MENDERS; n++)
			if (!next_run(s, p, &cursor, &menders[n]))
				break;
		if (!n)
			break;
		reinit_completion(&done);
		atomic_set(&pending, n);
		for (i = 0; i < n; i++) {
			menders[i].pending = &pending;
			menders[i].done = &done;
			queue_work(s->netram.mend_wq, &menders[i].work);
		}
		wait_for_completion(&done);
		for (i = 0; i < n; i++) {
			if (menders[i].mended)
				mended++;
			else
				failed++;
		}
	} while (n == N2L_MENDERS);
	return failed && !mended ? -1 : mended;
}

/* Whether drained server @idx is still needed: by a slot, or a write in flight. */
static bool __drain_needed(struct n2l_store *s, unsigned int idx)
{
	unsigned int g;

	if (s->netram.srv_held[idx] || atomic_read(&s->netram.unsettled[idx]))
		return true;
	for (g = 0; g < SME_GROUPS; g++)
		if (s->netram.groups[g].refs &&
		    n2l_group_has(&s->netram.groups[g], idx))
			return true;
	return false;
}

/*
 * A drained server leaves once no slot and no write in flight needs it.
 * It stops being a server of the device before the client frees its
 * index, and under the config_lock, so that a server added meanwhile can
 * neither be given that index while the device still counts it, nor lose
 * it when the old one's leave completes.
 */
static void finish_drains(struct n2l_store *s)
{
	char name[N2L_ADDR_LEN];
	unsigned int idx;
	bool leaves;

	for (idx = 0; idx < N2L_NET_SERVERS; idx++) {
		if (!(READ_ONCE(s->netram.draining) & BIT_ULL(idx)))
			continue;
		mutex_lock(&s->config_lock);
		spin_lock_irq(&s->lock);
		leaves = (s->netram.draining & BIT_ULL(idx)) &&
			 !__drain_needed(s, idx);
		if (leaves) {
			s->netram.draining &= ~BIT_ULL(idx);
			s->netram.present &= ~BIT_ULL(idx);
		}
		spin_unlock_irq(&s->lock);
		if (leaves) {
			server_name(s, idx, name);
			n2l_meta_sync(s);
			n2l_net_server_remove(s->netram.net, idx);
			n2l_debug_hold(N2L_HOLD_DRAINED);
			DMINFO("%s: server %s removed", store_name(s), name);
		}
		mutex_unlock(&s->config_lock);
	}
}

/*
 * A pass every N2L_REPAIR_MS while runs get mended; when none could be
 * (no server has room, every copy is away), less and less often.
 */
static void repair_work(struct work_struct *w)
{
	struct n2l_store *s = container_of(to_delayed_work(w), struct n2l_store,
					   netram.repair);
	unsigned int noio = memalloc_noio_save();
	struct repair_plan *p = s->netram.plan;
	int done = 0;

	n2l_test_delay(N2L_TEST_REPAIR, "as the repair work starts");
	make_plan(s, p);
	if (p->any)
		done = repair_pass(s, p);
	finish_drains(s);
	make_plan(s, p);
	if (done < 0)
		s->netram.repair_delay = min(2 * s->netram.repair_delay,
					     N2L_REPAIR_MAX_MS);
	else
		s->netram.repair_delay = N2L_REPAIR_MS;
	if (p->any || s->netram.draining)
		repair_queue(s, false);
	memalloc_noio_restore(noio);
}

int n2l_repair_init(struct n2l_store *s)
{
	struct n2l_netram *nr = &s->netram;
	unsigned int i;

	INIT_DELAYED_WORK(&nr->repair, repair_work);
	spin_lock_init(&nr->kick_lock);
	nr->repair_delay = N2L_REPAIR_MS;
	nr->plan = kzalloc(sizeof(*nr->plan), GFP_KERNEL);
	nr->menders = kcalloc(N2L_MENDERS, sizeof(*nr->menders), GFP_KERNEL);
	nr->repair_wq = alloc_workqueue("nswap2l-repair-%s", WQ_MEM_RECLAIM, 1,
					dm_device_name(s->md));
	nr->mend_wq = alloc_workqueue("nswap2l-mend-%s", WQ_MEM_RECLAIM |
				      WQ_UNBOUND, N2L_MENDERS, dm_device_name(s->md));
	if (!nr->plan || !nr->menders || !nr->repair_wq || !nr->mend_wq)
		return -ENOMEM;
	for (i = 0; i < N2L_MENDERS; i++) {
		nr->menders[i].s = s;
		INIT_WORK(&nr->menders[i].work, mender_work);
		nr->menders[i].buf = n2l_alloc_buffer(N2L_MEND_PAGES);
		if (!nr->menders[i].buf)
			return -ENOMEM;
	}
	return 0;
}

/*
 * No repair runs after this, nor starts: an event work of the client may
 * still kick it until n2l_net_destroy() has flushed them all, and would
 * otherwise queue a repair that runs without a client.
 */
void n2l_repair_stop(struct n2l_store *s)
{
	spin_lock_irq(&s->netram.kick_lock);
	WRITE_ONCE(s->netram.stopping, true);
	spin_unlock_irq(&s->netram.kick_lock);
	if (s->netram.repair_wq)
		cancel_delayed_work_sync(&s->netram.repair);
}

void n2l_repair_exit(struct n2l_store *s)
{
	struct n2l_netram *nr = &s->netram;
	unsigned int i;

	if (nr->repair_wq)
		destroy_workqueue(nr->repair_wq);
	if (nr->mend_wq)
		destroy_workqueue(nr->mend_wq);
	for (i = 0; nr->menders && i < N2L_MENDERS; i++)
		if (nr->menders[i].buf)
			n2l_free_buffer(nr->menders[i].buf);
	kfree(nr->menders);
	kfree(nr->plan);
}
