// SPDX-License-Identifier: GPL-2.0-only
/*
 * The I/O path: map, end_io and the worker that finishes what map could
 * not do without blocking.
 *
 * Reads are remapped to where the slots live; slots that hold no data
 * read as zeroes. Writes go where the placement policy says: in place
 * when the slot stays on its medium, else to freshly allocated blocks,
 * which the write installs in the slot map when it completes, and only
 * if no newer write or discard of the slot was mapped meanwhile (the
 * version check). Until then readers keep reading the old copy, and a
 * failed write leaves the old copy as it was. A bio covering many slots
 * stays one bio as long as its slots are contiguous on one medium; the
 * rest goes back to device-mapper with dm_accept_partial_bio().
 *
 * On Network RAM a write is a PUT of the whole run to one server and a
 * read a GET (netram-io.c); such bios are ours (DM_MAPIO_SUBMITTED) until
 * the server answers. Only block I/O joins the gate (nswap2l-gate.c):
 * Network RAM keeps its order per server instead (netram.h).
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
	struct block_device *bdev;

	/* Two flush bios per flush: one for each block medium present. */
	if (dm_bio_get_target_bio_nr(bio) == 0)
		bdev = flash ?: disk;
	else
		bdev = disk ?: flash;
	if (!bdev) {
		bio_endio(bio);
		return DM_MAPIO_SUBMITTED;
	}
	bio_set_dev(bio, bdev);
	return DM_MAPIO_REMAPPED;
}

/*
 * The first read of a prefetched slot is what prefetching is for: count
 * it, once.
 */
static void __count_prefetch_hits(struct n2l_store *s, struct n2l_io *io)
{
	n2l_slot_t slot;
	u32 i, hits = 0;
	sme_t e;

	for (i = 0; i < io->nr; i++) {
		slot = to_slot(from_slot(io->slot) + i);
		e = slotmap_get(&s->map, slot);
		if (sme_flags(e) & SME_PREFETCHED) {
			slotmap_set(&s->map, slot,
				    sme_set_flags(e, sme_flags(e) & ~SME_PREFETCHED));
			hits++;
		}
	}
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
	__count_prefetch_hits(s, io);
	__n2l_pf_read(s, io->slot, io->nr, io->medium);
}

/* Called with the lock held (taken with @flags); releases it. */
static int map_read_netram(struct n2l_store *s, struct bio *bio,
			   struct n2l_io *io, sme_t e, unsigned long flags)
	__releases(&s->lock)
{
	u32 server = sme_netram_server(sme_loc(e));
	struct n2l_server *srv = s->netram.servers[server];
	bool dead = !srv || srv->state == N2L_SRV_DEAD;

	io->nr = min(io->nr, N2L_MAX_PAGES);
	io->blk = to_blk(server);
	io->version = sme_netram_version(sme_loc(e));
	if (!dead)
		__read_issued(s, io);
	spin_unlock_irqrestore(&s->lock, flags);

	keep_slots(bio, io->nr);
	if (dead) {
		/* The only copy was on a server that died: the data is lost. */
		atomic64_add(io->nr, &s->netram.failed_reads);
		complete_bio(bio, BLK_STS_IOERR);
		return DM_MAPIO_SUBMITTED;
	}
	atomic64_inc(&s->media[N2L_NETRAM].stats.reads);
	atomic64_add(bio_sectors(bio), &s->media[N2L_NETRAM].stats.read_sectors);
	n2l_netram_get(s, bio);
	return DM_MAPIO_SUBMITTED;
}

static int map_read(struct n2l_store *s, struct bio *bio, struct n2l_io *io)
{
	unsigned long flags;
	sme_t e;
	u32 n;

	spin_lock_irqsave(&s->lock, flags);
	e = slotmap_get(&s->map, io->slot);
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
	remap(s, bio, sme_medium(e), sme_loc(e));
	return DM_MAPIO_REMAPPED;
}

/*----------------------------------------------------------------*/

enum place_result {
	PLACED,
	PLACE_LATER,	/* room or a version will appear shortly */
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
	free[N2L_NETRAM] = __n2l_netram_free(&s->netram, avoid);
}

static enum n2l_medium __ask_policy(struct n2l_store *s,
				    struct n2l_place_ctx *ctx)
{
	enum n2l_medium m = s->placement->type->place(s->placement, ctx);

