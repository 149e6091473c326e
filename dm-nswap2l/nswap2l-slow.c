// SPDX-License-Identifier: GPL-2.0-only
/*
 * Slow paths: I/O that one request cannot serve, done in a worker with
 * synchronous sub-I/O on clones of the bio:
 *
 *  - a Network RAM write that a server refused (full, draining) or lost
 *    (its connection broke): the servers that stored it keep their
 *    copies, the others are replaced by servers with room; with none, the
 *    write goes, run by run, to a block medium;
 *  - a read whose copy failed (the server went, the copy moved, or its
 *    seal did not check): every other copy is tried, and the first one
 *    again later, for as long as a server may be down before it is away.
 *
 * These are rare; the fast path never waits here. Writes and reads have
 * a workqueue each, since a read may wait for a write of its slot. A
 * write that must wait for room waits queued, holding no server, and is
 * tried again every N2L_SLOW_RETRY_MS: the writes behind it go meanwhile
 * (each holds its copies on the servers that stored it unsettled, and a
 * reconciliation of such a server waits for them).
 */
#include <linux/delay.h>

#include "nswap2l.h"
#include "nswap2l-trace.h"

#define N2L_SLOW_RETRIES	3
#define N2L_SLOW_RETRY_MS	100

static void slow_queue(struct n2l_store *s, struct n2l_slow *q, struct bio *bio)
{
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	bio_list_add(&q->bios, bio);
	spin_unlock_irqrestore(&s->lock, flags);
	/* Now, even if writes waiting for room had it scheduled later. */
	mod_delayed_work(q->wq, &q->work, 0);
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

struct bio *n2l_sub_bio(struct n2l_store *s, struct bio *data, u32 first,
			u32 n)
{
	struct bio *c = bio_alloc_clone(NULL, data, GFP_NOIO, &s->bs);

	bio_trim(c, (sector_t)first << N2L_SLOT_SHIFT,
		 (sector_t)n << N2L_SLOT_SHIFT);
	return c;
}

int n2l_block_io(struct n2l_store *s, struct bio *data, u32 first, u32 n,
		 enum n2l_medium m, u32 blk, blk_opf_t op)
{
	struct n2l_medium_stats *st = &s->media[m].stats;
	struct bio *c = n2l_sub_bio(s, data, first, n);
	int r;

	bio_set_dev(c, s->media[m].bdev);
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

/*----------------------------------------------------------------*/
/* Writes. */

/* Slots [@first, @first + @n) are not being written any more. */
static void end_writing(struct n2l_store *s, n2l_slot_t first, u32 n)
{
	n2l_slot_t slot;
	u32 i;
	sme_t e;

	spin_lock_irq(&s->lock);
	for (i = 0; i < n; i++) {
		slot = to_slot(from_slot(first) + i);
		e = slotmap_get(&s->map, slot);
		slotmap_set(&s->map, slot,
			    sme_set_flags(e, sme_flags(e) & ~SME_WRITING));
	}
	__n2l_writes_landed(s);
	spin_unlock_irq(&s->lock);
}

/*
 * No server took the write: whether to wait and offer it again. Only when
 * no block medium has room (it goes there otherwise) and Network RAM will
 * have some: room on its way (invalidations, a reconciliation), or a
 * server reconnecting, for as long as a server may be down before it is
 * away. A refused write on a full device waits as a deferred one does.
 */
static bool slow_write_may_wait(struct n2l_store *s, struct n2l_io *io,
				unsigned long give_up)
{
	u32 free[N2L_NR_MEDIA];
	bool wait;

	if (time_after(jiffies, give_up))
		return false;
	spin_lock_irq(&s->lock);
	__n2l_media_free(s, free, 0);
	free[N2L_NETRAM] = 0;
	wait = __n2l_ask_placement(s, free, N2L_NONE) == N2L_NONE &&
	       (__n2l_netram_room_coming(s) || __n2l_netram_waiting(s, io));
	spin_unlock_irq(&s->lock);
	return wait;
}

/* What became of a slow write's offer to the servers. */
enum slow_netram { SLOW_LANDED, SLOW_ELSEWHERE, SLOW_WAIT };

/*
 * The write's seal, made once: the fast path's; or, when that one could
 * not be made, one made here without waiting for the pools, which the
 * writes queued behind this one may hold. Never a second one.
 */
static bool slow_write_sealed(struct n2l_store *s, struct bio *bio,
			      struct n2l_io *io)
{
	return io->sealed.seals ||
	       !n2l_net_seal(s->netram.net, &io->sealed, bio,
			     from_slot(io->slot), io->nr, io->vers,
			     GFP_NOWAIT | __GFP_NOWARN);
}

/*
 * The first time: the servers that stored the write keep their copies,
 * the others are let go and must not be offered it again at once (in
 * @avoid). Its group reference goes; the write is new to the slow path
 * from now until its give-up time.
 */
static unsigned int slow_write_start(struct n2l_store *s, struct n2l_io *io,
				     u8 *keep, u32 *epoch, u64 *avoid)
{
	u32 failed = atomic_read(&io->failed);
	unsigned int k, nkeep = 0;

	spin_lock_irq(&s->lock);
	for (k = 0; k < io->nreq; k++) {
		*avoid |= BIT_ULL(io->srv[k]);
		if (failed & BIT(k))	/* settled by put_done */
			continue;
		keep[nkeep] = io->srv[k];
		epoch[nkeep++] = io->epoch[k];
	}
	__n2l_group_put(s, io->group);
	spin_unlock_irq(&s->lock);
	io->nreq = 0;
	io->give_up = (jiffies +
		       msecs_to_jiffies(READ_ONCE(s->netram.dead_after_ms))) ?: 1;
	return nkeep;
}

/*
 * The group of the @n servers @keep that stored the write, less those
 * that restarted since (their copies are gone: settled and dropped from
 * @keep); how many are left in *@n. -ENOENT if none.
 */
static int slow_write_group(struct n2l_store *s, u8 *keep, u32 *epoch,
			    unsigned int *n)
{
	unsigned int k, fresh;
	int g = -ENOENT;

	spin_lock_irq(&s->lock);
	fresh = __n2l_fresh_copies(s, keep, epoch, *n);
	for (k = fresh; k < *n; k++)
		n2l_netram_settled(s, keep[k]);
	if (fresh)
		g = __n2l_group_get(s, keep, fresh);
	spin_unlock_irq(&s->lock);
	*n = fresh;
	return g;
}

/*
 * The servers that stored the write keep their copies, and as many
 * servers with room as it takes replace the others. The write lands if at
 * least one server holds it; with none, it waits for room (SLOW_WAIT:
 * offered again later, to every server, those that refused it included)
 * or goes to a block medium (SLOW_ELSEWHERE).
 */
static enum slow_netram slow_write_netram(struct n2l_store *s,
					  struct bio *bio, struct n2l_io *io)
{
	unsigned int k, nkeep = 0, want;
	u8 keep[N2L_MAX_REPLICAS], cand;
	u32 epoch[N2L_MAX_REPLICAS];
	u64 avoid = 0;
	int g = -1;

	if (!io->give_up)
		nkeep = slow_write_start(s, io, keep, epoch, &avoid);
	want = READ_ONCE(s->netram.replicas);
again:
	/*
	 * Sent with the write's one seal; unsealed (its pools are empty for
	 * now), it is offered again later.
	 */
	while (nkeep < want && slow_write_sealed(s, bio, io) &&
	       n2l_net_best(s->netram.net, io->nr, avoid, s->netram.srv_held, 1,
			    &cand)) {
		avoid |= BIT_ULL(cand);
		epoch[nkeep] = READ_ONCE(s->netram.restarts[cand]);
		if (!n2l_netram_put_sealed(s, cand, from_slot(io->slot), io->nr,
					   io->vers, &io->sealed))
			keep[nkeep++] = cand;
	}
	if (!nkeep && slow_write_may_wait(s, io, io->give_up))
		return SLOW_WAIT;	/* holding nothing */
	if (nkeep) {
		g = slow_write_group(s, keep, epoch, &nkeep);
		if (!nkeep)
			goto again;	/* every copy was on a server that restarted */
	}
	io->nreq = nkeep;
	memcpy(io->srv, keep, nkeep);
	if (g < 0) {
		/* Nowhere, or every group in use: those copies are junk. */
		spin_lock_irq(&s->lock);
		for (k = 0; k < nkeep; k++) {
			n2l_net_inval(s->netram.net, keep[k], from_slot(io->slot),
				      io->vers);
			n2l_netram_settled(s, keep[k]);
		}
		spin_unlock_irq(&s->lock);
		io->nreq = 0;
		return SLOW_ELSEWHERE;
	}
	io->group = g;
	n2l_install(s, io, true);
	if (nkeep < want)
		n2l_repair_kick(s);
	return SLOW_LANDED;
}

/* No server can take it: run by run to a block medium, as placement says. */
static blk_status_t slow_write_block(struct n2l_store *s, struct bio *bio,
				     struct n2l_io *io)
{
	u32 free[N2L_NR_MEDIA], done = 0, total = io->nr, n;
	n2l_slot_t first = io->slot;
	enum n2l_medium m;
	n2l_blk_t blk;
	int r;

	while (done < total) {
		spin_lock_irq(&s->lock);
		__n2l_media_free(s, free, 0);
		free[N2L_NETRAM] = 0;
		m = __n2l_ask_placement(s, free, N2L_NONE);
		n = m == N2L_NONE ? 0 :
		    runalloc_get(&s->media[m].alloc, total - done, &blk);
		spin_unlock_irq(&s->lock);
		if (!n) {
			end_writing(s, to_slot(from_slot(first) + done), total - done);
			atomic64_inc(&s->stats.nospc);
			return BLK_STS_NOSPC;
		}
		r = n2l_block_io(s, bio, done, n, m, from_blk(blk),
				 REQ_OP_WRITE | (bio->bi_opf & REQ_FUA));
		io->slot = to_slot(from_slot(first) + done);
		io->nr = n;
		io->medium = m;
		io->blk = blk;
		n2l_install(s, io, r == 0);
		if (r) {
			end_writing(s, to_slot(from_slot(first) + done + n),
				    total - done - n);
			return errno_to_blk_status(r);
		}
		done += n;
	}
	return BLK_STS_OK;
}

/* False if the write waits for room: it is to be tried again later. */
static bool slow_write(struct n2l_store *s, struct bio *bio, struct n2l_io *io)
{
	enum slow_netram r;

	if (!io->give_up)
		atomic64_inc(&s->stats.slow_writes);
	r = slow_write_netram(s, bio, io);
	if (r == SLOW_WAIT)
		return false;
	bio->bi_status = r == SLOW_LANDED ? BLK_STS_OK :
					    slow_write_block(s, bio, io);
	n2l_net_unseal(s->netram.net, &io->sealed);
	/* Installed here: end_io only times it. */
	io->kind = N2L_IO_LANDED;
	return true;
}

/*----------------------------------------------------------------*/
/* Reads. */

/*
 * Read @n slots from @done of @bio from where the slot map says now;
 * -ENODATA if they are lost. In @writing, whether a write of the slot is
 * in flight (a copy may be going, replaced by the write's).
 */
static int slow_read_run(struct n2l_store *s, struct bio *bio,
			 struct n2l_io *io, u32 done, u32 *n, u64 *tried,
			 bool *writing)
{
	n2l_slot_t slot = to_slot(from_slot(io->slot) + done);
	unsigned int gen, g;
	struct bio *c;
	u64 vers;
	sme_t e;
	int r;

	spin_lock_irq(&s->lock);
	e = slotmap_get(&s->map, slot);
	*writing = sme_flags(e) & SME_WRITING;
	switch (sme_medium(e)) {
	case N2L_NONE:
		*n = sme_lost(e) ? slotmap_contiguous(&s->map, slot, io->nr - done) :
				   slotmap_unmapped_run(&s->map, slot, io->nr - done);
		spin_unlock_irq(&s->lock);
		if (sme_lost(e))
			return -ENODATA;
		c = n2l_sub_bio(s, bio, done, *n);
		zero_fill_bio(c);
		bio_put(c);
		return 0;
	case N2L_NETRAM:
		*n = min(slotmap_contiguous(&s->map, slot, io->nr - done),
			 N2L_MAX_PAGES);
		g = sme_group(e);
		vers = sme_vers(e);
		s->netram.groups[g].refs++;	/* keeps its servers for us */
		spin_unlock_irq(&s->lock);
		r = n2l_netram_read_any(s, g, from_slot(slot), *n, vers, bio, done,
					tried);
		spin_lock_irq(&s->lock);
		__n2l_group_put(s, g);
		spin_unlock_irq(&s->lock);
		return r;
	default:
		*n = slotmap_contiguous(&s->map, slot, io->nr - done);
		gen = n2l_gate_enter(s);
		spin_unlock_irq(&s->lock);
		r = n2l_block_io(s, bio, done, *n, sme_medium(e), sme_blk(e),
				 REQ_OP_READ);
		n2l_gate_exit(s, gen);
		return r;
	}
}

/*
 * Every copy but the one that failed first; then, while a write of the
 * slot is in flight, or a server may still come back, all of them again.
 */
static blk_status_t slow_read(struct n2l_store *s, struct bio *bio,
			      struct n2l_io *io)
{
	unsigned long give_up = jiffies +
		msecs_to_jiffies(READ_ONCE(s->netram.dead_after_ms));
	u64 tried = io->nreq ? BIT_ULL(io->srv[0]) : 0;
	unsigned int retries = 0;
	bool writing = false;
	u32 done = 0, n;
	int r = 0;

	while (done < io->nr) {
		r = slow_read_run(s, bio, io, done, &n, &tried, &writing);
		if (!r) {
			done += n;
			tried = 0;
			retries = 0;
			continue;
		}
		if (r == -ENODATA || !time_before(jiffies, give_up))
			break;
		tried = 0;
		if (writing) {
			usleep_range(500, 1000);
			continue;
		}
		if (++retries > N2L_SLOW_RETRIES)
			break;
		msleep(N2L_SLOW_RETRY_MS);
	}
	if (done == io->nr)
		return BLK_STS_OK;
	atomic64_add(io->nr - done, &s->netram.failed_reads);
	DMERR_LIMIT("%s: read of slot %u failed (%d): no copy of it can be had",
		    dm_device_name(s->md), from_slot(io->slot) + done, r);
	return BLK_STS_IOERR;
}

/* False if @bio waits for room (a write): it is to be tried again. */
static bool slow_one(struct n2l_store *s, struct bio *bio)
{
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));

	if (op_is_write(bio_op(bio))) {
		if (!slow_write(s, bio, io))
			return false;
	} else {
		/* Still a read in flight until end_io. */
		atomic64_inc(&s->stats.slow_reads);
		bio->bi_status = slow_read(s, bio, io);
	}
	bio_endio(bio);
	return true;
}

