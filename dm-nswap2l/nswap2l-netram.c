// SPDX-License-Identifier: GPL-2.0-only
/*
 * Network RAM as a medium: which servers take a write, replicated writes
 * and reads that fail over between copies. The client (nswap-net/kclient)
 * does the talking; this side knows slots, groups and versions.
 *
 * A write of a run of slots gets a new version and a group of servers
 * (those with the most room); it is sealed once and PUT to every server
 * of the group, and completes when all have stored it. A server that
 * refuses or fails sends the write to the slow path, which replaces that
 * server (nswap2l-slow.c). A read GETs its run from the least loaded
 * reachable server of its group and fails over to the others.
 *
 * Every write to a server is "unsettled" until its slots point at it or
 * it was dropped: reconciliation of that server waits for none to be
 * left, so it never lists a slot map that a landing write is changing.
 */
#include <linux/delay.h>

#include "nswap2l.h"

static struct n2l_net *net_of(struct n2l_store *s)
{
	return s->netram.net;
}

/*
 * Pages the placement policy may count on: what the usable servers not in
 * @avoid can take, divided among the copies each slot needs.
 */
u32 __n2l_netram_free(struct n2l_store *s, u64 avoid)
{
	u64 free = n2l_net_free_total(net_of(s), avoid);

	return min_t(u64, div_u64(free, READ_ONCE(s->netram.replicas) ?: 1),
		     U32_MAX);
}

/*
 * Pages the servers of the device donate in all, as they last said (they
 * say so every second); with @reachable, only those not away.
 */
u64 n2l_netram_capacity(struct n2l_store *s, bool reachable)
{
	struct n2l_net_info info;
	unsigned int i;
	u64 cap = 0;

	for (i = 0; i < N2L_NET_SERVERS; i++)
		if ((READ_ONCE(s->netram.present) & BIT_ULL(i)) &&
		    n2l_net_server_info(net_of(s), i, &info) &&
		    !(reachable && info.state == N2L_SRV_AWAY))
			cap += info.capacity;
	return cap;
}

/* A server of the device has not answered its first connect yet. */
static bool servers_unheard(struct n2l_store *s)
{
	struct n2l_net_info info;
	unsigned int i;

	for (i = 0; i < N2L_NET_SERVERS; i++)
		if ((READ_ONCE(s->netram.present) & BIT_ULL(i)) &&
		    n2l_net_server_info(net_of(s), i, &info) &&
		    info.state == N2L_SRV_CONNECTING)
			return true;
	return false;
}

/*
 * Once per table, when every server has answered (or is away): a device
 * larger than what its media can hold, Flash and disk and the Network RAM
 * it reaches at its replica count, fills up. Then writes of slots on no
 * medium yet fail with ENOSPC, and swap without discards leaves every
 * slot it ever used mapped, so it gets there: say so when it is loaded.
 */
void n2l_netram_check_size(struct n2l_store *s)
{
	unsigned int copies = READ_ONCE(s->netram.replicas) ?: 1;
	u64 blocks, pages, slots = n2l_nr_slots(s);
	bool check;

	if (servers_unheard(s))
		return;
	spin_lock_irq(&s->lock);
	check = s->size_unchecked;
	s->size_unchecked = false;
	spin_unlock_irq(&s->lock);
	if (!check)
		return;
	blocks = (u64)s->media[N2L_FLASH].alloc.nr_blocks +
		 s->media[N2L_DISK].alloc.nr_blocks;
	pages = div_u64(n2l_netram_capacity(s, true), copies);
	if (slots <= blocks + pages)
		return;
	DMWARN("%s: %llu slots, more than its media hold (%llu on Flash and disk, %llu of Network RAM at %u copies): once they are full, writes fail with ENOSPC; swap on it with discards (swapon --discard)",
	       dm_device_name(s->md), slots, blocks, pages, copies);
}

/*
 * Servers for a write of @pages slots: up to @want, at least @need, none
 * in @avoid, those with the most room first, in @srv (*@nsrv of them);
 * their group, referenced, and a new version; or -ENOSPC.
 */
int __n2l_netram_place(struct n2l_store *s, u32 pages, u64 avoid,
		       unsigned int want, unsigned int need, u8 *srv,
		       unsigned int *nsrv, u64 *vers)
{
	struct n2l_netram *nr = &s->netram;
	unsigned int n, i;
	int g;

	lockdep_assert_held(&s->lock);
	if (nr->next_version > SME_VERS_MAX)
		return -ENOSPC;	/* 2^48 writes: Network RAM is done */
	/* Above what a load would start from: until the next commit. */
	if (nr->next_version >= nr->vers_limit)
		return -ENOSPC;
	n = n2l_net_reserve(nr->net, pages, avoid, nr->srv_held, want, srv);
	g = n < max(need, 1U) ? -ENOSPC : __n2l_group_get(s, srv, n);
	if (g < 0) {
		for (i = 0; i < n; i++)
			n2l_net_unreserve(nr->net, srv[i], pages);
		return g;
	}
	*nsrv = n;
	*vers = nr->next_version++;
	for (i = 0; i < n; i++)
		atomic_inc(&nr->unsettled[srv[i]]);
	return g;
}

