// SPDX-License-Identifier: GPL-2.0-only
/*
 * The I/O path: map, end_io and the worker that finishes what map could
 * not do without blocking.
 *
 * Reads are remapped to where the slots live; slots that hold no data
 * read as zeroes, lost slots fail. A write marks its slots writing, and a
 * second write or a discard of a slot being written waits until the
 * first has landed (one write per slot in flight, as dm-cache's bio
 * prison has it). Writes go where the placement policy says: in place
 * when the slot stays on its block medium, else to fresh blocks or a new
 * version on Network RAM, which the write installs in the slot map when it
 * completes; until then readers keep reading the old copy, and a failed
 * write leaves the old copy as it was. A bio covering many slots stays
 * one bio as long as its slots are contiguous on one medium; the rest
 * goes back to device-mapper with dm_accept_partial_bio().
 *
 * On Network RAM a write is a PUT of the whole run to each server of its
 * group and a read a GET (nswap2l-netram.c); such bios are ours
 * (DM_MAPIO_SUBMITTED) until the servers answer. Only block I/O joins
 * the gate (nswap2l-gate.c): Network RAM keeps its order per server
 * instead (nswap-net/kclient/send.c).
 */
#include "nswap2l.h"
#include "nswap2l-trace.h"

static struct n2l_store *ti_store(struct dm_target *ti)
{
	struct n2l_target *t = ti->private;

	return t->store;
}

static n2l_slot_t bio_slot(struct dm_target *ti, struct bio *bio)
{
	return to_slot(dm_target_offset(ti, bio->bi_iter.bi_sector) >>
		       N2L_SLOT_SHIFT);
}

static bool bio_slot_aligned(struct dm_target *ti, struct bio *bio)
{
	return !((dm_target_offset(ti, bio->bi_iter.bi_sector) |
		  bio_sectors(bio)) & (N2L_SLOT_SECTORS - 1));
}

/* Keep the first @nr slots of @bio; device-mapper maps the rest again. */
static void keep_slots(struct bio *bio, u32 nr)
{
	if ((nr << N2L_SLOT_SHIFT) < bio_sectors(bio))
		dm_accept_partial_bio(bio, nr << N2L_SLOT_SHIFT);
}

static void count_write(struct n2l_store *s, struct bio *bio,
			enum n2l_medium m)
{
	struct n2l_medium_stats *st = &s->media[m].stats;

	atomic64_inc(&st->writes);
	atomic64_add(bio_sectors(bio), &st->write_sectors);
}

static void remap(struct n2l_store *s, struct bio *bio, enum n2l_medium m,
		  u32 blk)
{
	struct n2l_medium_stats *st = &s->media[m].stats;

	bio_set_dev(bio, s->media[m].bdev);
	bio->bi_iter.bi_sector = (sector_t)blk << N2L_SLOT_SHIFT;
	if (bio_data_dir(bio) == WRITE) {
		count_write(s, bio, m);
	} else {
		atomic64_inc(&st->reads);
		atomic64_add(bio_sectors(bio), &st->read_sectors);
	}
}

static void defer_bio(struct n2l_store *s, struct bio *bio)
{
	unsigned long flags;

	spin_lock_irqsave(&s->lock, flags);
	bio_list_add(&s->deferred, bio);
	s->deferred_nr++;
	spin_unlock_irqrestore(&s->lock, flags);
	queue_work(s->wq, &s->worker);
}

static void complete_bio(struct bio *bio, blk_status_t status)
{
	bio->bi_status = status;
	bio_endio(bio);
}

/*----------------------------------------------------------------*/

static int map_flush(struct n2l_store *s, struct bio *bio)
{
	struct block_device *flash = s->media[N2L_FLASH].bdev;
	struct block_device *disk = s->media[N2L_DISK].bdev;
	bool first = dm_bio_get_target_bio_nr(bio) == 0;
	struct block_device *bdev;

	/*
	 * Two flush bios per flush, one for each block medium. A medium's
	 * flush writes its cache back, so none gets two: with one medium the
	 * second bio completes at once, and with a metadata device so does
	 * the second while the first waits for a commit, which flushes all.
	 */
	if (s->meta && first)
		return n2l_meta_flush(s, bio);
	if (s->meta)
		bdev = NULL;
	else if (first)
		bdev = flash ?: disk;
	else
		bdev = flash ? disk : NULL;
	if (!bdev) {
		bio_endio(bio);
		return DM_MAPIO_SUBMITTED;
	}
	bio_set_dev(bio, bdev);
	return DM_MAPIO_REMAPPED;
}

