// SPDX-License-Identifier: GPL-2.0-only
/*
 * The metadata device (metadata:<dev>): the slot map kept across
 * reboots, crashes and power cuts, through dm-bufio as dm-cache's and
 * dm-thin's persistent data is. The format is in nswap2l-meta.h.
 *
 * A commit makes the map as it is now the one a crash leaves: it writes
 * the map blocks that changed since the area it writes was last written,
 * flushes the data devices (every write the map names has landed),
 * flushes, and writes the superblock naming that area. It runs on a
 * REQ_PREFLUSH (the flush completes after it), after a FUA write (which
 * completes after it), every metadata_period_ms while anything changed,
 * when the device suspends and when it closes.
 *
 * Between commits the committed map may still name blocks that slots
 * have left. Such a block must not be written or trimmed until a commit
 * that no longer names it: the gate hands freed blocks to the pending
 * one of two quarantines (runalloc's RUNALLOC_META_Q + 0/1), a commit
 * covers the pending one as it starts (it copies the map after that), and
 * puts its blocks back once its superblock is on the device.
 *
 * A metadata write that fails leaves the device failed: writes and
 * discards fail from then on (reads go on), as dm-thin's read-only mode.
 */
#include <linux/dm-bufio.h>
#include <linux/uuid.h>

#include "nswap2l.h"
#include "nswap2l-meta.h"

/*
 * Between flushes the map is committed this often while it changes (as
 * dm-thin's pool commits every second): it bounds how long freed blocks
 * wait for reuse, and what a crash without flushes loses.
 */
static unsigned int metadata_period_ms = 1000;
module_param(metadata_period_ms, uint, 0644);
MODULE_PARM_DESC(metadata_period_ms,
		 "Commit the slot map this often (ms) while it changes");

static unsigned long meta_period(void)
{
	return msecs_to_jiffies(clamp(READ_ONCE(metadata_period_ms), 10U,
				      3600000U));
}

struct n2l_meta {
	struct n2l_store *store;
	struct block_device *bdev;
	struct dm_bufio_client *bufio;
	u8 uuid[16];
	u32 version;			/* of the format written */
	u64 gen;			/* of the committed map */
	u64 commits;
	u32 map_blocks;			/* per area */
	__le64 *scratch;		/* one map block's entries */
	/* The servers' addresses of the last commit (the client may be gone). */
	struct n2l_meta_server servers[N2L_META_SERVERS];

	struct mutex lock;		/* one commit at a time */
	struct workqueue_struct *wq;
	struct delayed_work work;
	/* Under the store's lock: */
	struct bio_list waiters;	/* flushes and FUA writes to complete */
	unsigned int pending;		/* quarantine that takes freed blocks */
	bool failed;
	bool closing;
};

/*----------------------------------------------------------------*/
/* The format */

static sector_t map_block(struct n2l_meta *mt, unsigned int area, u32 i)
{
	return N2L_META_SB_BLOCKS + (sector_t)area * mt->map_blocks + i;
}

static sector_t netram_block(struct n2l_meta *mt, unsigned int area)
{
	return N2L_META_SB_BLOCKS + 2 * (sector_t)mt->map_blocks + area;
}

static u32 medium_blocks(struct n2l_store *s, enum n2l_medium m)
{
	return s->media[m].alloc.nr_blocks;
}

static void fill_sb(struct n2l_meta *mt, struct n2l_meta_sb *sb, u64 gen,
		    u32 flags)
{
	struct n2l_store *s = mt->store;

	memset(sb, 0, N2L_META_BLOCK);
	sb->version = cpu_to_le32(mt->version);
	sb->magic = cpu_to_le64(N2L_META_MAGIC);
	memcpy(sb->uuid, mt->uuid, sizeof(sb->uuid));
	sb->gen = cpu_to_le64(gen);
	sb->nr_slots = cpu_to_le32(n2l_nr_slots(s));
	sb->map_blocks = cpu_to_le32(mt->map_blocks);
	sb->flash_blocks = cpu_to_le32(medium_blocks(s, N2L_FLASH));
	sb->disk_blocks = cpu_to_le32(medium_blocks(s, N2L_DISK));
	sb->flags = cpu_to_le32(flags);
	sb->entries = cpu_to_le32(N2L_META_ENTRIES);
	sb->commits = cpu_to_le64(mt->commits + 1);
	sb->csum = cpu_to_le32(n2l_meta_csum(sb));
}