/*
 * A write to @srv has installed itself or was dropped; writes waiting for
 * room (see __n2l_netram_room_coming()) may look again.
 */
void n2l_netram_settled(struct n2l_store *s, unsigned int srv)
{
	if (atomic_dec_and_test(&s->netram.unsettled[srv]) &&
	    READ_ONCE(s->deferred_nr))
		queue_work(s->wq, &s->worker);
}

/*
 * Wait until the writes to @idx that will point slots at it have landed
 * or were dropped (a reconciliation lists the slot map, a server that is
 * forgotten leaves it); false if they did not within their bound.
 */
bool n2l_netram_wait_settled(struct n2l_store *s, unsigned int idx)
{
	unsigned long until = jiffies +
		msecs_to_jiffies(2 * (READ_ONCE(s->netram.timeout_ms) +
				      READ_ONCE(s->netram.dead_after_ms)));

	while (atomic_read(&s->netram.unsettled[idx]) > 0) {
		if (time_after(jiffies, until))
			return false;
		usleep_range(5000, 10000);
	}
	return true;
}

/*
 * No medium has room, but a server is still connecting, reconnecting or
 * reconciling: the write may wait for it, for as long as a server may be
 * down before it is away (a Network-RAM-only device is usable right after
 * dmsetup create, before its servers have answered).
 */
bool __n2l_netram_waiting(struct n2l_store *s, struct n2l_io *io)
{
	struct n2l_net_info info;
	unsigned int i;

	if (!io->since)
		io->since = jiffies ?: 1;
	if (time_after(jiffies, io->since +
		       msecs_to_jiffies(READ_ONCE(s->netram.dead_after_ms))))
		return false;
	for (i = 0; i < N2L_NET_SERVERS; i++)
		if ((s->netram.present & BIT_ULL(i)) &&
		    n2l_net_server_info(net_of(s), i, &info) &&
		    (info.state == N2L_SRV_CONNECTING ||
		     info.state == N2L_SRV_DOWN ||
		     info.state == N2L_SRV_RECONCILING))
			return true;
	return false;
}

/*
 * No medium has room, but the servers will have some shortly: overwrites
 * in flight free their old copies when they land, from the PUT until the
 * slot map points at the new copy (unsettled), with metadata until a
 * commit no longer names the old, then until the servers answer the
 * invalidations. A full device is always overwritable.
 */
bool __n2l_netram_room_coming(struct n2l_store *s)
{
	bool coming = false;
	unsigned int i;

	lockdep_assert_held(&s->lock);
	if (!s->netram.present)
		return false;
	for (i = 0; i < N2L_NET_SERVERS && !coming; i++)
		coming = atomic_read(&s->netram.unsettled[i]);
	/* Copies freed wait for a commit, which starts now. */
	coming |= __n2l_deferred_waiting(s);
	/* Asked even so: the answer to an invalidation must wake us. */
	return n2l_net_room_coming(net_of(s)) || coming;
}

/*
 * Forget (@slot, @vers) on every server of @g but those in @keep, once no
 * commit names it there. Given @keep, the slot keeps that version (on
 * @keep's servers): a move.
 */
void __n2l_netram_inval_group(struct n2l_store *s, unsigned int g,
			      n2l_slot_t slot, u64 vers, const u8 *keep,
			      unsigned int nkeep)
{
	const struct n2l_group *grp = &s->netram.groups[g];
	unsigned int i, j;
	bool kept;

	lockdep_assert_held(&s->lock);
	for (i = 0; i < grp->nr; i++) {
		for (kept = false, j = 0; j < nkeep; j++)
			kept |= grp->srv[i] == keep[j];
		if (!kept)
			__n2l_defer_inval(s, grp->srv[i], slot, vers,
					  keep != NULL);
	}
}

/*
 * The server of @g to read from: of those reachable, the one with the
 * fewest requests waiting; else one that is down but may come back (the
 * read waits for it); -1 if none is left that is not in @tried.
 */
