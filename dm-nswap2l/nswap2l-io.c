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
 */
#include "nswap2l.h"

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

static void remap(struct n2l_store *s, struct bio *bio, enum n2l_medium m,
		  u32 blk)
{
	struct n2l_medium_stats *st = &s->media[m].stats;

	bio_set_dev(bio, s->media[m].bdev);
	bio->bi_iter.bi_sector = (sector_t)blk << N2L_SLOT_SHIFT;
	if (bio_data_dir(bio) == WRITE) {
		atomic64_inc(&st->writes);
		atomic64_add(bio_sectors(bio), &st->write_sectors);
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
	io->gen = n2l_gate_enter(s);
	spin_unlock_irqrestore(&s->lock, flags);

	io->kind = N2L_IO_READ;
	io->medium = sme_medium(e);
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

static enum n2l_medium __choose_medium(struct n2l_store *s, sme_t e)
{
	struct n2l_place_ctx ctx = { .now = sme_medium(e) };
	enum n2l_medium m;

	for_each_medium(m)
		ctx.free[m] = runalloc_free(&s->media[m].alloc);
	m = s->placement->type->place(s->placement, &ctx);
	if (m != N2L_NONE && m != ctx.now && !ctx.free[m])
		m = N2L_NONE;
	return m;
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

	__stamp(s, io, nr, version, SME_PREFETCHED);
	io->kind = N2L_IO_WRITE_INPLACE;
	io->medium = sme_medium(e);
	io->blk = to_blk(sme_loc(e));
	io->nr = nr;
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

	spin_lock_irqsave(&s->lock, flags);
	e = slotmap_get(&s->map, io->slot);
	m = __choose_medium(s, e);
	if (m == N2L_NONE) {
		bool later = __n2l_free_pending(s) || s->gate.draining;

		spin_unlock_irqrestore(&s->lock, flags);
		return later ? PLACE_LATER : PLACE_NOSPC;
	}
	if (!__n2l_version_take(s, &version)) {
		spin_unlock_irqrestore(&s->lock, flags);
		return PLACE_LATER;
	}
	if (m == sme_medium(e)) {
		__place_same_medium(s, io, m, version);
	} else {
		n = runalloc_get(&s->media[m].alloc, io->nr, &blk);
		__place_new(s, io, m, blk, n, version);
	}
	io->gen = n2l_gate_enter(s);
	spin_unlock_irqrestore(&s->lock, flags);
	return PLACED;
}

static int map_write(struct n2l_store *s, struct bio *bio, struct n2l_io *io)
{
	switch (place_write(s, io)) {
	case PLACED:
		keep_slots(bio, io->nr);
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

/* A write to fresh blocks has ended: install it, or give its blocks back. */
static void install(struct n2l_store *s, struct n2l_io *io, bool ok)
{
	struct n2l_medium_dev *dst = &s->media[io->medium];
	unsigned long flags;
	u32 i, blk;
	sme_t e;

	spin_lock_irqsave(&s->lock, flags);
	for (i = 0; i < io->nr; i++) {
		n2l_slot_t slot = to_slot(from_slot(io->slot) + i);

		blk = from_blk(io->blk) + i;
		e = slotmap_get(&s->map, slot);
		if (!ok || sme_version(e) != io->version) {
			/* Never visible to anyone: no quarantine needed. */
			runalloc_put(&dst->alloc, to_blk(blk), 1);
			if (ok)
				atomic64_inc(&s->stats.dropped);
			continue;
		}
		if (sme_medium(e) != N2L_NONE) {
			__n2l_free_blocks(s, sme_medium(e), to_blk(sme_loc(e)), 1);
			s->media[sme_medium(e)].held--;
		}
		slotmap_set(&s->map, slot,
			    sme_make(io->medium, blk, io->version,
				     sme_flags(e) & ~SME_PREFETCHED));
		dst->held++;
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
		install(s, io, *error == BLK_STS_OK);
		n2l_version_put(s, io->version);
		break;
	case N2L_IO_READ:
	case N2L_IO_WRITE_INPLACE:
		break;
	}
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
			__n2l_free_blocks(s, sme_medium(e), to_blk(sme_loc(e)), 1);
			s->media[sme_medium(e)].held--;
			freed++;
		}
		slotmap_set(&s->map, slot, sme_make(N2L_NONE, 0, version, 0));
	}
	spin_unlock_irq(&s->lock);
	n2l_version_put(s, version);

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