	if (m != N2L_NONE && m != ctx->now && !ctx->free[m])
		m = N2L_NONE;
	return m;
}

/*
 * The medium for a write of @pages slots starting with the one whose entry
 * is @e, and on Network RAM the server in @server. @avoid: servers that
 * just refused this write.
 */
enum n2l_medium __n2l_choose(struct n2l_store *s, sme_t e, u32 pages,
			     u64 avoid, int *server)
{
	struct n2l_place_ctx ctx = { .now = sme_medium(e) };
	bool replace = ctx.now == N2L_NETRAM;
	enum n2l_medium m;

	__n2l_media_free(s, ctx.free, avoid);
	m = __ask_policy(s, &ctx);
	if (m != N2L_NETRAM)
		return m;
	*server = __n2l_netram_choose(&s->netram,
				      replace ? sme_netram_server(sme_loc(e)) : -1,
				      avoid, pages, replace);
	if (*server >= 0)
		return N2L_NETRAM;
	/* No server can take it after all: ask without Network RAM. */
	ctx.free[N2L_NETRAM] = 0;
	if (replace)
		ctx.now = N2L_NONE;
	return __ask_policy(s, &ctx);
}

/* Stamp @version on @nr slots of @io, clearing the @clear flags. */
static void __stamp(struct n2l_store *s, struct n2l_io *io, u32 nr,
		    u32 version, unsigned int clear)
{
	n2l_slot_t slot;
	u32 i;
	sme_t e;

	for (i = 0; i < nr; i++) {
		slot = to_slot(from_slot(io->slot) + i);
		e = slotmap_get(&s->map, slot);
		slotmap_set(&s->map, slot,
			    sme_make(sme_medium(e), sme_loc(e), version,
				     sme_flags(e) & ~clear));
	}
}

/*
 * Overwrite the first @nr slots where they are: they keep their blocks,
 * and what was prefetched is now simply written.
 */
static void __place_inplace(struct n2l_store *s, struct n2l_io *io, u32 nr,
			    u32 version)
{
	sme_t e = slotmap_get(&s->map, io->slot);

	u32 i;

	__stamp(s, io, nr, version, SME_PREFETCHED);
	io->kind = N2L_IO_WRITE_INPLACE;
	io->medium = sme_medium(e);
	io->blk = to_blk(sme_loc(e));
	io->nr = nr;
	for (i = 0; i < nr; i++)
		__n2l_pf_write(s, to_slot(from_slot(io->slot) + i), io->medium);
}

/*
 * Write @nr slots to the fresh blocks from @blk on @m. The slot map keeps
 * pointing at the old copies, stamped with the new version, until the
 * write ends.
 */
static void __place_new(struct n2l_store *s, struct n2l_io *io,
			enum n2l_medium m, n2l_blk_t blk, u32 nr, u32 version)
{
	__stamp(s, io, nr, version, 0);
	io->kind = N2L_IO_WRITE_NEW;
	io->medium = m;
	io->blk = blk;
	io->nr = nr;
	io->version = version;
}

/*
 * The write stays on the slot's medium. Overwrite in place, unless the
 * slots are scattered there and a fresh run keeps more of the bio whole:
 * a multi-slot write should stay one request.
 */
static void __place_same_medium(struct n2l_store *s, struct n2l_io *io,
				enum n2l_medium m, u32 version)
{
	u32 inplace = slotmap_contiguous(&s->map, io->slot, io->nr), got = 0;
	n2l_blk_t blk;

	if (inplace < io->nr)
		got = runalloc_get(&s->media[m].alloc, io->nr, &blk);
	if (got > inplace) {
		__place_new(s, io, m, blk, got, version);
		return;
	}
	if (got)
		runalloc_put(&s->media[m].alloc, blk, got);
	__place_inplace(s, io, inplace, version);
	/* No completion compares an in-place version: hold nothing. */
	n2l_version_put(s, version);
}

/*
 * No medium has room, but a server is still connecting or reconnecting:
 * the write may wait for it, for as long as a server may stay away before
 * it is declared dead (a Network-RAM-only device is usable right after
 * dmsetup create, before its servers have answered).
 */
