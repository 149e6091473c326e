// SPDX-License-Identifier: GPL-2.0-only
/*
 * Slow paths: I/O that one remap cannot serve, done in a worker with
 * synchronous sub-I/O on clones of the bio:
 *
 *  - a write Network RAM refused (server full, draining or gone) is
 *    written again, run by run, wherever the placement policy says now;
 *  - a read whose Network RAM copy moved away (STALE) or whose reply broke
 *    off is read again, run by run, from wherever each slot now lives;
 *  - n2l_move_out() moves slots off a server (hand-backs, remove_server).
 *
 * These are rare; the fast path never waits here.
 */
#include <linux/delay.h>

#include "nswap2l.h"
#include "nswap2l-trace.h"

#define N2L_SLOW_RETRIES	3

/*
 * Writes and reads have a queue and a worker each: a read may wait for a
 * write to land (slow_read()), and that write may be queued here.
 */
static void slow_queue(struct n2l_store *s, struct n2l_slow *q, struct bio *bio)
{
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	bio_list_add(&q->bios, bio);
	spin_unlock_irqrestore(&s->lock, flags);
	queue_work(s->wq, &q->work);
}

void n2l_slow_write(struct n2l_store *s, struct bio *bio)
{
	slow_queue(s, &s->slow_writes, bio);
}

void n2l_slow_read(struct n2l_store *s, struct bio *bio)
{
	slow_queue(s, &s->slow_reads, bio);
}

/*----------------------------------------------------------------*/
/* Synchronous sub-I/O on slots [first, first + n) of @data. */

static struct bio *sub_bio(struct n2l_store *s, struct bio *data, u32 first,
			   u32 n, struct block_device *bdev)
{
	struct bio *c = bio_alloc_clone(bdev, data, GFP_NOIO, &s->bs);

	bio_trim(c, (sector_t)first << N2L_SLOT_SHIFT,
		 (sector_t)n << N2L_SLOT_SHIFT);
	return c;
}

static int block_io(struct n2l_store *s, struct bio *data, u32 first, u32 n,
		    enum n2l_medium m, u32 blk, blk_opf_t op)
{
	struct n2l_medium_stats *st = &s->media[m].stats;
	struct bio *c = sub_bio(s, data, first, n, s->media[m].bdev);
	int r;

	c->bi_opf = op;
	c->bi_iter.bi_sector = (sector_t)blk << N2L_SLOT_SHIFT;
	if (op_is_write(op)) {
		atomic64_inc(&st->writes);
		atomic64_add((u64)n << N2L_SLOT_SHIFT, &st->write_sectors);
	} else {
		atomic64_inc(&st->reads);
		atomic64_add((u64)n << N2L_SLOT_SHIFT, &st->read_sectors);
	}
	r = submit_bio_wait(c);
	bio_put(c);
	return r;
}

static void sync_done(struct n2l_netreq *req)
{
	complete(req->private);
}

/* A PUT or GET to server @server; returns its N2L_ST_* or -errno. */
int n2l_netram_sync(struct n2l_store *s, struct bio *data, u32 first, u32 n,
		     u32 server, u8 op, u32 key, u32 vers)
{
	DECLARE_COMPLETION_ONSTACK(done);
	struct n2l_netreq req = {
		.op = op, .key = key, .count = n, .vers = vers,
		.done = sync_done, .private = &done,
	};
	struct n2l_medium_stats *st = &s->media[N2L_NETRAM].stats;
	struct n2l_server *srv;

	spin_lock_irq(&s->lock);
	srv = n2l_server_get(&s->netram, server);
	spin_unlock_irq(&s->lock);
	if (!srv)
		return N2L_REQ_DEAD;

	INIT_LIST_HEAD(&req.node);
	req.bio = sub_bio(s, data, first, n, NULL);
	if (op == N2L_OP_PUT) {
		atomic64_inc(&st->writes);
		atomic64_add((u64)n << N2L_SLOT_SHIFT, &st->write_sectors);
		atomic_add(n, &srv->put_pages_inflight);
	} else {
		atomic64_inc(&st->reads);
		atomic64_add((u64)n << N2L_SLOT_SHIFT, &st->read_sectors);
	}
	n2l_server_submit(srv, &req);
	wait_for_completion(&done);
	if (op == N2L_OP_PUT)
		atomic_sub(n, &srv->put_pages_inflight);
	if (req.status == N2L_ST_FULL || req.status == N2L_ST_DRAINING)
		atomic64_inc(&srv->stats.full);
	n2l_server_put(srv);
	bio_put(req.bio);
	return req.status;
}