int n2l_netram_pick_reader(struct n2l_store *s, unsigned int g, u64 tried)
{
	const struct n2l_group *grp = &s->netram.groups[g];
	struct n2l_net_info info;
	int best = -1, later = -1;
	u64 load = U64_MAX, l;
	unsigned int i, m;

	for (i = 0; i < grp->nr; i++) {
		m = grp->srv[i];
		if ((tried & BIT_ULL(m)) ||
		    !n2l_net_server_info(net_of(s), m, &info))
			continue;
		if (info.state == N2L_SRV_UP || info.state == N2L_SRV_RECONCILING) {
			/* A slow server only when every other copy is slow too. */
			l = info.inflight + (info.slow ? 1ULL << 32 : 0);
			if (l < load) {
				load = l;
				best = m;
			}
		} else if (info.state == N2L_SRV_DOWN ||
			   info.state == N2L_SRV_CONNECTING) {
			later = m;
		}
	}
	return best >= 0 ? best : later;
}

/*----------------------------------------------------------------*/
/* The fast path: a bio's requests live in its per-bio data. */

static struct bio *io_bio(struct n2l_io *io)
{
	return dm_bio_from_per_bio_data(io, sizeof(*io));
}

static void put_done(struct n2l_net_req *req)
{
	struct n2l_io *io = req->private;
	struct bio *bio = io_bio(io);

	/*
	 * A copy that will never land is settled now, not when the slow path
	 * gets to it: a reconciliation waits for the server's writes to
	 * settle, and the slow path may be waiting for that reconciliation.
	 */
	if (req->status != N2L_ST_OK) {
		atomic_or(BIT(req - io->req), &io->failed);
		n2l_netram_settled(io->store, io->srv[req - io->req]);
	}
	if (!atomic_dec_and_test(&io->pending))
		return;
	if (atomic_read(&io->failed)) {
		/* A server refused or went: the slow path replaces it. */
		n2l_slow_write(io->store, bio);
		return;
	}
	bio->bi_status = BLK_STS_OK;
	bio_endio(bio);
}

/*
 * The write placed in @io (group, version, servers): sealed once, PUT to
 * every server of its group. Nothing of @io may be touched after the last
 * submit: the bio may be completed by then.
 */
void n2l_netram_write(struct n2l_store *s, struct bio *bio)
{
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));
	unsigned int i, n = io->nreq;
	int r;

	io->store = s;
	atomic_set(&io->failed, 0);
	r = n2l_net_seal(net_of(s), &io->sealed, bio, from_slot(io->slot),
			 io->nr, io->vers, GFP_NOIO);
	if (r) {
		/* As if every server refused it: the slow path seals it. */
		DMERR_LIMIT("%s: cannot seal a write: %d", dm_device_name(s->md), r);
		for (i = 0; i < n; i++) {
			n2l_net_unreserve(net_of(s), io->srv[i], io->nr);
			n2l_netram_settled(s, io->srv[i]);
		}
		atomic_set(&io->failed, BIT(n) - 1);
		n2l_slow_write(s, bio);
		return;
	}
	atomic_set(&io->pending, n);
	for (i = 0; i < n; i++) {
		n2l_net_put_reserved(&io->req[i], from_slot(io->slot), io->nr,
				     io->vers, &io->sealed);
		io->req[i].done = put_done;
		io->req[i].private = io;
	}
	for (i = 0; i < n; i++)
		n2l_net_submit(net_of(s), io->srv[i], &io->req[i]);
}

static void get_done(struct n2l_net_req *req)
{
	struct n2l_io *io = req->private;
	struct bio *bio = io_bio(io);

	if (req->status == N2L_ST_OK) {
		bio->bi_status = BLK_STS_OK;
		bio_endio(bio);
		return;
	}
	if (req->status == N2L_NET_BADSEAL)
		atomic64_add(io->nr, &io->store->netram.auth_failures);
	/* Another copy, or the slot moved meanwhile: read it again. */
	n2l_slow_read(io->store, bio);
}

/* The read mapped in @io (group, version, the server in srv[0]). */
void n2l_netram_read(struct n2l_store *s, struct bio *bio)
{
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));

	io->store = s;
	n2l_net_get(&io->req[0], from_slot(io->slot), io->nr, io->vers, bio);
	io->req[0].done = get_done;
	io->req[0].private = io;
	n2l_net_submit(net_of(s), io->srv[0], &io->req[0]);
}

/*----------------------------------------------------------------*/
/* Synchronous requests, for the slow paths and moves. */

static void count(struct n2l_store *s, bool write, u32 n)
{
	struct n2l_medium_stats *st = &s->media[N2L_NETRAM].stats;

	atomic64_inc(write ? &st->writes : &st->reads);
	atomic64_add((u64)n << N2L_SLOT_SHIFT,
		     write ? &st->write_sectors : &st->read_sectors);
}