static bool __waiting_for_servers(struct n2l_store *s, struct n2l_io *io)
{
	unsigned long limit = msecs_to_jiffies(READ_ONCE(s->netram.dead_after_ms));
	struct n2l_server *srv;
	unsigned int i;

	if (!io->since)
		io->since = jiffies ?: 1;
	if (time_after(jiffies, io->since + limit))
		return false;
	for (i = 0; i < N2L_MAX_SERVERS; i++) {
		srv = s->netram.servers[i];
		if (srv && (srv->state == N2L_SRV_CONNECTING ||
			    srv->state == N2L_SRV_DOWN))
			return true;
	}
	return false;
}

/*
 * Decide where the write described by @io (slot, nr) goes and stamp the
 * slot map; on PLACED, @io says what end_io must do, io->nr how many
 * slots of the bio this covers and io->blk where they go.
 */
static enum place_result place_write(struct n2l_store *s, struct n2l_io *io)
{
	unsigned long flags;
	enum n2l_medium m;
	u32 version, n;
	n2l_blk_t blk;
	sme_t e;

	int server = -1;

	spin_lock_irqsave(&s->lock, flags);
	e = slotmap_get(&s->map, io->slot);
	m = __n2l_choose(s, e, min(io->nr, N2L_MAX_PAGES), 0, &server);
	if (m == N2L_NONE) {
		bool later = __n2l_free_pending(s) || s->gate.draining ||
			     __waiting_for_servers(s, io);

		spin_unlock_irqrestore(&s->lock, flags);
		return later ? PLACE_LATER : PLACE_NOSPC;
	}
	if (!__n2l_version_take(s, &version)) {
		spin_unlock_irqrestore(&s->lock, flags);
		return PLACE_LATER;
	}
	if (m == N2L_NETRAM) {
		/* One PUT carries at most N2L_MAX_PAGES pages. */
		n = min(io->nr, N2L_MAX_PAGES);
		__place_new(s, io, m, to_blk(server), n, version);
	} else if (m == sme_medium(e)) {
		__place_same_medium(s, io, m, version);
	} else {
		n = runalloc_get(&s->media[m].alloc, io->nr, &blk);
		__place_new(s, io, m, blk, n, version);
	}
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
			n2l_netram_put(s, bio);
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
	io->since = 0;
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

	switch (bio_op(bio)) {
	case REQ_OP_READ:
		return map_read(s, bio, io);
	case REQ_OP_WRITE:
		return map_write(s, bio, io);
	case REQ_OP_DISCARD:
		defer_bio(s, bio);
		return DM_MAPIO_SUBMITTED;
	default:
		return DM_MAPIO_KILL;
	}
}

/*----------------------------------------------------------------*/

/* Count the slot whose entry is @e in (or out of) its medium and server. */
void __n2l_held_add(struct n2l_store *s, sme_t e, int delta)
{
	struct n2l_server *srv;

	lockdep_assert_held(&s->lock);
	s->media[sme_medium(e)].held += delta;
	if (sme_medium(e) == N2L_NETRAM) {
		srv = s->netram.servers[sme_netram_server(sme_loc(e))];
		if (!WARN_ON_ONCE(!srv))
			srv->held += delta;
	}
}

/*
 * Free the copy of @slot that entry @e points at: a block goes to the
 * gate's quarantine, a Network RAM page is invalidated after whatever was
 * queued to its server before.
 */
void __n2l_free_copy(struct n2l_store *s, n2l_slot_t slot, sme_t e)
{
	u32 loc = sme_loc(e);

	lockdep_assert_held(&s->lock);
	switch (sme_medium(e)) {
	case N2L_NONE:
		return;
	case N2L_NETRAM:
		__n2l_netram_inval(&s->netram, sme_netram_server(loc),
				   from_slot(slot), sme_netram_version(loc));
		break;
	default:
		__n2l_free_blocks(s, sme_medium(e), to_blk(loc), 1);
	}
	__n2l_held_add(s, e, -1);
}

/* Where the copy written by @io for its @i-th slot lives. */
static u32 io_loc(struct n2l_io *io, u32 i)
{
	if (io->medium == N2L_NETRAM)
		return sme_netram_loc(from_blk(io->blk), io->version);
	return from_blk(io->blk) + i;
}

