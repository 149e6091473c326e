// SPDX-License-Identifier: GPL-2.0-only
/*
 * Replica groups: which servers hold the copies of a slot on Network RAM.
 * A slot's entry names its group (8 bits), not its servers, so the slot
 * map stays at 8 bytes per slot whatever the number of replicas; slots
 * with copies on the same servers share a group. A group is free for
 * another set of servers once no slot points at it and no write or move
 * in flight may make one do so (refs).
 *
 * A server whose copies are gone (it restarted, or was forgotten) leaves
 * every group at once: the slot map is not touched, and a group left with
 * no server holds lost slots until the repair work marks them.
 *
 * Everything here runs under the store's lock.
 */
#include "nswap2l.h"

static void sort_members(u8 *srv, unsigned int nr)
{
	unsigned int i, j;
	u8 t;

	for (i = 1; i < nr; i++)
		for (j = i; j && srv[j - 1] > srv[j]; j--) {
			t = srv[j];
			srv[j] = srv[j - 1];
			srv[j - 1] = t;
		}
}

static bool same_members(const struct n2l_group *grp, const u8 *srv,
			 unsigned int nr)
{
	return grp->nr == nr && !memcmp(grp->srv, srv, nr);
}

static bool group_in_use(const struct n2l_group *grp)
{
	return grp->held || grp->refs;
}

bool n2l_group_has(const struct n2l_group *grp, unsigned int srv)
{
	unsigned int i;

	for (i = 0; i < grp->nr; i++)
		if (grp->srv[i] == srv)
			return true;
	return false;
}

/*
 * The group of the @nr servers in @srv, referenced: one in use if there
 * is one, else a free one; -ENOSPC when every group is in use.
 */
int __n2l_group_get(struct n2l_store *s, const u8 *srv, unsigned int nr)
{
	struct n2l_group *groups = s->netram.groups;
	u8 m[N2L_MAX_REPLICAS];
	int free = -1;
	unsigned int g;

	lockdep_assert_held(&s->lock);
	if (WARN_ON_ONCE(!nr || nr > N2L_MAX_REPLICAS))
		return -EINVAL;
	memcpy(m, srv, nr);
	sort_members(m, nr);
	for (g = 0; g < SME_GROUPS; g++) {
		if (group_in_use(&groups[g])) {
			if (same_members(&groups[g], m, nr)) {
				groups[g].refs++;
				return g;
			}
		} else if (free < 0) {
			free = g;
		}
	}
	if (free < 0)
		return -ENOSPC;
	groups[free].nr = nr;
	memcpy(groups[free].srv, m, nr);
	groups[free].refs = 1;
	return free;
}

void __n2l_group_put(struct n2l_store *s, unsigned int g)
{
	lockdep_assert_held(&s->lock);
	WARN_ON_ONCE(!s->netram.groups[g].refs);
	s->netram.groups[g].refs--;
}

/* @delta slots point at @g from now on. */
void __n2l_group_hold(struct n2l_store *s, unsigned int g, int delta)
{
	struct n2l_group *grp = &s->netram.groups[g];
	unsigned int i;

	lockdep_assert_held(&s->lock);
	grp->held += delta;
	for (i = 0; i < grp->nr; i++)
		s->netram.srv_held[grp->srv[i]] += delta;
}

/*
 * The group of @g's servers without those in @drop and with those in
 * @add, referenced; -ENOENT if that leaves none, -ENOSPC if no group is
 * free.
 */
int __n2l_group_change(struct n2l_store *s, unsigned int g, const u8 *drop,
		       unsigned int ndrop, const u8 *add, unsigned int nadd)
{
	const struct n2l_group *grp = &s->netram.groups[g];
	u8 m[2 * N2L_MAX_REPLICAS];
	unsigned int i, j, n = 0;
	bool skip;

	for (i = 0; i < grp->nr; i++) {
		for (skip = false, j = 0; j < ndrop; j++)
			skip |= grp->srv[i] == drop[j];
		if (!skip)
			m[n++] = grp->srv[i];
	}
	for (i = 0; i < nadd; i++) {
		for (skip = false, j = 0; j < n; j++)
			skip |= m[j] == add[i];
		if (!skip)
			m[n++] = add[i];
	}
	if (!n)
		return -ENOENT;
	if (n > N2L_MAX_REPLICAS)
		n = N2L_MAX_REPLICAS;
	return __n2l_group_get(s, m, n);
}

/*
 * Server @srv kept none of its copies: it leaves every group. Returns the
 * slots that this left with no copy at all.
 */
u32 __n2l_groups_drop_server(struct n2l_store *s, unsigned int srv)
{
	struct n2l_group *grp;
	unsigned int g, i;
	u32 lost = 0;

	lockdep_assert_held(&s->lock);
	for (g = 0; g < SME_GROUPS; g++) {
		grp = &s->netram.groups[g];
		if (!group_in_use(grp) || !n2l_group_has(grp, srv))
			continue;
		for (i = 0; grp->srv[i] != srv; i++)
			;
		memmove(&grp->srv[i], &grp->srv[i + 1], grp->nr - i - 1);
		grp->nr--;
		if (!grp->nr)
			lost += grp->held;
	}
	s->netram.srv_held[srv] = 0;
	return lost;
}

/*
 * Of the @n servers @srv that took copies, each when its restart count
 * was @epoch, those that have not restarted since, moved to the front
 * (the others after them): how many. A copy taken before a restart died
 * with the process, and the restart was reported (the server left every
 * group) before anything could name the copy: it must not be named now.
 */
unsigned int __n2l_fresh_copies(struct n2l_store *s, u8 *srv, u32 *epoch,
				unsigned int n)
{
	unsigned int i, fresh = 0;

	lockdep_assert_held(&s->lock);
	for (i = 0; i < n; i++) {
		if (s->netram.restarts[srv[i]] != epoch[i])
			continue;
		swap(srv[fresh], srv[i]);
		swap(epoch[fresh], epoch[i]);
		fresh++;
	}
	return fresh;
}

/* Servers of @g that can serve reads now or soon (not away). */
unsigned int __n2l_group_live(struct n2l_store *s, unsigned int g)
{
	const struct n2l_group *grp = &s->netram.groups[g];
	struct n2l_net_info info;
	unsigned int i, live = 0;

	for (i = 0; i < grp->nr; i++)
		if (n2l_net_server_info(s->netram.net, grp->srv[i], &info) &&
		    info.state != N2L_SRV_AWAY && info.state != N2L_SRV_STOPPED)
			live++;
	return live;
}

/* Slots whose every copy is gone. */
u32 __n2l_lost_slots(struct n2l_store *s)
{
	u32 lost = s->netram.lost_marked;
	unsigned int g;

	lockdep_assert_held(&s->lock);
	for (g = 0; g < SME_GROUPS; g++)
		if (!s->netram.groups[g].nr)
			lost += s->netram.groups[g].held;
	return lost;
}

/* Slots with fewer reachable copies than the device keeps. */
u32 __n2l_underreplicated(struct n2l_store *s)
{
	const struct n2l_group *grp;
	unsigned int g;
	u32 n = 0;

	lockdep_assert_held(&s->lock);
	for (g = 0; g < SME_GROUPS; g++) {
		grp = &s->netram.groups[g];
		if (grp->held && grp->nr &&
		    __n2l_group_live(s, g) < READ_ONCE(s->netram.replicas))
			n += grp->held;
	}
	return n;
}