/*----------------------------------------------------------------*/
/* Commits */

/*
 * Copy the entries of map block @i that changed since @area was last
 * written into the scratch buffer; false when none did.
 */
static bool take_dirty(struct n2l_meta *mt, unsigned int area, u32 *i)
{
	struct slotmap *map = &mt->store->map;
	u32 first, n, k;
	bool found;

	spin_lock_irq(&mt->store->lock);
	*i = find_next_bit(map->dirty[area], mt->map_blocks, *i);
	found = *i < mt->map_blocks;
	if (found) {
		__clear_bit(*i, map->dirty[area]);
		first = *i * N2L_META_ENTRIES;
		n = min_t(u32, N2L_META_ENTRIES, map->nr_slots - first);
		for (k = 0; k < n; k++)
			mt->scratch[k] = cpu_to_le64(map->entries[first + k] &
						     SME_PERSISTENT);
		memset(&mt->scratch[n], 0,
		       (N2L_META_ENTRIES - n) * sizeof(__le64));
	}
	spin_unlock_irq(&mt->store->lock);
	return found;
}

/* The map blocks of @area that changed, copied into dirty buffers. */
static int fill_map(struct n2l_meta *mt, unsigned int area, u64 gen)
{
	struct n2l_meta_map_block *mb;
	struct dm_buffer *buf;
	u32 i = 0;

	for (; take_dirty(mt, area, &i); i++) {
		mb = dm_bufio_new(mt->bufio, map_block(mt, area, i), &buf);
		if (IS_ERR(mb))
			return PTR_ERR(mb);
		mb->index = cpu_to_le32(i);
		mb->gen = cpu_to_le64(gen);
		memcpy(mb->entries, mt->scratch, sizeof(mb->entries));
		mb->csum = cpu_to_le32(n2l_meta_csum(mb));
		dm_bufio_mark_buffer_dirty(buf);
		dm_bufio_release(buf);
	}
	return 0;
}

/* What the map names must be on the data devices before the map is. */
static int flush_media(struct n2l_store *s)
{
	enum n2l_medium m;
	int r;

	for_each_medium(m) {
		if (!s->media[m].bdev)
			continue;
		r = blkdev_issue_flush(s->media[m].bdev);
		if (r)
			return r;
	}
	return 0;
}

/* The Network RAM block of @area (format 2), a dirty buffer; its floor. */
static int fill_netram(struct n2l_meta *mt, unsigned int area, u64 gen,
		       u64 *floor)
{
	struct n2l_meta_netram_block *nb;
	struct dm_buffer *buf;

	*floor = 0;
	if (mt->version == N2L_META_V1)
		return 0;
	nb = dm_bufio_new(mt->bufio, netram_block(mt, area), &buf);
	if (IS_ERR(nb))
		return PTR_ERR(nb);
	*floor = n2l_meta_netram_fill(mt->store, nb, gen, mt->servers);
	nb->csum = cpu_to_le32(n2l_meta_csum(nb));
	dm_bufio_mark_buffer_dirty(buf);
	dm_bufio_release(buf);
	return 0;
}

static int write_sb(struct n2l_meta *mt, u64 gen, u32 flags)
{
	struct dm_buffer *buf;
	void *sb;
	int r;

	sb = dm_bufio_new(mt->bufio, gen & 1, &buf);
	if (IS_ERR(sb))
		return PTR_ERR(sb);
	fill_sb(mt, sb, gen, flags);
	dm_bufio_mark_buffer_dirty(buf);
	dm_bufio_release(buf);
	r = dm_bufio_write_dirty_buffers(mt->bufio);
	return r ?: dm_bufio_issue_flush(mt->bufio);
}