/*
 * PUT @n slots, @key.., sealed in @sd, as version @vers to @srv. On
 * success the caller owes n2l_netram_settled() once their slots point at
 * it or the copies were dropped.
 */
int n2l_netram_put_sealed(struct n2l_store *s, unsigned int srv, u64 key,
			  u32 n, u64 vers, const struct n2l_sealed *sd)
{
	struct n2l_net_req req;
	int r;

	atomic_inc(&s->netram.unsettled[srv]);
	n2l_net_put(&req, key, n, vers, sd);
	count(s, true, n);
	r = n2l_net_sync(net_of(s), srv, &req);
	if (r)
		n2l_netram_settled(s, srv);
	return r;
}

/*
 * PUT slots [@first, @first + @n) of @data, which are slots @key.., as
 * version @vers to @srv, sealed for it: as n2l_netram_put_sealed(). The
 * caller holds no seal: one waits for the pool only with nothing of it.
 */
int n2l_netram_put_sync(struct n2l_store *s, unsigned int srv, u64 key,
			u32 n, u64 vers, struct bio *data, u32 first)
{
	struct bio *c = n2l_sub_bio(s, data, first, n);
	struct n2l_sealed sd;
	int r;

	r = n2l_net_seal(net_of(s), &sd, c, key, n, vers, GFP_NOIO);
	if (!r) {
		r = n2l_netram_put_sealed(s, srv, key, n, vers, &sd);
		n2l_net_unseal(net_of(s), &sd);
	}
	bio_put(c);
	return r;
}

int n2l_netram_get_sync(struct n2l_store *s, unsigned int srv, u64 key,
			u32 n, u64 vers, struct bio *data, u32 first)
{
	struct bio *c = n2l_sub_bio(s, data, first, n);
	struct n2l_net_req req;
	int r;

	n2l_net_get(&req, key, n, vers, c);
	count(s, false, n);
	r = n2l_net_sync(net_of(s), srv, &req);
	bio_put(c);
	if (r == N2L_NET_BADSEAL)
		atomic64_add(n, &s->netram.auth_failures);
	return r;
}

/*
 * Read the copies of group @g, trying each server not in *@tried (which
 * grows) until one answers with them all; 0, or the last failure.
 */
int n2l_netram_read_any(struct n2l_store *s, unsigned int g, u64 key, u32 n,
			u64 vers, struct bio *data, u32 first, u64 *tried)
{
	int r = N2L_NET_AWAY, srv;

	for (;;) {
		spin_lock_irq(&s->lock);
		srv = n2l_netram_pick_reader(s, g, *tried);
		spin_unlock_irq(&s->lock);
		if (srv < 0)
			return r;
		*tried |= BIT_ULL(srv);
		r = n2l_netram_get_sync(s, srv, key, n, vers, data, first);
		if (r == N2L_ST_OK)
			return 0;
	}
}

/*----------------------------------------------------------------*/

int n2l_netram_init(struct n2l_store *s, struct n2l_target *t)
{
	struct n2l_netram *nr = &s->netram;
	struct n2l_net_config cfg = {
		.devname = dm_device_name(s->md),
		.nr_keys = n2l_nr_slots(s),
		.ops = &n2l_net_ops,
		.owner = s,
		.identity = t->identity[0] ? t->identity : NULL,
		.psk = t->psk,
		.page_key = t->key_desc[0] ? t->page_key : NULL,
	};
	struct n2l_net *net;

	nr->replicas = t->replicas;
	nr->next_version = 1;
	nr->vers_limit = SME_VERS_MAX + 1;
	mutex_init(&nr->move_lock);
	nr->timeout_ms = 5000;
	nr->dead_after_ms = 30000;
	net = n2l_net_create(&cfg);
	if (IS_ERR(net))
		return PTR_ERR(net);
	nr->net = net;
	n2l_net_set_timeouts(net, nr->timeout_ms, nr->dead_after_ms);
	nr->move_buf = n2l_alloc_buffer(N2L_MAX_PAGES);
	if (!nr->move_buf)
		return -ENOMEM;
	return n2l_repair_init(s);
}

/*
 * Repairs and drains stop first (they wait for requests that only the
 * client's tick may end); then the client drops our pages everywhere.
 */
void n2l_netram_exit(struct n2l_store *s)
{
	n2l_repair_stop(s);
	n2l_net_destroy(s->netram.net);
	s->netram.net = NULL;
	n2l_repair_exit(s);
	if (s->netram.move_buf)
		n2l_free_buffer(s->netram.move_buf);
	s->netram.move_buf = NULL;
}
