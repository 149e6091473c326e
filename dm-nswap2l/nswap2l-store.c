// SPDX-License-Identifier: GPL-2.0-only
/*
 * The store: the slot map and media of one nswap2l device. A table reload
 * builds a new target while the old one still serves I/O; both must see
 * the same slots, so the store is found by mapped device, the way dm-thin
 * finds its pool, and lives until the last table using it is destroyed.
 */
#include "nswap2l.h"

static DEFINE_MUTEX(stores_lock);
static LIST_HEAD(stores);

static struct n2l_store *__store_lookup(struct mapped_device *md)
{
	struct n2l_store *s;

	lockdep_assert_held(&stores_lock);
	list_for_each_entry(s, &stores, list)
		if (s->md == md)
			return s;
	return NULL;
}

static struct block_device *dev_bdev(struct dm_dev *d)
{
	return d ? d->bdev : NULL;
}

/* Another device's store holding @bdev as a medium. */
static bool __bdev_taken(struct block_device *bdev)
{
	struct n2l_store *s;

	lockdep_assert_held(&stores_lock);
	if (!bdev)
		return false;
	list_for_each_entry(s, &stores, list)
		if (s->media[N2L_FLASH].bdev == bdev ||
		    s->media[N2L_DISK].bdev == bdev ||
		    n2l_meta_bdev(s) == bdev)
			return true;
	return false;
}

/* A device is one medium, or the metadata, of one nswap2l device. */
static int check_devices(struct n2l_target *t, char **error)
{
	struct block_device *flash = dev_bdev(t->flash), *disk = dev_bdev(t->disk);
	struct block_device *meta = dev_bdev(t->meta);

	lockdep_assert_held(&stores_lock);
	if (__bdev_taken(flash) || __bdev_taken(disk) || __bdev_taken(meta)) {
		*error = "A medium is already used by another nswap2l device";
		return -EBUSY;
	}
	if (meta && (meta == flash || meta == disk)) {
		*error = "The metadata device must not be a medium of the device";
		return -EINVAL;
	}
	return 0;
}

static int check_reload(struct n2l_store *s, struct n2l_target *t,
			char **error)
{
	if (strcmp(s->identity, t->identity) || strcmp(s->key_desc, t->key_desc)) {
		*error = "A reload must keep the psk and encrypt features";
		return -EINVAL;
	}
	if (s->claimed_by == t->ti->table) {
		*error = "Only one nswap2l target per device";
		return -EINVAL;
	}
	if ((t->ti->len >> N2L_SLOT_SHIFT) != n2l_nr_slots(s)) {
		*error = "A reload must keep the device length";
		return -EINVAL;
	}
	if (dev_bdev(t->flash) != s->media[N2L_FLASH].bdev) {
		*error = "A reload must keep the flash device";
		return -EINVAL;
	}
	if (dev_bdev(t->disk) != s->media[N2L_DISK].bdev) {
		*error = "A reload must keep the disk device";
		return -EINVAL;
	}
	if (dev_bdev(t->meta) != n2l_meta_bdev(s)) {
		*error = "A reload must keep the metadata device";
		return -EINVAL;
	}
	return 0;
}

/*----------------------------------------------------------------*/

static int medium_init(struct n2l_medium_dev *md, enum n2l_medium kind,
		       struct dm_dev *dev)
{
	sector_t blocks = 0;

	md->kind = kind;
	md->bdev = dev_bdev(dev);
	if (md->bdev)
		blocks = min_t(sector_t, bdev_nr_sectors(md->bdev) >> N2L_SLOT_SHIFT,
			       U32_MAX);
	return runalloc_init(&md->alloc, blocks);
}

/*
 * Work that talks to servers stops before the client goes, and the client
 * (whose events call the prefetch policy) before the policy is freed.
 */
static void store_destroy(struct n2l_store *s)
{
	enum n2l_medium m;

	n2l_sysfs_del(s);
	if (s->netram.net)
		n2l_net_stop_waiting(s->netram.net);
	n2l_mig_stop(s);
	if (s->netram.net)
		n2l_netram_exit(s);
	n2l_mig_exit(s);
	n2l_slow_exit(s);
	n2l_meta_close(s);
	if (s->wq)
		destroy_workqueue(s->wq);
	bioset_exit(&s->bs);
	n2l_placement_destroy(s->placement);
	for_each_medium(m)
		runalloc_exit(&s->media[m].alloc);
	slotmap_exit(&s->map);
	kfree(s);
}