/*
 * Reads of prefetched slots: every one counts (the read/prefetch ratio of
 * the original Nswap2L), and the first of each slot is a prefetch hit.
 */
static void __count_prefetch_reads(struct n2l_store *s, struct n2l_io *io)
{
	u32 i, reads = 0, hits = 0;
	n2l_slot_t slot;
	unsigned int f;
	sme_t e;

	for (i = 0; i < io->nr; i++) {
		slot = to_slot(from_slot(io->slot) + i);
		e = slotmap_get(&s->map, slot);
		f = sme_flags(e);
		if (!(f & SME_PREFETCHED))
			continue;
		reads++;
		if (!(f & SME_PF_READ)) {
			slotmap_set(&s->map, slot, sme_set_flags(e, f | SME_PF_READ));
			hits++;
		}
	}
	atomic64_add(reads, &s->stats.prefetch_reads);
	atomic64_add(hits, &s->stats.prefetch_hits);
}

/*
 * A read of io->nr slots goes to io->medium: it is in flight until
 * end_io, and the degree of read parallelism counts every read in flight
 * on every medium when it starts, itself included.
 */
static void __read_issued(struct n2l_store *s, struct n2l_io *io)
{
	enum n2l_medium m;
	u32 inflight = 0;

	lockdep_assert_held(&s->lock);
	io->kind = N2L_IO_READ;
	atomic_inc(&s->media[io->medium].stats.reads_inflight);
	for_each_medium(m)
		inflight += atomic_read(&s->media[m].stats.reads_inflight);
	atomic64_inc(&s->stats.read_issues);
	atomic64_add(inflight, &s->stats.read_parallel);
	trace_nswap2l_read(s->devt, from_slot(io->slot), io->nr, io->medium);
	__count_prefetch_reads(s, io);
	__n2l_pf_read(s, io->slot, io->nr, io->medium);
}

/* Slots whose every copy is gone fail; the device goes on. */
static int fail_read(struct n2l_store *s, struct bio *bio, u32 n)
{
	atomic64_add(n, &s->netram.failed_reads);
	DMERR_LIMIT("%s: read of a lost slot: its data is gone", dm_device_name(s->md));
	complete_bio(bio, BLK_STS_IOERR);
	return DM_MAPIO_SUBMITTED;
}

/* Called with the lock held (taken with @flags); releases it. */
static int map_read_netram(struct n2l_store *s, struct bio *bio,
			   struct n2l_io *io, sme_t e, unsigned long flags)
	__releases(&s->lock)
{
	int srv;

	io->nr = min(io->nr, N2L_MAX_PAGES);
	io->group = sme_group(e);
	io->vers = sme_vers(e);
	srv = n2l_netram_pick_reader(s, io->group, 0);
	if (srv >= 0) {
		io->srv[0] = srv;
		io->nreq = 1;
		__read_issued(s, io);
	}
	spin_unlock_irqrestore(&s->lock, flags);

	keep_slots(bio, io->nr);
	if (srv < 0)
		return fail_read(s, bio, io->nr);
	atomic64_inc(&s->media[N2L_NETRAM].stats.reads);
	atomic64_add(bio_sectors(bio), &s->media[N2L_NETRAM].stats.read_sectors);
	n2l_netram_read(s, bio);
	return DM_MAPIO_SUBMITTED;
}

static int map_read(struct n2l_store *s, struct bio *bio, struct n2l_io *io)
{
	unsigned long flags;
	sme_t e;
	u32 n;

	spin_lock_irqsave(&s->lock, flags);
	e = slotmap_get(&s->map, io->slot);
	if (sme_lost(e)) {
		n = slotmap_contiguous(&s->map, io->slot, io->nr);
		spin_unlock_irqrestore(&s->lock, flags);
		keep_slots(bio, n);
		return fail_read(s, bio, n);
	}
	if (sme_medium(e) == N2L_NONE) {
		n = slotmap_unmapped_run(&s->map, io->slot, io->nr);
		spin_unlock_irqrestore(&s->lock, flags);
		keep_slots(bio, n);
		atomic64_add(n, &s->stats.zero_reads);
		zero_fill_bio(bio);
		bio_endio(bio);
		return DM_MAPIO_SUBMITTED;
	}
	io->nr = slotmap_contiguous(&s->map, io->slot, io->nr);
	io->medium = sme_medium(e);
	if (io->medium == N2L_NETRAM)
		return map_read_netram(s, bio, io, e, flags);
	__read_issued(s, io);
	io->gen = n2l_gate_enter(s);
	spin_unlock_irqrestore(&s->lock, flags);

	keep_slots(bio, io->nr);
	remap(s, bio, sme_medium(e), sme_blk(e));
	return DM_MAPIO_REMAPPED;
}