/* Whether freed blocks wait in either quarantine for a commit. */
static bool __held_blocks(struct n2l_store *s)
{
	enum n2l_medium m;
	unsigned int q;

	for_each_medium(m)
		for (q = RUNALLOC_META_Q; q < RUNALLOC_QUARANTINES; q++)
			if (runalloc_quarantined(&s->media[m].alloc, q))
				return true;
	return false;
}

/* Whether the map changed since the last commit, or blocks wait for one. */
static bool need_commit(struct n2l_meta *mt)
{
	struct n2l_store *s = mt->store;
	bool need;

	spin_lock_irq(&s->lock);
	need = find_first_bit(s->map.dirty[mt->gen & 1], mt->map_blocks) <
	       mt->map_blocks || __held_blocks(s) || __n2l_deferred_nr(s);
	spin_unlock_irq(&s->lock);
	return need;
}

/*
 * Commit the map as it is now; @flags go into the superblock. The
 * quarantine pending until now is covered: what it holds was freed
 * before the map is copied, so the new map does not name it.
 */
static int commit(struct n2l_meta *mt, u32 flags)
{
	struct n2l_store *s = mt->store;
	u64 gen = mt->gen + 1;
	unsigned int covered;
	u64 floor = 0;
	int r;

	lockdep_assert_held(&mt->lock);
	spin_lock_irq(&s->lock);
	covered = mt->pending;
	mt->pending ^= 1;
	spin_unlock_irq(&s->lock);
	n2l_test_delay(N2L_TEST_COMMIT, "with the lists switched, before the map is written");

	/*
	 * The entries, then the groups they name and the floor above them,
	 * all written before the flush that precedes the superblock (the
	 * Network RAM block once went out with the superblock, and a cache
	 * that kept the superblock alone left a map its load refused). The
	 * data devices are flushed after the map is copied: a write that
	 * lands between a flush and the copy is named by the copy, and a
	 * volatile cache would lose it while the map names its block, which
	 * may hold a freed slot's data.
	 */
	r = fill_map(mt, gen & 1, gen);
	r = r ?: fill_netram(mt, gen & 1, gen, &floor);
	r = r ?: dm_bufio_write_dirty_buffers(mt->bufio);
	r = r ?: flush_media(s);
	r = r ?: dm_bufio_issue_flush(mt->bufio);
	r = r ?: write_sb(mt, gen, flags);
	if (r)
		return r;
	mt->gen = gen;
	mt->commits++;
	if (floor)
		n2l_meta_netram_committed(s, floor);
	n2l_gate_release_held(s, RUNALLOC_META_Q + covered);
	n2l_deferred_release(s, covered);
	return 0;
}

/*
 * Flush the data devices and commit if anything changed, or whatever did
 * if @flags are to be written (the clean close); -EIO once failed.
 */
static int sync_meta(struct n2l_meta *mt, u32 flags)
{
	struct n2l_store *s = mt->store;
	int r;

	mutex_lock(&mt->lock);
	r = READ_ONCE(mt->failed) ? -EIO : 0;
	if (!r && (flags || need_commit(mt)))
		r = commit(mt, flags);
	else if (!r)
		r = flush_media(s);
	if (r && !mt->failed) {
		DMERR("%s: metadata commit failed (%d): writes fail from now on",
		      dm_device_name(s->md), r);
		spin_lock_irq(&s->lock);
		mt->failed = true;
		spin_unlock_irq(&s->lock);
	}
	mutex_unlock(&mt->lock);
	return r;
}