static struct n2l_store *store_create(struct n2l_target *t,
				      struct mapped_device *md, char **error)
{
	struct n2l_store *s;
	int r;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		goto nomem;
	s->md = md;
	s->devt = disk_devt(dm_disk(md));
	spin_lock_init(&s->lock);
	mutex_init(&s->config_lock);
	bio_list_init(&s->deferred);
	INIT_WORK(&s->worker, n2l_worker);
	init_completion(&s->kobj_released);
	strscpy(s->identity, t->identity, sizeof(s->identity));
	strscpy(s->key_desc, t->key_desc, sizeof(s->key_desc));

	r = slotmap_init(&s->map, t->ti->len >> N2L_SLOT_SHIFT);
	if (!r)
		r = medium_init(&s->media[N2L_NETRAM], N2L_NETRAM, NULL);
	if (!r)
		r = medium_init(&s->media[N2L_FLASH], N2L_FLASH, t->flash);
	if (!r)
		r = medium_init(&s->media[N2L_DISK], N2L_DISK, t->disk);
	if (r)
		goto nomem;

	if (bioset_init(&s->bs, BIO_POOL_SIZE, 0, 0))
		goto nomem;
	s->wq = alloc_workqueue("nswap2l-%s", WQ_MEM_RECLAIM, 0,
				dm_device_name(md));
	if (!s->wq || n2l_slow_init(s) || n2l_mig_init(s))
		goto nomem;
	r = n2l_netram_init(s, t);
	if (r) {
		store_destroy(s);
		*error = "Cannot start the Network RAM client";
		return ERR_PTR(r);
	}
	if (t->meta) {
		r = n2l_meta_open(s, t->meta->bdev, error);
		if (r) {
			store_destroy(s);
			return ERR_PTR(r);
		}
	}
	return s;

nomem:
	if (s)
		store_destroy(s);
	*error = "Cannot allocate the slot map and allocators";
	return ERR_PTR(-ENOMEM);
}

/*----------------------------------------------------------------*/

/* The store of @t's device: the live one on a reload, else a new one. */
struct n2l_store *n2l_store_get(struct n2l_target *t, char **error)
{
	struct mapped_device *md = dm_table_get_md(t->ti->table);
	struct n2l_store *s;
	int r;

	mutex_lock(&stores_lock);
	s = __store_lookup(md);
	if (s) {
		r = check_reload(s, t, error);
		if (r) {
			s = ERR_PTR(r);
			goto out;
		}
	} else {
		r = check_devices(t, error);
		if (r) {
			s = ERR_PTR(r);
			goto out;
		}
		s = store_create(t, md, error);
		if (IS_ERR(s))
			goto out;
		list_add(&s->list, &stores);
	}
	s->refs++;
	s->claimed_by = t->ti->table;
out:
	mutex_unlock(&stores_lock);
	return s;
}

void n2l_store_put(struct n2l_store *s, struct n2l_target *t)
{
	bool last;

	mutex_lock(&stores_lock);
	if (s->claimed_by == t->ti->table)
		s->claimed_by = NULL;
	last = !--s->refs;
	if (last)
		list_del(&s->list);
	mutex_unlock(&stores_lock);
	if (last)
		store_destroy(s);
}

static void set_trim(struct n2l_medium_dev *md, bool passdown)
{
	md->discard = passdown && md->bdev && bdev_max_discard_sectors(md->bdev);
}

/*
 * Make the store follow @t's table line, once, when its table first
 * resumes: before that the table is only loaded, and the live table may
 * have been reconfigured by messages that must stay in force until then.
 */
/*
 * Servers of the table line that the device lacks are added, and those it
 * is draining stop draining; servers the line leaves out are drained.
 */