/*----------------------------------------------------------------*/

enum place_result {
	PLACED,
	PLACE_LATER,	/* room, a server or the slot will be free shortly */
	PLACE_NOSPC,
};

/*
 * Free blocks of each medium, as the placement policy sees them; Network
 * RAM counts the servers not in @avoid.
 */
void __n2l_media_free(struct n2l_store *s, u32 *free, u64 avoid)
{
	enum n2l_medium m;

	for_each_medium(m)
		free[m] = runalloc_free(&s->media[m].alloc);
	free[N2L_NETRAM] = __n2l_netram_free(s, avoid);
}

/* The policy's medium for a slot now on @now, given @free; N2L_NONE: none. */
enum n2l_medium __n2l_ask_placement(struct n2l_store *s, u32 *free,
				    enum n2l_medium now)
{
	struct n2l_place_ctx ctx = { .now = now };
	enum n2l_medium m;

	memcpy(ctx.free, free, sizeof(ctx.free));
	m = s->placement->type->place(s->placement, &ctx);
	if (m != N2L_NONE && m != now && !free[m])
		m = N2L_NONE;
	return m;
}

/*
 * No medium has room for a slot that is on none yet: such writes fail
 * with ENOSPC (or wait for room on its way) until slots are discarded or
 * media added. What status calls "full".
 */
bool __n2l_full(struct n2l_store *s)
{
	u32 free[N2L_NR_MEDIA];

	lockdep_assert_held(&s->lock);
	__n2l_media_free(s, free, 0);
	return __n2l_ask_placement(s, free, N2L_NONE) == N2L_NONE;
}

/* How many slots of @io, from its first, no write holds; at most io->nr. */
static u32 __unwritten_run(struct n2l_store *s, struct n2l_io *io)
{
	u32 i;

	for (i = 0; i < io->nr; i++)
		if (sme_flags(slotmap_get(&s->map, to_slot(from_slot(io->slot) + i))) &
		    SME_WRITING)
			break;
	return i;
}

/* Mark the @io->nr slots written; what was prefetched is simply written now. */
static void __start_writing(struct n2l_store *s, struct n2l_io *io)
{
	n2l_slot_t slot;
	u32 i;
	sme_t e;

	for (i = 0; i < io->nr; i++) {
		slot = to_slot(from_slot(io->slot) + i);
		e = slotmap_get(&s->map, slot);
		slotmap_set(&s->map, slot, sme_set_flags(e, (sme_flags(e) |
					    SME_WRITING) & ~SME_PREFETCH_FLAGS));
	}
}

/* On Network RAM, on at least @need servers; false if there are not as many. */
static bool __place_netram(struct n2l_store *s, struct n2l_io *io,
			   unsigned int need)
{
	unsigned int n;
	int g;

	io->nr = min(io->nr, N2L_MAX_PAGES);
	g = __n2l_netram_place(s, io->nr, 0, READ_ONCE(s->netram.replicas),
			       need, io->srv, &n, &io->vers);
	if (g < 0)
		return false;
	io->kind = N2L_IO_WRITE_NEW;
	io->medium = N2L_NETRAM;
	io->group = g;
	io->nreq = n;
	/* the slow path keeps the copies stored: only if no restart took them */
	while (n--)
		io->epoch[n] = s->netram.restarts[io->srv[n]];
	return true;
}

/*
 * The medium for the write of @io, whose first slot's entry is @e; for
 * Network RAM its group, version and servers are set in @io. As many
 * copies as the device keeps, or another medium; fewer copies (repaired
 * later) only when nothing else has room.
 */