/* The copy @io wrote for @slot lost to a newer write, or failed. */
static void __drop_copy(struct n2l_store *s, struct n2l_io *io,
			n2l_slot_t slot, u32 loc)
{
	if (io->medium == N2L_NETRAM)
		__n2l_netram_inval(&s->netram, from_blk(io->blk),
				   from_slot(slot), io->version);
	else	/* never visible to anyone: no quarantine needed */
		runalloc_put(&s->media[io->medium].alloc, to_blk(loc), 1);
}

/*
 * A write to fresh blocks (or to a server) has ended: install it, or give
 * its copies back. The old copy of an overwritten slot is freed, unless
 * the server just replaced it under the same key.
 */
void n2l_install(struct n2l_store *s, struct n2l_io *io, bool ok)
{
	unsigned long flags;
	n2l_slot_t slot;
	sme_t e, new;
	u32 i, loc;

	spin_lock_irqsave(&s->lock, flags);
	for (i = 0; i < io->nr; i++) {
		slot = to_slot(from_slot(io->slot) + i);
		loc = io_loc(io, i);
		e = slotmap_get(&s->map, slot);
		if (!ok || sme_version(e) != io->version) {
			__drop_copy(s, io, slot, loc);
			if (ok)
				atomic64_inc(&s->stats.dropped);
			continue;
		}
		new = sme_make(io->medium, loc, io->version,
			       sme_flags(e) & ~SME_PREFETCHED);
		if (sme_medium(e) == N2L_NETRAM && io->medium == N2L_NETRAM &&
		    sme_netram_server(sme_loc(e)) == from_blk(io->blk))
			__n2l_held_add(s, e, -1);	/* replaced in place */
		else
			__n2l_free_copy(s, slot, e);
		slotmap_set(&s->map, slot, new);
		__n2l_held_add(s, new, 1);
		__n2l_pf_write(s, slot, io->medium);
	}
	spin_unlock_irqrestore(&s->lock, flags);
}

int n2l_end_io(struct dm_target *ti, struct bio *bio, blk_status_t *error)
{
	struct n2l_store *s = ti_store(ti);
	struct n2l_io *io = dm_per_bio_data(bio, sizeof(*io));

	switch (io->kind) {
	case N2L_IO_NONE:
		return DM_ENDIO_DONE;
	case N2L_IO_WRITE_NEW:
		n2l_install(s, io, *error == BLK_STS_OK);
		n2l_version_put(s, io->version);
		break;
	case N2L_IO_READ:
		atomic_dec(&s->media[io->medium].stats.reads_inflight);
		break;
	case N2L_IO_WRITE_INPLACE:
		break;
	}
	if (io->medium != N2L_NETRAM)
		n2l_gate_exit(s, io->gen);
	return DM_ENDIO_DONE;
}

/*----------------------------------------------------------------*/

/*
 * Unmap up to N2L_DISCARD_BATCH slots of the discard; false if no version
 * could be taken, and the discard must wait. Unmapped slots get a version
 * too, so that a write still in flight to them cannot install itself.
 */
static bool discard_batch(struct n2l_store *s, struct n2l_io *io)
{
	u32 n = min_t(u32, io->nr, N2L_DISCARD_BATCH), i, version, freed = 0;
	sme_t e;

	spin_lock_irq(&s->lock);
	if (!__n2l_version_take(s, &version)) {
		spin_unlock_irq(&s->lock);
		return false;
	}
	for (i = 0; i < n; i++) {
		n2l_slot_t slot = to_slot(from_slot(io->slot) + i);

		e = slotmap_get(&s->map, slot);
		if (sme_medium(e) != N2L_NONE) {
			freed++;
			__n2l_pf_free(s, slot);
		}
		__n2l_free_copy(s, slot, e);
		slotmap_set(&s->map, slot, sme_make(N2L_NONE, 0, version, 0));
	}
	spin_unlock_irq(&s->lock);
	n2l_version_put(s, version);

	trace_nswap2l_free(s->devt, from_slot(io->slot), n, N2L_NONE);
	atomic64_add(freed, &s->stats.discarded);
	io->slot = to_slot(from_slot(io->slot) + n);
	io->nr -= n;
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
			n2l_netram_put(s, bio);
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
 * whatever they wait for (a release, a version bucket) queues the worker
 * again when it happens.
 */
static void process_deferred(struct n2l_store *s)
{
	struct bio_list bios, later;
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
		if (!done)
			bio_list_add(&later, bio);
	}
	if (bio_list_empty(&later))
		return;
	spin_lock_irq(&s->lock);
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