static void meta_work(struct work_struct *w)
{
	struct n2l_meta *mt = container_of(to_delayed_work(w), struct n2l_meta,
					   work);
	struct n2l_store *s = mt->store;
	blk_status_t st = BLK_STS_OK;
	struct bio_list done;
	struct bio *bio;

	spin_lock_irq(&s->lock);
	done = mt->waiters;
	bio_list_init(&mt->waiters);
	spin_unlock_irq(&s->lock);

	/*
	 * A periodic run with nothing to commit flushes nothing: a flush
	 * writes a medium's cache back, which an idle device need not pay.
	 */
	if ((!bio_list_empty(&done) || need_commit(mt)) && sync_meta(mt, 0))
		st = BLK_STS_IOERR;
	while ((bio = bio_list_pop(&done))) {
		bio->bi_status = st;
		bio_endio(bio);
	}

	spin_lock_irq(&s->lock);
	if (!bio_list_empty(&mt->waiters))
		mod_delayed_work(mt->wq, &mt->work, 0);
	else if (!mt->closing)
		queue_delayed_work(mt->wq, &mt->work, meta_period());
	spin_unlock_irq(&s->lock);
}

/*----------------------------------------------------------------*/
/* The I/O path's side */

static void queue_waiter(struct n2l_meta *mt, struct bio *bio)
{
	unsigned long flags;

	spin_lock_irqsave(&mt->store->lock, flags);
	bio_list_add(&mt->waiters, bio);
	mod_delayed_work(mt->wq, &mt->work, 0);
	spin_unlock_irqrestore(&mt->store->lock, flags);
}

/* A REQ_PREFLUSH: it completes once the map it follows is committed. */
int n2l_meta_flush(struct n2l_store *s, struct bio *bio)
{
	queue_waiter(s->meta, bio);
	return DM_MAPIO_SUBMITTED;
}

/*
 * From end_io, once a write landed and the map names it: a FUA write is
 * held until a commit, then completed again (end_io finds it no longer
 * FUA and lets it go), as dm-raid1 completes the bios it takes back.
 */
bool n2l_meta_hold(struct n2l_store *s, struct bio *bio, struct n2l_io *io,
		   blk_status_t error)
{
	if (!s->meta || !io->fua || error)
		return false;
	io->kind = N2L_IO_NONE;
	io->fua = false;
	queue_waiter(s->meta, bio);
	return true;
}

/* Writes and discards fail once a commit has. */
bool n2l_meta_failed(struct n2l_store *s)
{
	return s->meta && READ_ONCE(s->meta->failed);
}

/* Which quarantine blocks freed now go to. */
unsigned int __n2l_meta_pending(struct n2l_store *s)
{
	lockdep_assert_held(&s->lock);
	return RUNALLOC_META_Q + s->meta->pending;
}

/* Start a commit now: what waits for one is wanted. */
void __n2l_meta_kick(struct n2l_store *s)
{
	struct n2l_meta *mt = s->meta;

	lockdep_assert_held(&s->lock);
	if (mt && !mt->closing)
		mod_delayed_work(mt->wq, &mt->work, 0);
}

/* Blocks wait for a commit: one starts now, so that room appears. */
bool __n2l_meta_holds(struct n2l_store *s)
{
	lockdep_assert_held(&s->lock);
	if (!s->meta || !__held_blocks(s))
		return false;
	__n2l_meta_kick(s);
	return true;
}

/*
 * What the device did so far outlives a crash: it suspends, a drained
 * server leaves (its copies' invalidations go first), or a server is
 * told that it may drop the pages it moved or handed back.
 */
int n2l_meta_sync(struct n2l_store *s)
{
	return s->meta ? sync_meta(s->meta, 0) : 0;
}

struct block_device *n2l_meta_bdev(struct n2l_store *s)
{
	return s->meta ? s->meta->bdev : NULL;
}

/* For sysfs: "ok|failed <generation> <commits>", or "none". */
ssize_t n2l_meta_show(struct n2l_store *s, char *buf)
{
	struct n2l_meta *mt = s->meta;

	if (!mt)
		return sysfs_emit(buf, "none\n");
	return sysfs_emit(buf, "%s %llu %llu\n",
			  READ_ONCE(mt->failed) ? "failed" : "ok",
			  (unsigned long long)READ_ONCE(mt->gen),
			  (unsigned long long)READ_ONCE(mt->commits));
}