static enum n2l_medium __choose(struct n2l_store *s, struct n2l_io *io, sme_t e)
{
	u32 free[N2L_NR_MEDIA];
	/* Network RAM never overwrites in place: to the policy, a new slot. */
	enum n2l_medium now = sme_medium(e) == N2L_NETRAM ? N2L_NONE : sme_medium(e);
	enum n2l_medium m;

	__n2l_media_free(s, free, 0);
	m = __n2l_ask_placement(s, free, now);
	if (m != N2L_NETRAM)
		return m;
	if (__place_netram(s, io, READ_ONCE(s->netram.replicas)))
		return N2L_NETRAM;
	free[N2L_NETRAM] = 0;
	m = __n2l_ask_placement(s, free, now);
	if (m == N2L_NONE && __place_netram(s, io, 1)) {
		/* Fewer copies than wanted: the repair work adds the rest. */
		n2l_repair_kick(s);
		return N2L_NETRAM;
	}
	return m;
}

/* Overwrite the first @nr slots where they are: they keep their blocks. */
static void __place_inplace(struct n2l_store *s, struct n2l_io *io, u32 nr)
{
	sme_t e = slotmap_get(&s->map, io->slot);
	u32 i;

	io->kind = N2L_IO_WRITE_INPLACE;
	io->medium = sme_medium(e);
	io->blk = to_blk(sme_blk(e));
	io->nr = nr;
	for (i = 0; i < nr; i++)
		__n2l_pf_write(s, to_slot(from_slot(io->slot) + i), io->medium);
}

/* Write @nr slots to the fresh blocks from @blk on @m, installed at end. */
static void __place_new(struct n2l_io *io, enum n2l_medium m, n2l_blk_t blk,
			u32 nr)
{
	io->kind = N2L_IO_WRITE_NEW;
	io->medium = m;
	io->blk = blk;
	io->nr = nr;
}

/*
 * The write stays on the slot's block medium. Overwrite in place, unless
 * the slots are scattered there and a fresh run keeps more of the bio
 * whole: a multi-slot write should stay one request.
 */
static void __place_same_medium(struct n2l_store *s, struct n2l_io *io,
				enum n2l_medium m)
{
	u32 inplace = slotmap_contiguous(&s->map, io->slot, io->nr), got = 0;
	n2l_blk_t blk;

	if (inplace < io->nr)
		got = runalloc_get(&s->media[m].alloc, io->nr, &blk);
	if (got > inplace) {
		__place_new(io, m, blk, got);
		return;
	}
	if (got)
		runalloc_put(&s->media[m].alloc, blk, got);
	__place_inplace(s, io, inplace);
}

/*
 * Decide where the write described by @io (slot, nr) goes and mark its
 * slots written; on PLACED, @io says what end_io must do, io->nr how many
 * slots of the bio this covers and where they go.
 */
static enum place_result place_write(struct n2l_store *s, struct n2l_io *io)
{
	unsigned long flags;
	enum n2l_medium m;
	n2l_blk_t blk;
	u32 run;
	sme_t e;

	spin_lock_irqsave(&s->lock, flags);
	/* io->nr stays as it is until placed: a deferred bio is tried again. */
	run = __unwritten_run(s, io);
	if (!run) {
		spin_unlock_irqrestore(&s->lock, flags);
		return PLACE_LATER;
	}
	io->nr = run;
	e = slotmap_get(&s->map, io->slot);
	m = __choose(s, io, e);
	if (m == N2L_NONE) {
		bool later = __n2l_free_pending(s) || s->gate.draining ||
			     __n2l_netram_waiting(s, io) ||
			     __n2l_netram_room_coming(s);

		/*
		 * Room coming is asked for before it is looked at, so only
		 * room that landed between __choose() and the ask (a server's
		 * answer on another CPU) is neither seen nor coming: look once
		 * more, or a write fails with ENOSPC on servers that have room.
		 */
		if (!later)
			m = __choose(s, io, e);
		if (m == N2L_NONE) {
			spin_unlock_irqrestore(&s->lock, flags);
			return later ? PLACE_LATER : PLACE_NOSPC;
		}
	}
	if (m == sme_medium(e) && m != N2L_NETRAM) {
		__place_same_medium(s, io, m);
	} else if (m != N2L_NETRAM) {
		u32 n = runalloc_get(&s->media[m].alloc, io->nr, &blk);

		__place_new(io, m, blk, n);
	}
	__start_writing(s, io);
	if (m != N2L_NETRAM)
		io->gen = n2l_gate_enter(s);
	spin_unlock_irqrestore(&s->lock, flags);
	atomic64_add(io->nr, &s->mig.swapouts);
	trace_nswap2l_write(s->devt, from_slot(io->slot), io->nr, io->medium);
	return PLACED;
}