/* Whether a PUT failure says "try another server" rather than "fail". */
static bool try_elsewhere(int status)
{
	return status == N2L_ST_FULL || status == N2L_ST_DRAINING ||
	       status == N2L_REQ_CONN_LOST || status == N2L_REQ_DEAD;
}

/*----------------------------------------------------------------*/

/*
 * The write of @io (its version already stamped on every slot) failed on
 * Network RAM: write it, run by run, wherever placement says now, never to
 * a server that refused it. Each run installs itself like any write.
 */
static blk_status_t slow_write(struct n2l_store *s, struct bio *bio,
			       struct n2l_io *io)
{
	u64 avoid = BIT_ULL(from_blk(io->blk));
	struct n2l_io run = *io;
	u32 done = 0, want, n;
	enum n2l_medium m;
	n2l_blk_t blk;
	int server, r;

	while (done < io->nr) {
		run.slot = to_slot(from_slot(io->slot) + done);
		want = io->nr - done;
		spin_lock_irq(&s->lock);
		m = __n2l_choose(s, slotmap_get(&s->map, run.slot),
				 min(want, N2L_MAX_PAGES), avoid, &server);
		if (m == N2L_NETRAM) {
			spin_unlock_irq(&s->lock);
			n = min(want, N2L_MAX_PAGES);
			r = n2l_netram_sync(s, bio, done, n, server, N2L_OP_PUT,
				      from_slot(run.slot), io->version);
			if (r != N2L_ST_OK) {
				if (!try_elsewhere(r))
					return BLK_STS_IOERR;
				avoid |= BIT_ULL(server);
				continue;
			}
			blk = to_blk(server);
		} else {
			n = m == N2L_NONE ? 0 :
			    runalloc_get(&s->media[m].alloc, want, &blk);
			spin_unlock_irq(&s->lock);
			if (!n)
				return BLK_STS_NOSPC;
			r = block_io(s, bio, done, n, m, from_blk(blk),
				     REQ_OP_WRITE | (bio->bi_opf & REQ_FUA));
		}
		run.medium = m;
		run.blk = blk;
		run.nr = n;
		n2l_install(s, &run, r == 0);
		if (r)
			return errno_to_blk_status(r);
		done += n;
	}
	return BLK_STS_OK;
}

/*
 * Read @n slots from @done of @bio from where the slot map says now; in
 * @pending, whether the Network RAM copy read has a newer write in flight
 * (the entry is stamped with a version its copy does not have yet).
 */
static int slow_read_run(struct n2l_store *s, struct bio *bio,
			 struct n2l_io *io, u32 done, u32 *n, bool *pending)
{
	n2l_slot_t slot = to_slot(from_slot(io->slot) + done);
	unsigned int gen;
	struct bio *c;
	u32 loc;
	sme_t e;
	int r;

	spin_lock_irq(&s->lock);
	e = slotmap_get(&s->map, slot);
	loc = sme_loc(e);
	switch (sme_medium(e)) {
	case N2L_NONE:
		*n = slotmap_unmapped_run(&s->map, slot, io->nr - done);
		spin_unlock_irq(&s->lock);
		c = sub_bio(s, bio, done, *n, NULL);
		zero_fill_bio(c);
		bio_put(c);
		return 0;
	case N2L_NETRAM:
		*n = min(slotmap_contiguous(&s->map, slot, io->nr - done),
			 N2L_MAX_PAGES);
		*pending = sme_version(e) != sme_netram_version(loc);
		spin_unlock_irq(&s->lock);
		return n2l_netram_sync(s, bio, done, *n, sme_netram_server(loc),
				 N2L_OP_GET, from_slot(slot),
				 sme_netram_version(loc));
	default:
		*n = slotmap_contiguous(&s->map, slot, io->nr - done);
		gen = n2l_gate_enter(s);
		spin_unlock_irq(&s->lock);
		r = block_io(s, bio, done, *n, sme_medium(e), loc, REQ_OP_READ);
		n2l_gate_exit(s, gen);
		return r;
	}
}