/*----------------------------------------------------------------*/
/* Opening: format or load */

static bool all_zero(const void *p, size_t len)
{
	return !memchr_inv(p, 0, len);
}

/* Superblock copy @i into @sb: 1 valid, 0 all zero, -EILSEQ neither. */
static int read_sb(struct n2l_meta *mt, unsigned int i, struct n2l_meta_sb *sb)
{
	struct dm_buffer *buf;
	void *b;
	int r;

	b = dm_bufio_read(mt->bufio, i, &buf);
	if (IS_ERR(b))
		return PTR_ERR(b);
	memcpy(sb, b, sizeof(*sb));
	if (all_zero(b, N2L_META_BLOCK))
		r = 0;
	else if (le64_to_cpu(sb->magic) == N2L_META_MAGIC &&
		 le32_to_cpu(sb->csum) == n2l_meta_csum(b))
		r = 1;
	else
		r = -EILSEQ;
	dm_bufio_release(buf);
	return r;
}

/*
 * The committed superblock: the valid copy of the higher generation. A
 * copy that is not valid beside a valid one is a superblock write a crash
 * tore: its commit never completed, the other copy is the committed one.
 * Returns 1 with @sb, 0 for a zeroed device, or an error.
 */
static int committed_sb(struct n2l_meta *mt, struct n2l_meta_sb *sb,
			char **error)
{
	struct n2l_meta_sb c[2];
	int v[2], i;

	for (i = 0; i < 2; i++) {
		v[i] = read_sb(mt, i, &c[i]);
		if (v[i] < 0 && v[i] != -EILSEQ) {
			*error = "Cannot read the metadata device";
			return v[i];
		}
	}
	if (!v[0] && !v[1])
		return 0;
	if (v[0] != 1 && v[1] != 1) {
		*error = "Not an nswap2l metadata device, or both its superblocks are corrupt";
		return -EINVAL;
	}
	i = v[0] == 1 && (v[1] != 1 ||
			  le64_to_cpu(c[0].gen) > le64_to_cpu(c[1].gen)) ? 0 : 1;
	if (v[i ^ 1] == -EILSEQ)
		DMWARN("%s: metadata superblock %d is torn; using generation %llu",
		       dm_device_name(mt->store->md), i ^ 1,
		       le64_to_cpu(c[i].gen));
	*sb = c[i];
	return 1;
}

/* Whether the superblock was written for this device and these media. */
static int check_sb(struct n2l_meta *mt, const struct n2l_meta_sb *sb,
		    char **error)
{
	struct n2l_store *s = mt->store;
	const char *dev = dm_device_name(s->md);

	if (le32_to_cpu(sb->version) != N2L_META_VERSION &&
	    le32_to_cpu(sb->version) != N2L_META_V1) {
		DMERR("%s: metadata format version %u; this module reads version %u",
		      dev, le32_to_cpu(sb->version), N2L_META_VERSION);
		*error = le32_to_cpu(sb->version) > N2L_META_VERSION ?
			 "Metadata of a newer format version" :
			 "Metadata of an unknown format version";
		return -EINVAL;
	}
	if (le32_to_cpu(sb->nr_slots) != n2l_nr_slots(s) ||
	    le32_to_cpu(sb->map_blocks) != mt->map_blocks ||
	    le32_to_cpu(sb->entries) != N2L_META_ENTRIES) {
		DMERR("%s: metadata holds the map of a device of %u slots, this table has %u",
		      dev, le32_to_cpu(sb->nr_slots), n2l_nr_slots(s));
		*error = "Metadata written for another slot count";
		return -EINVAL;
	}
	if (le32_to_cpu(sb->flash_blocks) != medium_blocks(s, N2L_FLASH) ||
	    le32_to_cpu(sb->disk_blocks) != medium_blocks(s, N2L_DISK)) {
		DMERR("%s: metadata written for media of %u Flash and %u disk blocks, this table has %u and %u",
		      dev, le32_to_cpu(sb->flash_blocks),
		      le32_to_cpu(sb->disk_blocks), medium_blocks(s, N2L_FLASH),
		      medium_blocks(s, N2L_DISK));
		*error = "Metadata written for other media";
		return -EINVAL;
	}
	return 0;
}