static int map_write(struct n2l_store *s, struct bio *bio, struct n2l_io *io)
{
	switch (place_write(s, io)) {
	case PLACED:
		keep_slots(bio, io->nr);
		if (io->medium == N2L_NETRAM) {
			count_write(s, bio, N2L_NETRAM);
			n2l_netram_write(s, bio);
			return DM_MAPIO_SUBMITTED;
		}
		remap(s, bio, io->medium, from_blk(io->blk));
		return DM_MAPIO_REMAPPED;
	case PLACE_LATER:
		/* One slot, so that the worker never has to split the bio. */
		keep_slots(bio, 1);
		io->nr = 1;
		defer_bio(s, bio);
		return DM_MAPIO_SUBMITTED;
	case PLACE_NOSPC:
		break;
	}
	atomic64_inc(&s->stats.nospc);
	complete_bio(bio, BLK_STS_NOSPC);
	return DM_MAPIO_SUBMITTED;
}

int n2l_map(struct dm_target *ti, struct bio *bio)
{
	struct n2l_store *s = ti_store(ti);
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));

	io->kind = N2L_IO_NONE;
	io->fua = false;
	io->start_ns = ktime_get_ns();
	io->since = 0;
	io->give_up = 0;
	io->nreq = 0;
	if (bio->bi_opf & REQ_PREFLUSH)
		return map_flush(s, bio);

	if (unlikely(!bio_slot_aligned(ti, bio))) {
		DMERR_LIMIT("I/O not aligned to the 4096-byte slot: sector %llu, %u sectors",
			    (unsigned long long)bio->bi_iter.bi_sector,
			    bio_sectors(bio));
		return DM_MAPIO_KILL;
	}
	io->slot = bio_slot(ti, bio);
	io->nr = bio_sectors(bio) >> N2L_SLOT_SHIFT;
	if (unlikely(op_is_write(bio_op(bio)) && n2l_meta_failed(s))) {
		complete_bio(bio, BLK_STS_IOERR);
		return DM_MAPIO_SUBMITTED;
	}

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		return map_read(s, bio, io);
	case REQ_OP_WRITE:
		io->fua = bio->bi_opf & REQ_FUA;
		return map_write(s, bio, io);
	case REQ_OP_DISCARD:
		defer_bio(s, bio);
		return DM_MAPIO_SUBMITTED;
	default:
		return DM_MAPIO_KILL;
	}
}

/*----------------------------------------------------------------*/

/* Count the slot whose entry is @e in (or out of) its medium and group. */
void __n2l_held_add(struct n2l_store *s, sme_t e, int delta)
{
	lockdep_assert_held(&s->lock);
	s->media[sme_medium(e)].held += delta;
	if (sme_medium(e) == N2L_NETRAM)
		__n2l_group_hold(s, sme_group(e), delta);
}

/*
 * Free the copy of @slot that entry @e points at: a block goes to the
 * gate's quarantine, Network RAM copies are invalidated after whatever was
 * queued to their servers before.
 */
void __n2l_free_copy(struct n2l_store *s, n2l_slot_t slot, sme_t e)
{
	lockdep_assert_held(&s->lock);
	switch (sme_medium(e)) {
	case N2L_NONE:
		if (sme_lost(e))
			s->netram.lost_marked--;
		return;
	case N2L_NETRAM:
		__n2l_netram_inval_group(s, sme_group(e), slot, sme_vers(e),
					 NULL, 0);
		break;
	default:
		__n2l_free_blocks(s, sme_medium(e), to_blk(sme_blk(e)), 1);
	}
	__n2l_held_add(s, e, -1);
}

/* Writes waiting for a slot being written may go now. */
void __n2l_writes_landed(struct n2l_store *s)
{
	if (s->deferred_nr)
		queue_work(s->wq, &s->worker);
}