/*
 * A copy can be stale because the slot moved (the map says where now),
 * because a newer write replaced it on the server and has not landed in
 * the map yet (wait for it, as long as a server may stay away), or
 * because it is gone (give up after a few tries).
 */
static blk_status_t slow_read(struct n2l_store *s, struct bio *bio,
			      struct n2l_io *io)
{
	unsigned long give_up = jiffies +
		msecs_to_jiffies(READ_ONCE(s->netram.dead_after_ms));
	unsigned int tries = 0;
	bool pending = false;
	u32 done = 0, n;
	int r;

	while (done < io->nr) {
		r = slow_read_run(s, bio, io, done, &n, &pending);
		if (r == N2L_ST_OK) {
			done += n;
			tries = 0;
			continue;
		}
		if (r < 0 && r != N2L_REQ_CONN_LOST)
			break;
		if (r == N2L_ST_STALE && pending && time_before(jiffies, give_up)) {
			usleep_range(500, 1000);
			continue;
		}
		if (++tries > N2L_SLOW_RETRIES)
			break;
	}
	if (done == io->nr)
		return BLK_STS_OK;
	atomic64_add(io->nr - done, &s->netram.failed_reads);
	DMERR_LIMIT("%s: read of slot %u failed: its copy is lost",
		    dm_device_name(s->md), from_slot(io->slot) + done);
	return BLK_STS_IOERR;
}

static void slow_one(struct n2l_store *s, struct bio *bio)
{
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));

	if (op_is_write(bio_op(bio))) {
		atomic64_inc(&s->stats.slow_writes);
		bio->bi_status = slow_write(s, bio, io);
		n2l_version_put(s, io->version);
		/* Installed here: end_io has nothing left to do. */
		io->kind = N2L_IO_NONE;
	} else {
		/* Still a read in flight until end_io. */
		atomic64_inc(&s->stats.slow_reads);
		bio->bi_status = slow_read(s, bio, io);
	}
	bio_endio(bio);
}

static void n2l_slow_work(struct work_struct *w)
{
	struct n2l_slow *q = container_of(w, struct n2l_slow, work);
	unsigned int noio = memalloc_noio_save();
	struct bio *bio;

	for (;;) {
		spin_lock_irq(&q->store->lock);
		bio = bio_list_pop(&q->bios);
		spin_unlock_irq(&q->store->lock);
		if (!bio)
			break;
		slow_one(q->store, bio);
	}
	memalloc_noio_restore(noio);
}

void n2l_slow_init(struct n2l_store *s)
{
	struct n2l_slow *q[] = { &s->slow_writes, &s->slow_reads };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(q); i++) {
		q[i]->store = s;
		bio_list_init(&q[i]->bios);
		INIT_WORK(&q[i]->work, n2l_slow_work);
	}
}

/*----------------------------------------------------------------*/

/*
 * Install a moved copy: slots still at @mv->src_loc now point at @m, @loc0
 * (block runs: @loc0 + i), with @mv->flags set, and the source copy is
 * freed; slots that changed meanwhile keep their newer data and the copy
 * is dropped. Returns how many slots moved.
 */
static u32 install_move(struct n2l_store *s, struct n2l_move *mv, u32 done,
			u32 n, enum n2l_medium m, u32 loc0)
{
	u32 i, loc, moved = 0;
	n2l_slot_t slot;
	sme_t e, new;

	spin_lock_irq(&s->lock);
	for (i = 0; i < n; i++) {
		slot = to_slot(from_slot(mv->first) + done + i);
		loc = m == N2L_NETRAM ? loc0 : loc0 + i;
		e = slotmap_get(&s->map, slot);
		if (sme_medium(e) != N2L_NETRAM || sme_loc(e) != mv->src_loc) {
			if (m == N2L_NETRAM)
				__n2l_netram_inval(&s->netram, sme_netram_server(loc),
						   from_slot(slot),
						   sme_netram_version(loc));
			else
				runalloc_put(&s->media[m].alloc, to_blk(loc), 1);
			continue;
		}
		new = sme_make(m, loc, sme_version(e), sme_flags(e) | mv->flags);
		__n2l_free_copy(s, slot, e);
		slotmap_set(&s->map, slot, new);
		__n2l_held_add(s, new, 1);
		if (m != N2L_NETRAM)
			__n2l_pf_free(s, slot);
		moved++;
	}
	spin_unlock_irq(&s->lock);
	atomic64_add(moved, &s->media[N2L_NETRAM].stats.moved_out);
	atomic64_add(moved, &s->media[m].stats.moved_in);
	trace_nswap2l_migrate(s->devt, from_slot(mv->first) + done, n, moved,
			      N2L_NETRAM, m);
	return moved;
}

