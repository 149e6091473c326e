// SPDX-License-Identifier: GPL-2.0-only
/*
 * remove_server: a server leaves only once no slot needs it. Draining
 * stops new writes to it, reads its slots back a run at a time and moves
 * them wherever placement says, then sends FREE_ALL and disconnects. Its
 * reads keep being served meanwhile.
 */
#include "nswap2l.h"

#define N2L_DRAIN_RETRY_MS	1000

/* The next run of slots on @srv from slot @*cursor on; 0 if none left. */
static u32 next_run(struct n2l_store *s, struct n2l_server *srv, u32 *cursor,
		    u32 *loc)
{
	u32 i, n = 0;
	sme_t e;

	spin_lock_irq(&s->lock);
	for (i = *cursor; i < n2l_nr_slots(s); i++) {
		e = slotmap_get(&s->map, to_slot(i));
		if (sme_medium(e) == N2L_NETRAM &&
		    sme_netram_server(sme_loc(e)) == srv->idx) {
			n = min(slotmap_contiguous(&s->map, to_slot(i),
						   n2l_nr_slots(s) - i),
				N2L_MAX_PAGES);
			*loc = sme_loc(e);
			break;
		}
	}
	*cursor = i;
	spin_unlock_irq(&s->lock);
	return n;
}

static bool still_at(struct n2l_store *s, u32 slot, u32 loc)
{
	sme_t e;

	spin_lock_irq(&s->lock);
	e = slotmap_get(&s->map, to_slot(slot));
	spin_unlock_irq(&s->lock);
	return sme_medium(e) == N2L_NETRAM && sme_loc(e) == loc;
}

/*
 * Move every slot off @srv; false when something could not move yet (no
 * room, the server did not answer, or it does not have a page it should),
 * to be tried again later.
 */
static bool drain_server(struct n2l_store *s, struct n2l_server *srv,
			 struct bio *buf)
{
	u32 cursor = 0, loc, n;
	int r;

	while ((n = next_run(s, srv, &cursor, &loc))) {
		struct n2l_move mv = {
			.first = to_slot(cursor), .nr = n, .src_loc = loc,
			.data = buf, .avoid = BIT_ULL(srv->idx),
		};

		r = n2l_netram_sync(s, buf, 0, n, srv->idx, N2L_OP_GET, cursor,
				    sme_netram_version(loc));
		if (r == N2L_ST_OK)
			r = n2l_move_out(s, &mv);
		if (r == N2L_ST_STALE && !still_at(s, cursor, loc)) {
			/* Moved meanwhile: look at the slot again. */
			cond_resched();
			continue;
		}
		if (r) {
			DMWARN_LIMIT("%s: draining %s: %d, retrying",
				     dm_device_name(s->md), srv->name, r);
			return false;
		}
		cursor += n;
		cond_resched();
	}
	return true;
}

static bool drained(struct n2l_store *s, struct n2l_server *srv)
{
	bool empty;

	spin_lock_irq(&s->lock);
	empty = !srv->held;
	spin_unlock_irq(&s->lock);
	return empty;
}

void n2l_drain_work(struct work_struct *w)
{
	struct n2l_netram *nr = container_of(to_delayed_work(w),
					     struct n2l_netram, drain);
	struct n2l_store *s = nr->store;
	struct n2l_server *srv;
	bool again = false;
	struct bio *buf;
	unsigned int i;

	buf = n2l_alloc_buffer(N2L_MAX_PAGES);
	if (!buf) {
		queue_delayed_work(nr->wq, &nr->drain,
				   msecs_to_jiffies(N2L_DRAIN_RETRY_MS));
		return;
	}
	for (i = 0; i < N2L_MAX_SERVERS; i++) {
		spin_lock_irq(&s->lock);
		srv = n2l_server_get(nr, i);
		spin_unlock_irq(&s->lock);
		if (!srv)
			continue;
		if (srv->state == N2L_SRV_DRAINING) {
			if (!drain_server(s, srv, buf) || !drained(s, srv)) {
				again = true;
			} else {
				mutex_lock(&s->config_lock);
				if (srv->state == N2L_SRV_DRAINING && drained(s, srv)) {
					n2l_server_free_all_and_stop(srv);
					n2l_server_remove(nr, srv);
					DMINFO("%s: server %s removed",
					       dm_device_name(s->md), srv->name);
				}
				mutex_unlock(&s->config_lock);
			}
		}
		n2l_server_put(srv);
	}
	n2l_free_buffer(buf);
	if (again)
		queue_delayed_work(nr->wq, &nr->drain,
				   msecs_to_jiffies(N2L_DRAIN_RETRY_MS));
}

/* Start draining @name away; config_lock held. */
int n2l_server_remove_start(struct n2l_netram *nr, const char *name,
			    char **error)
{
	struct n2l_server *srv = __n2l_server_find(nr, name);

	lockdep_assert_held(&nr->store->config_lock);
	if (!srv) {
		*error = "No such server";
		return -ENOENT;
	}
	spin_lock_irq(&srv->lock);
	if (srv->state != N2L_SRV_DRAINING)
		srv->state = N2L_SRV_DRAINING;
	spin_unlock_irq(&srv->lock);
	queue_delayed_work(nr->wq, &nr->drain, 0);
	return 0;
}