/* Where the copy written by @io for its @i-th slot lives. */
static u64 io_loc(struct n2l_io *io, u32 i)
{
	if (io->medium == N2L_NETRAM)
		return sme_netram_loc(io->group, io->vers);
	return from_blk(io->blk) + i;
}

/* The copies @io wrote for @slot will never be pointed at. */
static void __drop_copy(struct n2l_store *s, struct n2l_io *io,
			n2l_slot_t slot, u32 i)
{
	unsigned int k;

	if (io->medium != N2L_NETRAM) {
		/* never visible to anyone: no quarantine needed */
		runalloc_put(&s->media[io->medium].alloc, to_blk(io_loc(io, i)), 1);
		return;
	}
	for (k = 0; k < io->nreq; k++)
		n2l_net_inval(s->netram.net, io->srv[k], from_slot(slot), io->vers);
}

/* The write's Network RAM references end with it. */
static void __netram_write_ended(struct n2l_store *s, struct n2l_io *io)
{
	unsigned int k;

	if (io->medium != N2L_NETRAM)
		return;
	for (k = 0; k < io->nreq; k++)
		n2l_netram_settled(s, io->srv[k]);
	__n2l_group_put(s, io->group);
}

/*
 * A write to fresh blocks (or to Network RAM) has ended: its slots point
 * at it, or, if it failed, keep their old copies. Either way they are no
 * longer being written. The old copy of an overwritten slot is freed.
 */
void n2l_install(struct n2l_store *s, struct n2l_io *io, bool ok)
{
	unsigned int clear = SME_PREFETCH_FLAGS | SME_WRITING | SME_LOST;
	unsigned long flags;
	n2l_slot_t slot;
	sme_t e, new;
	u32 i;

	spin_lock_irqsave(&s->lock, flags);
	for (i = 0; i < io->nr; i++) {
		slot = to_slot(from_slot(io->slot) + i);
		e = slotmap_get(&s->map, slot);
		if (!ok) {
			__drop_copy(s, io, slot, i);
			slotmap_set(&s->map, slot,
				    sme_set_flags(e, sme_flags(e) & ~SME_WRITING));
			continue;
		}
		new = sme_make(io->medium, io_loc(io, i), sme_flags(e) & ~clear);
		__n2l_free_copy(s, slot, e);
		slotmap_set(&s->map, slot, new);
		__n2l_held_add(s, new, 1);
		__n2l_pf_write(s, slot, io->medium);
	}
	__netram_write_ended(s, io);
	__n2l_writes_landed(s);
	spin_unlock_irqrestore(&s->lock, flags);
}

/* An in-place overwrite has ended: its slots are no longer being written. */
static void end_inplace(struct n2l_store *s, struct n2l_io *io)
{
	unsigned long flags;
	n2l_slot_t slot;
	u32 i;
	sme_t e;

	spin_lock_irqsave(&s->lock, flags);
	for (i = 0; i < io->nr; i++) {
		slot = to_slot(from_slot(io->slot) + i);
		e = slotmap_get(&s->map, slot);
		slotmap_set(&s->map, slot,
			    sme_set_flags(e, sme_flags(e) & ~SME_WRITING));
	}
	__n2l_writes_landed(s);
	spin_unlock_irqrestore(&s->lock, flags);
}

/* Into the latency histogram of the medium that served it. */
static void count_latency(struct n2l_store *s, struct bio *bio,
			  struct n2l_io *io)
{
	struct n2l_medium_stats *st = &s->media[io->medium].stats;
	u64 us = div_u64(ktime_get_ns() - io->start_ns, NSEC_PER_USEC);
	unsigned int b = min_t(unsigned int, fls64(us), N2L_LAT_BUCKETS - 1);
	unsigned int dir = op_is_write(bio_op(bio));

	atomic64_inc(&st->lat[dir].bucket[b]);
	atomic64_inc(&st->lat_done[dir]);
	atomic64_add(us, &st->lat_sum_us[dir]);
}

static void end_io_kind(struct n2l_store *s, struct bio *bio,
			struct n2l_io *io, blk_status_t *error)
{
	if (io->kind == N2L_IO_NONE)
		return;
	count_latency(s, bio, io);
	switch (io->kind) {
	case N2L_IO_LANDED:
		return;
	case N2L_IO_WRITE_NEW:
		n2l_install(s, io, *error == BLK_STS_OK);
		if (io->medium == N2L_NETRAM)
			n2l_net_unseal(s->netram.net, &io->sealed);
		break;
	case N2L_IO_READ:
		atomic_dec(&s->media[io->medium].stats.reads_inflight);
		break;
	case N2L_IO_WRITE_INPLACE:
		end_inplace(s, io);
		break;
	}
	if (io->medium != N2L_NETRAM)
		n2l_gate_exit(s, io->gen);
}