/*
 * Where the next @want slots of @mv go: a server (in @loc, and its index
 * in @server) or a run of blocks; returns the medium and in @n how many
 * slots, 0 if nothing has room.
 */
static enum n2l_medium move_target(struct n2l_store *s, struct n2l_move *mv,
				   u32 want, u32 *n, int *server, n2l_blk_t *blk)
{
	enum n2l_medium m = mv->only;

	spin_lock_irq(&s->lock);
	/* As if new: the policy must not answer "where it is". */
	if (m == N2L_NONE)
		m = __n2l_choose(s, sme_make(N2L_NONE, 0, 0, 0),
				 min(want, N2L_MAX_PAGES), mv->avoid, server);
	if (m == N2L_NETRAM)
		*n = min(want, N2L_MAX_PAGES);
	else
		*n = m == N2L_NONE ? 0 : runalloc_get(&s->media[m].alloc, want, blk);
	spin_unlock_irq(&s->lock);
	return m;
}

/*
 * Move the slots of @mv, whose data is in @mv->data, off their Network
 * RAM copy: to @mv->only, or to another server or a block medium as
 * placement says, never to a server in @mv->avoid. Only slots still on
 * that copy move (@mv->moved counts them). Returns 0, -ENOSPC if nothing
 * can take them, or another error.
 */
int n2l_move_out(struct n2l_store *s, struct n2l_move *mv)
{
	u32 vers = sme_netram_version(mv->src_loc), done = 0, n, loc;
	enum n2l_medium m;
	n2l_blk_t blk;
	int server, r;

	while (done < mv->nr) {
		n2l_slot_t slot = to_slot(from_slot(mv->first) + done);

		m = move_target(s, mv, mv->nr - done, &n, &server, &blk);
		if (!n)
			return -ENOSPC;
		if (m == N2L_NETRAM) {
			r = n2l_netram_sync(s, mv->data, done, n, server, N2L_OP_PUT,
					    from_slot(slot), vers);
			if (r != N2L_ST_OK) {
				if (!try_elsewhere(r))
					return -EIO;
				mv->avoid |= BIT_ULL(server);
				continue;
			}
			loc = sme_netram_loc(server, vers);
		} else {
			r = block_io(s, mv->data, done, n, m, from_blk(blk), REQ_OP_WRITE);
			if (r) {
				spin_lock_irq(&s->lock);
				runalloc_put(&s->media[m].alloc, blk, n);
				spin_unlock_irq(&s->lock);
				return r;
			}
			loc = from_blk(blk);
		}
		mv->moved += install_move(s, mv, done, n, m, loc);
		done += n;
	}
	return 0;
}

/*----------------------------------------------------------------*/

/* A bio of @pages freshly allocated pages, all or nothing. */
struct bio *n2l_alloc_buffer(u32 pages)
{
	struct bio *bio = bio_kmalloc(pages, GFP_KERNEL);
	struct page *page;
	u32 i;

	if (!bio)
		return NULL;
	bio_init(bio, NULL, bio->bi_inline_vecs, pages, REQ_OP_WRITE);
	for (i = 0; i < pages; i++) {
		page = alloc_page(GFP_KERNEL);
		if (!page) {
			n2l_free_buffer(bio);
			return NULL;
		}
		__bio_add_page(bio, page, N2L_PAGE_SIZE, 0);
	}
	return bio;
}

void n2l_free_buffer(struct bio *bio)
{
	struct bvec_iter_all it;
	struct bio_vec *bv;

	bio_for_each_segment_all(bv, bio, it)
		__free_page(bv->bv_page);
	bio_uninit(bio);
	kfree(bio);
}