/*
 * One slot of the committed map into the store: a block of Flash or disk
 * is taken from its allocator; a slot on Network RAM is kept if @netram
 * (the map has its Network RAM block) and its group has a server left,
 * else it is lost (it reads as -EIO until written or discarded).
 */
static bool load_entry(struct n2l_store *s, n2l_slot_t slot, sme_t e,
		       bool netram)
{
	enum n2l_medium m = sme_medium(e);
	sme_t lost = sme_make(N2L_NONE, 0, SME_LOST);

	if (e & ~SME_PERSISTENT)
		return false;
	switch (m) {
	case N2L_NONE:
		if (e && e != lost)
			return false;
		if (e)
			s->netram.lost_marked++;
		break;
	case N2L_NETRAM:
		if (netram && __n2l_meta_netram_keeps(s, e)) {
			__n2l_held_add(s, e, 1);
			break;
		}
		e = lost;
		s->netram.lost_marked++;
		break;
	default:
		if ((sme_flags(e) & SME_LOST) || sme_loc(e) > U32_MAX ||
		    !runalloc_take(&s->media[m].alloc, to_blk(sme_blk(e))))
			return false;
		__n2l_held_add(s, e, 1);
	}
	s->map.entries[from_slot(slot)] = e;
	return true;
}

static int load_block(struct n2l_meta *mt, const struct n2l_meta_sb *sb,
		      u32 i, char **error)
{
	struct n2l_store *s = mt->store;
	unsigned int area = le64_to_cpu(sb->gen) & 1;
	struct n2l_meta_map_block *mb;
	struct dm_buffer *buf;
	u32 first = i * N2L_META_ENTRIES, k, n;
	int r = 0;

	mb = dm_bufio_read(mt->bufio, map_block(mt, area, i), &buf);
	if (IS_ERR(mb)) {
		*error = "Cannot read the metadata device";
		return PTR_ERR(mb);
	}
	if (le32_to_cpu(mb->csum) != n2l_meta_csum(mb) ||
	    le32_to_cpu(mb->index) != i ||
	    le64_to_cpu(mb->gen) > le64_to_cpu(sb->gen)) {
		DMERR("%s: metadata map block %u of area %u is corrupt (run n2lctl meta check)",
		      dm_device_name(s->md), i, area);
		*error = "Corrupt metadata: a map block fails its checksum";
		r = -EILSEQ;
		goto out;
	}
	n = min_t(u32, N2L_META_ENTRIES, n2l_nr_slots(s) - first);
	spin_lock_irq(&s->lock);
	for (k = 0; k < n && !r; k++)
		if (!load_entry(s, to_slot(first + k),
				le64_to_cpu(mb->entries[k]),
				le32_to_cpu(sb->version) > N2L_META_V1)) {
			DMERR("%s: metadata names a bad or shared location for slot %u (run n2lctl meta check)",
			      dm_device_name(s->md), first + k);
			*error = "Corrupt metadata: a slot's location is bad or shared";
			r = -EILSEQ;
		}
	spin_unlock_irq(&s->lock);
out:
	dm_bufio_release(buf);
	return r;
}

/* The Network RAM block of the committed area, into the store (format 2). */
static int load_netram(struct n2l_meta *mt, const struct n2l_meta_sb *sb,
		       char **error)
{
	u64 gen = le64_to_cpu(sb->gen);
	struct dm_buffer *buf;
	void *nb;
	int r;

	if (le32_to_cpu(sb->version) == N2L_META_V1)
		return 0;
	nb = dm_bufio_read(mt->bufio, netram_block(mt, gen & 1), &buf);
	if (IS_ERR(nb)) {
		*error = "Cannot read the metadata device";
		return PTR_ERR(nb);
	}
	r = n2l_meta_netram_load(mt->store, nb, gen, mt->servers, error);
	dm_bufio_release(buf);
	return r;
}

