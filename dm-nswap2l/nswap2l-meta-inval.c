// SPDX-License-Identifier: GPL-2.0-only
/*
 * Invalidations that wait for a commit (metadata of format 2).
 *
 * The committed map may name a Network RAM copy that its slot has left
 * since: an overwrite, a discard, a migration to Flash, a move off a
 * server. As a freed block waits in the gate's quarantine, such a copy
 * must stay on its server until a commit that no longer names it, or a
 * crash before that commit would leave the committed map pointing at a
 * page the server dropped: -EIO for a write that a flush made durable.
 * So, with such metadata, the invalidation of a copy goes on the pending
 * one of two lists and is sent once the commit covering that list has
 * written its superblock.
 *
 * A list holds N2L_DEFER_MAX invalidations; a commit starts when one is
 * half full. What a full list cannot take is not sent at all: after the
 * commit that covers the list, every server reconciles, which drops
 * whatever neither the map nor a list names. A reconciliation lists what
 * the lists hold (n2l_deferred_list()), or it would drop those copies.
 *
 * A copy a move dropped keeps its version, and a later move may put that
 * version back on the same server: until its invalidation has gone, the
 * server takes no move (__n2l_deferred_moving()), and the invalidation is
 * not sent if the map names the copy again by then.
 */
#include <linux/mm.h>

#include "nswap2l.h"

#define N2L_DEFER_MAX	8192	/* a server's whole invalidation ring */
#define N2L_DEFER_BATCH	256	/* sent under one hold of the store's lock */

struct n2l_deferred_inval {
	u64 vers;
	u32 slot;
	u8 srv;
};

struct n2l_defer_list {
	u32 nr;
	u32 untaken;		/* reconcile after the commit */
	u64 moving;		/* servers a move's copy waits on */
	struct n2l_deferred_inval *e;
};

struct n2l_deferred {
	struct n2l_defer_list list[2];
};

int n2l_deferred_init(struct n2l_store *s)
{
	struct n2l_deferred *d = kzalloc(sizeof(*d), GFP_KERNEL);
	unsigned int i;

	if (!d)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(d->list); i++) {
		d->list[i].e = kvcalloc(N2L_DEFER_MAX, sizeof(*d->list[i].e),
					GFP_KERNEL);
		if (!d->list[i].e) {
			s->invals = d;
			n2l_deferred_exit(s);
			return -ENOMEM;
		}
	}
	s->invals = d;
	return 0;
}

void n2l_deferred_exit(struct n2l_store *s)
{
	struct n2l_deferred *d = s->invals;
	unsigned int i;

	if (!d)
		return;
	for (i = 0; i < ARRAY_SIZE(d->list); i++)
		kvfree(d->list[i].e);
	kfree(d);
	s->invals = NULL;
}

/*
 * Forget (@slot, @vers) on @srv once the map a crash would leave no longer
 * names it; @moving if the slot keeps the version elsewhere.
 */
void __n2l_defer_inval(struct n2l_store *s, unsigned int srv, n2l_slot_t slot,
		       u64 vers, bool moving)
{
	struct n2l_defer_list *l;

	lockdep_assert_held(&s->lock);
	if (!s->invals || !s->meta) {
		n2l_net_inval(s->netram.net, srv, from_slot(slot), vers);
		return;
	}
	l = &s->invals->list[__n2l_meta_pending(s) - RUNALLOC_META_Q];
	if (l->nr == N2L_DEFER_MAX) {
		l->untaken++;
		return;
	}
	l->e[l->nr++] = (struct n2l_deferred_inval){
		.vers = vers, .slot = from_slot(slot), .srv = srv,
	};
	if (moving)
		l->moving |= BIT_ULL(srv);
	if (l->nr == N2L_DEFER_MAX / 2)
		__n2l_meta_kick(s);
}

/* Servers that must take no move until a commit. */
u64 __n2l_deferred_moving(struct n2l_store *s)
{
	struct n2l_deferred *d = s->invals;

	lockdep_assert_held(&s->lock);
	return d ? d->list[0].moving | d->list[1].moving : 0;
}

u32 __n2l_deferred_nr(struct n2l_store *s)
{
	struct n2l_deferred *d = s->invals;

	lockdep_assert_held(&s->lock);
	return d ? d->list[0].nr + d->list[1].nr : 0;
}

/* Whether copies wait for a commit: it starts now, and room follows. */
bool __n2l_deferred_waiting(struct n2l_store *s)
{
	if (!__n2l_deferred_nr(s))
		return false;
	__n2l_meta_kick(s);
	return true;
}

/* Whether the map names @v's copy on its server again. */
static bool __named(struct n2l_store *s, const struct n2l_deferred_inval *v)
{
	sme_t e = slotmap_get(&s->map, to_slot(v->slot));

	return sme_medium(e) == N2L_NETRAM && sme_vers(e) == v->vers &&
	       n2l_group_has(&s->netram.groups[sme_group(e)], v->srv);
}

/*
 * The commit that covered list @half is on the device: send what it held.
 * Only a commit changes which list is pending, so nothing adds to @half
 * meanwhile.
 */
void n2l_deferred_release(struct n2l_store *s, unsigned int half)
{
	struct n2l_defer_list *l;
	struct n2l_net *net;
	u32 at, end, untaken;
	unsigned int i;

	if (!s->invals)
		return;
	l = &s->invals->list[half];
	net = s->netram.net;
	for (at = 0; at < READ_ONCE(l->nr); at = end) {
		spin_lock_irq(&s->lock);
		end = min(l->nr, at + N2L_DEFER_BATCH);
		for (i = at; net && i < end; i++)
			if (!__named(s, &l->e[i]))
				n2l_net_inval(net, l->e[i].srv, l->e[i].slot,
					      l->e[i].vers);
		spin_unlock_irq(&s->lock);
		cond_resched();
	}
	spin_lock_irq(&s->lock);
	untaken = l->untaken;
	l->nr = 0;
	l->untaken = 0;
	l->moving = 0;
	spin_unlock_irq(&s->lock);
	if (!untaken || !net)
		return;
	DMWARN_LIMIT("%s: %u invalidations could not wait for a commit: every server reconciles",
		     dm_device_name(s->md), untaken);
	for (i = 0; i < N2L_NET_SERVERS; i++)
		n2l_net_reconcile(net, i);
}

/*
 * For a reconciliation of @idx, after the map's copies (whose scan ended
 * at @base): the waiting invalidations of @idx, from *@cursor on. One
 * added after the scan is of a copy the scan found in the map.
 */
u32 n2l_deferred_list(struct n2l_store *s, unsigned int idx, u64 base,
		      u64 *cursor, struct n2l_copy *copies, u32 max)
{
	struct n2l_deferred *d = s->invals;
	const struct n2l_deferred_inval *v;
	u32 n = 0, half, i;

	if (!d) {
		*cursor = base + 2 * N2L_DEFER_MAX;
		return 0;
	}
	spin_lock_irq(&s->lock);
	while (*cursor < base + 2 * N2L_DEFER_MAX && n < max) {
		half = (*cursor - base) / N2L_DEFER_MAX;
		i = (*cursor - base) % N2L_DEFER_MAX;
		if (i >= d->list[half].nr) {
			*cursor = base + (half + 1) * N2L_DEFER_MAX;
			continue;
		}
		v = &d->list[half].e[i];
		if (v->srv == idx) {
			copies[n].key = v->slot;
			copies[n].vers = v->vers;
			n++;
		}
		(*cursor)++;
	}
	spin_unlock_irq(&s->lock);
	return n;
}
