// SPDX-License-Identifier: GPL-2.0-only
/*
 * Network RAM as a medium: which server takes a write, and the requests
 * that carry dm bios. A bio's request lives in its per-bio data.
 */
#include "nswap2l.h"

bool n2l_server_usable(struct n2l_server *srv)
{
	return srv && READ_ONCE(srv->state) == N2L_SRV_UP;
}

/* Pages @srv can still take, less what we are sending it right now. */
static u64 est_free(struct n2l_server *srv)
{
	s64 free = atomic64_read(&srv->free_reported) -
		   atomic_read(&srv->put_pages_inflight);

	return free > 0 ? free : 0;
}

/* Pages the usable servers not in @avoid can still take. */
u32 __n2l_netram_free(struct n2l_netram *nr, u64 avoid)
{
	u64 sum = 0;
	unsigned int i;

	lockdep_assert_held(&nr->store->lock);
	for (i = 0; i < N2L_MAX_SERVERS; i++)
		if (!(avoid & BIT_ULL(i)) && n2l_server_usable(nr->servers[i]))
			sum += est_free(nr->servers[i]);
	return min_t(u64, sum, U32_MAX);
}

/*
 * The server for a write of @pages pages: @prefer, where the first slot
 * is already, if it is usable and has room, or whatever its room if
 * @replace (a PUT under keys it holds needs none); else the usable server
 * with the most free pages; never one in @avoid. -1 if none has room.
 */
int __n2l_netram_choose(struct n2l_netram *nr, int prefer, u64 avoid,
			u32 pages, bool replace)
{
	struct n2l_server *srv;
	u64 best_free = 0, f;
	int best = -1;
	unsigned int i;

	lockdep_assert_held(&nr->store->lock);
	if (prefer >= 0 && !(avoid & BIT_ULL(prefer))) {
		srv = nr->servers[prefer];
		if (n2l_server_usable(srv) && (replace || est_free(srv) >= pages))
			return prefer;
	}
	for (i = 0; i < N2L_MAX_SERVERS; i++) {
		srv = nr->servers[i];
		if ((avoid & BIT_ULL(i)) || !n2l_server_usable(srv))
			continue;
		f = est_free(srv);
		if (f > best_free) {
			best_free = f;
			best = i;
		}
	}
	return best;
}

/*----------------------------------------------------------------*/

static struct n2l_store *req_store(struct n2l_netreq *req)
{
	return req->srv->nr->store;
}

/* The server a mapped bio goes to (io->blk), referenced; or NULL. */
static struct n2l_server *bio_server(struct n2l_store *s, struct n2l_io *io)
{
	struct n2l_server *srv;

	spin_lock_irq(&s->lock);
	srv = n2l_server_get(&s->netram, from_blk(io->blk));
	spin_unlock_irq(&s->lock);
	return srv;
}

/* The bio's request, in its per-bio data, on its way; drops @srv's ref. */
static void bio_submit(struct n2l_server *srv, struct bio *bio,
		       struct n2l_io *io, u8 op,
		       void (*done)(struct n2l_netreq *req))
{
	struct n2l_netreq *req = &io->net;

	memset(req, 0, sizeof(*req));
	INIT_LIST_HEAD(&req->node);
	req->op = op;
	req->key = from_slot(io->slot);
	req->count = io->nr;
	req->vers = io->version;
	req->bio = bio;
	req->done = done;
	n2l_server_submit(srv, req);
	n2l_server_put(srv);
}

static void put_done(struct n2l_netreq *req)
{
	struct n2l_server *srv = req->srv;
	struct bio *bio = req->bio;

	atomic_sub(req->count, &srv->put_pages_inflight);
	if (req->status == N2L_ST_OK) {
		bio->bi_status = BLK_STS_OK;
		bio_endio(bio);
		return;
	}
	if (req->status == N2L_ST_FULL || req->status == N2L_ST_DRAINING)
		atomic64_inc(&srv->stats.full);
	/* Full, draining or gone: the slow path writes it elsewhere. */
	n2l_slow_write(req_store(req), bio);
}

void n2l_netram_put(struct n2l_store *s, struct bio *bio)
{
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));
	struct n2l_server *srv = bio_server(s, io);

	if (!srv) {
		/* Retired and forgotten since map: write it elsewhere. */
		n2l_slow_write(s, bio);
		return;
	}
	atomic_add(io->nr, &srv->put_pages_inflight);
	atomic64_inc(&srv->stats.puts);
	atomic64_add(io->nr, &srv->stats.put_pages);
	bio_submit(srv, bio, io, N2L_OP_PUT, put_done);
}

static void get_done(struct n2l_netreq *req)
{
	struct n2l_store *s = req_store(req);
	struct bio *bio = req->bio;

	switch (req->status) {
	case N2L_ST_OK:
		bio->bi_status = BLK_STS_OK;
		bio_endio(bio);
		return;
	case N2L_REQ_DEAD:
		atomic64_add(req->count, &s->netram.failed_reads);
		bio->bi_status = BLK_STS_IOERR;
		bio_endio(bio);
		return;
	default:
		/*
		 * Stale (the slot moved meanwhile, or the copy is gone), or
		 * the connection broke mid-reply: read it again from wherever
		 * the slot map now says.
		 */
		n2l_slow_read(s, bio);
	}
}

/* io->blk is the server, io->version the version of the copy. */
void n2l_netram_get(struct n2l_store *s, struct bio *bio)
{
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));
	struct n2l_server *srv = bio_server(s, io);

	if (!srv) {
		/* Retired and forgotten since map: the copy is lost. */
		atomic64_add(io->nr, &s->netram.failed_reads);
		bio->bi_status = BLK_STS_IOERR;
		bio_endio(bio);
		return;
	}
	atomic64_inc(&srv->stats.gets);
	atomic64_add(io->nr, &srv->stats.get_pages);
	bio_submit(srv, bio, io, N2L_OP_GET, get_done);
}

/*----------------------------------------------------------------*/

/*
 * Forget the copy (@key, @vers) on @server, after every request queued to
 * it so far. A full ring costs a page on the server, never data.
 */
void __n2l_netram_inval(struct n2l_netram *nr, u32 server, u64 key, u32 vers)
{
	struct n2l_server *srv = nr->servers[server];
	struct n2l_inval *iv;
	unsigned long flags;
	bool kick;

	lockdep_assert_held(&nr->store->lock);
	if (!srv || srv->state == N2L_SRV_DEAD)
		return;
	spin_lock_irqsave(&srv->lock, flags);
	if (srv->inval_tail - srv->inval_head >= N2L_INVAL_RING) {
		atomic64_inc(&srv->stats.inval_dropped);
	} else {
		iv = &srv->invals[srv->inval_tail++ % N2L_INVAL_RING];
		iv->key = key;
		iv->vers = vers;
		iv->after_seq = srv->queue_seq;
	}
	kick = srv->sock != NULL;
	spin_unlock_irqrestore(&srv->lock, flags);
	if (kick)
		queue_work(nr->wq, &srv->send_work);
}

void n2l_netram_kick_invals(struct n2l_server *srv)
{
	queue_work(srv->nr->wq, &srv->send_work);
}