static int load(struct n2l_meta *mt, const struct n2l_meta_sb *sb,
		char **error)
{
	u32 i;
	int r;

	r = check_sb(mt, sb, error);
	r = r ?: load_netram(mt, sb, error);
	for (i = 0; !r && i < mt->map_blocks; i++)
		r = load_block(mt, sb, i, error);
	if (r)
		return r;
	memcpy(mt->uuid, sb->uuid, sizeof(mt->uuid));
	mt->gen = le64_to_cpu(sb->gen);
	mt->commits = le64_to_cpu(sb->commits);
	DMINFO("%s: slot map loaded from metadata generation %llu (%s close)",
	       dm_device_name(mt->store->md), mt->gen,
	       le32_to_cpu(sb->flags) & N2L_META_CLEAN ? "after a clean" :
	       "without a clean");
	return 0;
}

static void meta_free(struct n2l_meta *mt)
{
	if (mt->wq)
		destroy_workqueue(mt->wq);
	if (mt->bufio)
		dm_bufio_client_destroy(mt->bufio);
	kfree(mt->scratch);
	kfree(mt);
}

static int meta_alloc(struct n2l_store *s, struct block_device *bdev,
		      struct n2l_meta **out)
{
	struct n2l_meta *mt = kzalloc(sizeof(*mt), GFP_KERNEL);

	if (!mt)
		return -ENOMEM;
	mt->store = s;
	mt->bdev = bdev;
	mt->map_blocks = n2l_meta_map_blocks(n2l_nr_slots(s));
	mutex_init(&mt->lock);
	bio_list_init(&mt->waiters);
	INIT_DELAYED_WORK(&mt->work, meta_work);
	mt->scratch = kmalloc_array(N2L_META_ENTRIES, sizeof(__le64),
				    GFP_KERNEL);
	mt->wq = alloc_workqueue("nswap2l-meta-%s", WQ_MEM_RECLAIM, 1,
				 dm_device_name(s->md));
	mt->bufio = dm_bufio_client_create(bdev, N2L_META_BLOCK, 1, 0, NULL,
					   NULL, 0);
	if (!mt->scratch || !mt->wq || IS_ERR(mt->bufio)) {
		if (IS_ERR(mt->bufio))
			mt->bufio = NULL;
		meta_free(mt);
		return -ENOMEM;
	}
	*out = mt;
	return 0;
}

static bool fits(struct n2l_meta *mt, u32 version)
{
	return (bdev_nr_sectors(mt->bdev) >> N2L_SLOT_SHIFT) >=
	       n2l_meta_blocks(n2l_nr_slots(mt->store), version);
}

static int check_size(struct n2l_meta *mt, u32 version, char **error)
{
	u64 need = n2l_meta_blocks(n2l_nr_slots(mt->store), version);

	if (fits(mt, version))
		return 0;
	DMERR("%s: metadata device too small: it needs %llu bytes for %u slots",
	      dm_device_name(mt->store->md), need * N2L_META_BLOCK,
	      n2l_nr_slots(mt->store));
	*error = "Metadata device too small (the kernel log says the size it needs)";
	return -ENOSPC;
}

/*
 * The format to write: a new device's is the current one; a loaded one
 * keeps its own, but format 1 is rewritten in format 2 if it has room.
 */