static void __apply_servers(struct n2l_store *s, struct n2l_target *t)
{
	struct n2l_netram *nr = &s->netram;
	u64 listed = 0;
	unsigned int i;
	char *error;
	int idx;

	lockdep_assert_held(&s->config_lock);
	for (i = 0; i < t->nr_servers; i++) {
		idx = n2l_net_server_find(nr->net, t->servers[i]);
		if (idx < 0 && __n2l_server_add(s, t->servers[i], &error)) {
			DMERR("%s: server %s: %s", dm_device_name(s->md),
			      t->servers[i], error);
			continue;
		}
		idx = n2l_net_server_find(nr->net, t->servers[i]);
		if (idx < 0)
			continue;
		listed |= BIT_ULL(idx);
		if (nr->draining & BIT_ULL(idx))
			__n2l_server_drain(s, idx, false);
	}
	for (i = 0; i < N2L_NET_SERVERS; i++)
		if ((nr->present & ~nr->draining & ~listed) & BIT_ULL(i))
			__n2l_server_drain(s, i, true);
}

void n2l_store_apply(struct n2l_store *s, struct n2l_target *t)
{
	struct n2l_placement *old;

	if (t->applied)
		return;
	mutex_lock(&s->config_lock);
	__apply_servers(s, t);
	spin_lock_irq(&s->lock);
	old = s->placement;
	s->placement = t->placement;
	set_trim(&s->media[N2L_FLASH], t->discard_passdown);
	set_trim(&s->media[N2L_DISK], t->discard_passdown);
	WRITE_ONCE(s->netram.replicas, t->replicas);
	s->size_unchecked = true;
	spin_unlock_irq(&s->lock);
	n2l_repair_kick(s);
	t->placement = NULL;
	n2l_mig_apply(s, t->prefetch, &t->knobs);
	t->prefetch = NULL;
	t->applied = true;
	mutex_unlock(&s->config_lock);

	n2l_placement_destroy(old);
	/* Now, or once every server has answered. */
	n2l_netram_check_size(s);
}

static void clear_latency(struct n2l_latency *lat)
{
	unsigned int b;

	for (b = 0; b < N2L_LAT_BUCKETS; b++)
		atomic64_set(&lat->bucket[b], 0);
}

void n2l_store_clear_stats(struct n2l_store *s)
{
	struct n2l_medium_stats *st;
	enum n2l_medium m;

	for_each_medium(m) {
		st = &s->media[m].stats;
		atomic64_set(&st->reads, 0);
		atomic64_set(&st->writes, 0);
		atomic64_set(&st->read_sectors, 0);
		atomic64_set(&st->write_sectors, 0);
		atomic64_set(&st->moved_in, 0);
		atomic64_set(&st->moved_out, 0);
		clear_latency(&st->lat[READ]);
		clear_latency(&st->lat[WRITE]);
		atomic64_set(&st->lat_done[READ], 0);
		atomic64_set(&st->lat_done[WRITE], 0);
		atomic64_set(&st->lat_sum_us[READ], 0);
		atomic64_set(&st->lat_sum_us[WRITE], 0);
	}
	atomic64_set(&s->stats.nospc, 0);
	atomic64_set(&s->stats.discarded, 0);
	atomic64_set(&s->stats.zero_reads, 0);
	atomic64_set(&s->stats.dropped, 0);
	atomic64_set(&s->stats.slow_writes, 0);
	atomic64_set(&s->stats.slow_reads, 0);
	atomic64_set(&s->netram.failed_reads, 0);
	atomic64_set(&s->netram.moved_pages, 0);
	atomic64_set(&s->netram.returned_pages, 0);
	atomic64_set(&s->netram.rereplicated, 0);
	atomic64_set(&s->netram.auth_failures, 0);
	atomic64_set(&s->stats.read_issues, 0);
	atomic64_set(&s->stats.read_parallel, 0);
	atomic64_set(&s->stats.prefetched, 0);
	atomic64_set(&s->stats.prefetch_hits, 0);
	atomic64_set(&s->stats.prefetch_reads, 0);
	atomic64_set(&s->stats.prefetch_target, 0);
	atomic64_set(&s->stats.prefetch_activations, 0);
	atomic64_set(&s->stats.prefetch_room_target, 0);
}