int n2l_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct n2l_store *s = ti_store(ti);
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));

	end_io_kind(s, bio, io, error);
	/* A FUA write, now in the map, completes after the map's commit. */
	if (n2l_meta_hold(s, bio, io, *error))
		return DM_ENDIO_INCOMPLETE;
	return DM_ENDIO_DONE;
}

/*----------------------------------------------------------------*/

/*
 * Unmap up to N2L_DISCARD_BATCH slots of the discard, stopping at a slot
 * being written (the discard waits for that write); false if nothing
 * could be unmapped.
 */
static bool discard_batch(struct n2l_store *s, struct n2l_io *io)
{
	u32 n = min_t(u32, io->nr, N2L_DISCARD_BATCH), i, freed = 0;
	n2l_slot_t slot;
	sme_t e;

	spin_lock_irq(&s->lock);
	for (i = 0; i < n; i++) {
		slot = to_slot(from_slot(io->slot) + i);
		e = slotmap_get(&s->map, slot);
		if (sme_flags(e) & SME_WRITING)
			break;
		if (sme_medium(e) != N2L_NONE) {
			freed++;
			__n2l_pf_free(s, slot);
		}
		__n2l_free_copy(s, slot, e);
		slotmap_set(&s->map, slot, sme_make(N2L_NONE, 0, 0));
	}
	spin_unlock_irq(&s->lock);
	if (!i)
		return false;

	trace_nswap2l_free(s->devt, from_slot(io->slot), i, N2L_NONE);
	atomic64_add(freed, &s->stats.discarded);
	io->slot = to_slot(from_slot(io->slot) + i);
	io->nr -= i;
	return true;
}

/* False if the discard has to wait; it keeps its progress in @io. */
static bool process_discard(struct n2l_store *s, struct bio *bio)
{
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));

	while (io->nr) {
		if (!discard_batch(s, io))
			return false;
		cond_resched();
	}
	bio_endio(bio);
	return true;
}

/* A one-slot write that found no room or version in map. */
static bool process_write(struct n2l_store *s, struct bio *bio)
{
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));

	switch (place_write(s, io)) {
	case PLACED:
		if (io->medium == N2L_NETRAM) {
			count_write(s, bio, N2L_NETRAM);
			n2l_netram_write(s, bio);
			return true;
		}
		remap(s, bio, io->medium, from_blk(io->blk));
		dm_submit_bio_remap(bio, NULL);
		return true;
	case PLACE_LATER:
		return false;
	case PLACE_NOSPC:
		break;
	}
	atomic64_inc(&s->stats.nospc);
	complete_bio(bio, BLK_STS_NOSPC);
	return true;
}

/*
 * Bios that must still wait go back to the head of the list, in order;
 * whatever they wait for (a release, a write of the same slot, a server)
 * queues the worker again when it happens.
 */
static void process_deferred(struct n2l_store *s)
{
	struct bio_list bios, later;
	unsigned int placed = 0;
	struct bio *bio;
	bool done;

	bio_list_init(&later);
	spin_lock_irq(&s->lock);
	bios = s->deferred;
	bio_list_init(&s->deferred);
	spin_unlock_irq(&s->lock);

	while ((bio = bio_list_pop(&bios))) {
		if (bio_op(bio) == REQ_OP_DISCARD)
			done = process_discard(s, bio);
		else
			done = process_write(s, bio);
		if (done)
			placed++;
		else
			bio_list_add(&later, bio);
	}
	spin_lock_irq(&s->lock);
	s->deferred_nr -= placed;
	bio_list_merge(&later, &s->deferred);
	s->deferred = later;
	spin_unlock_irq(&s->lock);
}

void n2l_worker(struct work_struct *w)
{
	struct n2l_store *s = container_of(w, struct n2l_store, worker);
	unsigned int noio = memalloc_noio_save();

	n2l_gate_release(s);
	process_deferred(s);
	memalloc_noio_restore(noio);
}