static int choose_version(struct n2l_meta *mt, const struct n2l_meta_sb *sb,
			  char **error)
{
	const char *dev = dm_device_name(mt->store->md);

	mt->version = sb ? le32_to_cpu(sb->version) : N2L_META_VERSION;
	if (mt->version != N2L_META_V1)
		return check_size(mt, mt->version, error);
	if (fits(mt, N2L_META_VERSION)) {
		DMINFO("%s: metadata of format 1: rewritten in format %u",
		       dev, N2L_META_VERSION);
		mt->version = N2L_META_VERSION;
	} else {
		DMWARN("%s: metadata of format 1 without room for format %u (%llu bytes): its Network RAM slots are not kept across loads",
		       dev, N2L_META_VERSION,
		       n2l_meta_blocks(n2l_nr_slots(mt->store),
				       N2L_META_VERSION) * N2L_META_BLOCK);
	}
	return 0;
}

/*
 * In format 2 the servers know the device by its UUID and keep its pages
 * when it goes, for the next load to reattach to.
 */
static void identify(struct n2l_meta *mt)
{
	struct n2l_store *s = mt->store;
	__le64 id;

	if (mt->version == N2L_META_V1)
		return;
	memcpy(&id, mt->uuid, sizeof(id));
	n2l_net_set_device(s->netram.net, le64_to_cpu(id) ?: 1);
	n2l_net_keep_pages(s->netram.net);
}

/*
 * Open @bdev as the metadata of the new store @s: load its map, or
 * format it if it is zeroed. Either way the map is then committed whole
 * (formatting: both areas), so that both areas hold it; a loaded map's
 * Network RAM servers are added back first.
 */
int n2l_meta_open(struct n2l_store *s, struct block_device *bdev,
		  char **error)
{
	struct n2l_meta_sb sb;
	struct n2l_meta *mt;
	int r, fresh;

	r = meta_alloc(s, bdev, &mt);
	if (r) {
		*error = "Cannot allocate the metadata client";
		return r;
	}
	/* Too small for any map: say what the current format needs. */
	r = fits(mt, N2L_META_V1) ? 0 : check_size(mt, N2L_META_VERSION, error);
	fresh = r ? r : committed_sb(mt, &sb, error);
	if (fresh < 0) {
		r = fresh;
		goto bad;
	}
	r = choose_version(mt, fresh ? &sb : NULL, error);
	if (r)
		goto bad;
	if (fresh) {
		r = load(mt, &sb, error);
		if (r)
			goto bad;
	} else {
		generate_random_uuid(mt->uuid);
		DMINFO("%s: formatting the metadata device", dm_device_name(s->md));
	}
	identify(mt);
	if (mt->version != N2L_META_V1 && n2l_deferred_init(s)) {
		r = -ENOMEM;
		*error = "Cannot allocate the invalidations waiting for commits";
		goto bad;
	}
	/* Before the first commit, which names the servers present then. */
	if (fresh && le32_to_cpu(sb.version) > N2L_META_V1)
		n2l_meta_netram_reattach(s, mt->servers);
	r = slotmap_track(&s->map, N2L_META_ENTRIES);
	if (r) {
		*error = "Cannot allocate the slot map's change tracking";
		goto bad;
	}
	s->meta = mt;
	mutex_lock(&mt->lock);
	r = commit(mt, 0);
	if (!r && !fresh)
		r = commit(mt, 0);
	mutex_unlock(&mt->lock);
	if (r) {
		s->meta = NULL;
		*error = "Cannot write the metadata device";
		goto bad;
	}
	queue_delayed_work(mt->wq, &mt->work, meta_period());
	return 0;
bad:
	n2l_deferred_exit(s);
	meta_free(mt);
	return r;
}

/* The last table went: a clean commit, after every other piece stopped. */
void n2l_meta_close(struct n2l_store *s)
{
	struct n2l_meta *mt = s->meta;

	if (!mt)
		return;
	spin_lock_irq(&s->lock);
	mt->closing = true;
	spin_unlock_irq(&s->lock);
	cancel_delayed_work_sync(&mt->work);
	sync_meta(mt, N2L_META_CLEAN);
	spin_lock_irq(&s->lock);
	s->meta = NULL;
	spin_unlock_irq(&s->lock);
	n2l_deferred_exit(s);
	meta_free(mt);
}