/*
 * Everything queued, once; writes waiting for room go back to the head of
 * the queue, tried again in N2L_SLOW_RETRY_MS (or as soon as another bio
 * comes).
 */
static void n2l_slow_work(struct work_struct *w)
{
	struct n2l_slow *q = container_of(to_delayed_work(w), struct n2l_slow,
					  work);
	unsigned int noio = memalloc_noio_save();
	struct bio_list waiting;
	struct bio *bio;

	bio_list_init(&waiting);
	for (;;) {
		spin_lock_irq(&q->store->lock);
		bio = bio_list_pop(&q->bios);
		spin_unlock_irq(&q->store->lock);
		if (!bio)
			break;
		if (!slow_one(q->store, bio))
			bio_list_add(&waiting, bio);
	}
	if (!bio_list_empty(&waiting)) {
		spin_lock_irq(&q->store->lock);
		bio_list_merge_head(&q->bios, &waiting);
		spin_unlock_irq(&q->store->lock);
		queue_delayed_work(q->wq, &q->work,
				   msecs_to_jiffies(N2L_SLOW_RETRY_MS));
	}
	memalloc_noio_restore(noio);
}

int n2l_slow_init(struct n2l_store *s)
{
	struct n2l_slow *q[] = { &s->slow_writes, &s->slow_reads };
	static const char * const names[] = { "nswap2l-sw-%s", "nswap2l-sr-%s" };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(q); i++) {
		q[i]->store = s;
		bio_list_init(&q[i]->bios);
		INIT_DELAYED_WORK(&q[i]->work, n2l_slow_work);
		q[i]->wq = alloc_workqueue(names[i], WQ_MEM_RECLAIM, 0,
					   dm_device_name(s->md));
		if (!q[i]->wq)
			return -ENOMEM;
	}
	return 0;
}

void n2l_slow_exit(struct n2l_store *s)
{
	struct n2l_slow *q[] = { &s->slow_writes, &s->slow_reads };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(q); i++) {
		if (!q[i]->wq)
			continue;
		cancel_delayed_work_sync(&q[i]->work);
		destroy_workqueue(q[i]->wq);
	}
}

/*----------------------------------------------------------------*/

/* A bio of @pages freshly allocated pages, all or nothing. */
struct bio *n2l_alloc_buffer(u32 pages)
{
	struct bio *bio = n2l_nomem(GFP_KERNEL) ? NULL :
			  bio_kmalloc(pages, GFP_KERNEL);
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
