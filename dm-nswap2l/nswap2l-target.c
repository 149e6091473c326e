// SPDX-License-Identifier: GPL-2.0-only
/*
 * nswap2l: one fast random-access block device whose 4 KiB slots live on
 * Network RAM, Flash or disk, placed by pluggable policies.
 *
 * This file holds the target_type and the hooks that are neither the I/O
 * path (nswap2l-io.c) nor construction (nswap2l-ctr.c). The glossary is in
 * nswap2l.h, the user documentation in nswap2l.rst.
 */
#include "nswap2l.h"
#include "n2l-policies.h"

#define CREATE_TRACE_POINTS
#include "nswap2l-trace.h"

static struct n2l_target *to_target(struct dm_target *ti)
{
	return ti->private;
}

static const char *dev_name_or_dash(struct dm_dev *d)
{
	return d ? d->name : "-";
}

/*----------------------------------------------------------------*/

static void emit_medium(struct n2l_store *s, enum n2l_medium m, u32 held,
			u64 capacity, char *result, unsigned int maxlen,
			size_t *szp)
{
	struct n2l_medium_stats *st = &s->media[m].stats;
	size_t sz = *szp;

	DMEMIT(" %s %u/%llu %llu %llu %llu %llu", n2l_medium_name(m), held,
	       (unsigned long long)capacity,
	       (unsigned long long)atomic64_read(&st->reads),
	       (unsigned long long)atomic64_read(&st->writes),
	       (unsigned long long)atomic64_read(&st->read_sectors),
	       (unsigned long long)atomic64_read(&st->write_sectors));
	*szp = sz;
}

/* "<x>.<xxx>": @num / @den to three decimals, 0 when @den is. */
static void emit_ratio(u64 num, u64 den, char *result, unsigned int maxlen,
		       size_t *szp)
{
	u64 milli = n2l_milli(num, den);
	size_t sz = *szp;

	DMEMIT(" %llu.%03llu", (unsigned long long)div_u64(milli, 1000),
	       (unsigned long long)(milli % 1000));
	*szp = sz;
}

/*
 * The migration engine: "<policy> <#args> [<key> <value>]* <prefetched>
 * <prefetch hits> <read/prefetch ratio> <read parallelism>
 * <reads in flight> x3 <moved in> <moved out> x3" (per medium), and,
 * added later and so last, "<prefetch reads> <reads per prefetched slot>"
 * and "<prefetch target> <prefetch activations> <prefetch room target>".
 */
static void status_prefetch(struct n2l_target *t, char *result,
			    unsigned int maxlen, size_t *szp)
{
	struct n2l_store *s = t->store;
	struct n2l_stats *st = &s->stats;
	size_t sz = *szp;
	enum n2l_medium m;

	DMEMIT(" ");
	sz += n2l_emit_prefetch(t, result + sz, maxlen - sz);
	DMEMIT(" %llu %llu", (unsigned long long)atomic64_read(&st->prefetched),
	       (unsigned long long)atomic64_read(&st->prefetch_hits));
	emit_ratio(atomic64_read(&st->prefetch_hits),
		   atomic64_read(&st->prefetched), result, maxlen, &sz);
	emit_ratio(atomic64_read(&st->read_parallel),
		   atomic64_read(&st->read_issues), result, maxlen, &sz);
	for_each_medium(m)
		DMEMIT(" %d", atomic_read(&s->media[m].stats.reads_inflight));
	for_each_medium(m)
		DMEMIT(" %llu %llu",
		       (unsigned long long)atomic64_read(&s->media[m].stats.moved_in),
		       (unsigned long long)atomic64_read(&s->media[m].stats.moved_out));
	DMEMIT(" %llu", (unsigned long long)atomic64_read(&st->prefetch_reads));
	emit_ratio(atomic64_read(&st->prefetch_reads),
		   atomic64_read(&st->prefetched), result, maxlen, &sz);
	DMEMIT(" %llu %llu %llu",
	       (unsigned long long)atomic64_read(&st->prefetch_target),
	       (unsigned long long)atomic64_read(&st->prefetch_activations),
	       (unsigned long long)atomic64_read(&st->prefetch_room_target));
	*szp = sz;
}

/*
 * INFO, in this order (nswap2l.rst explains each field):
 *   <slot sectors> <mapped slots>/<device slots>
 *   netram <held>/<capacity> <reads> <writes> <read sectors> <write sectors>
 *   flash  <held>/<capacity> <reads> <writes> <read sectors> <write sectors>
 *   disk   <held>/<capacity> <reads> <writes> <read sectors> <write sectors>
 *   <nospc errors> <discarded slots> <zero-filled reads> <dropped writes>
 *   <placement policy> <#args> [<key> <value>]*
 *   <#servers> [<host:port> <state> <held> <free pages> <capacity>]*
 *   <lost slots> <failed reads> <slow writes> <slow reads>
 *   <pages moved by servers> <pages handed back by servers>
 *   <replicas> <underreplicated slots> <rereplicated slots> <auth failures>
 *   <prefetch policy> <#args> [<key> <value>]*
 *   <prefetched slots> <prefetch hits> <read/prefetch ratio>
 *   <read parallelism> <reads in flight: netram flash disk>
 *   <moved in> <moved out> (netram, flash, disk)
 *   <prefetch reads> <read/prefetch ratio, every read>
 *   <prefetch target> <prefetch activations>
 *   <space: ok | full>  (always last: fields added later go before it)
 *
 * TABLE: the line that recreates the device with its current policies.
 * Nothing here waits: counters are read without locks, the rest under the
 * store's spinlock (never the config_lock), so DM_STATUS_NOFLUSH_FLAG
 * asks for nothing more than this always does.
 */
static void status_info(struct n2l_target *t, char *result,
			unsigned int maxlen)
{
	struct n2l_store *s = t->store;
	u32 held[N2L_NR_MEDIA], mapped = 0, lost, under;
	enum n2l_medium m;
	size_t sz = 0;
	bool full;

	spin_lock_irq(&s->lock);
	for_each_medium(m) {
		held[m] = s->media[m].held;
		mapped += held[m];
	}
	lost = __n2l_lost_slots(s);
	under = __n2l_underreplicated(s);
	full = __n2l_full(s);
	spin_unlock_irq(&s->lock);

	DMEMIT("%u %u/%u", N2L_SLOT_SECTORS, mapped, n2l_nr_slots(s));
	for_each_medium(m) {
		/* Network RAM capacity is what the servers donate. */
		emit_medium(s, m, held[m], m == N2L_NETRAM ?
			    n2l_netram_capacity(s, false) :
			    s->media[m].alloc.nr_blocks, result, maxlen, &sz);
	}
	DMEMIT(" %llu %llu %llu %llu ",
	       (unsigned long long)atomic64_read(&s->stats.nospc),
	       (unsigned long long)atomic64_read(&s->stats.discarded),
	       (unsigned long long)atomic64_read(&s->stats.zero_reads),
	       (unsigned long long)atomic64_read(&s->stats.dropped));
	sz += n2l_emit_placement(t, result + sz, maxlen - sz);
	DMEMIT(" ");
	sz += n2l_emit_servers(s, result + sz, maxlen - sz, false);
	DMEMIT(" %u %llu %llu %llu %llu %llu", lost,
	       (unsigned long long)atomic64_read(&s->netram.failed_reads),
	       (unsigned long long)atomic64_read(&s->stats.slow_writes),
	       (unsigned long long)atomic64_read(&s->stats.slow_reads),
	       (unsigned long long)atomic64_read(&s->netram.moved_pages),
	       (unsigned long long)atomic64_read(&s->netram.returned_pages));
	DMEMIT(" %u %u %llu %llu", READ_ONCE(s->netram.replicas), under,
	       (unsigned long long)atomic64_read(&s->netram.rereplicated),
	       (unsigned long long)atomic64_read(&s->netram.auth_failures));
	status_prefetch(t, result, maxlen, &sz);
	DMEMIT(" %s", full ? "full" : "ok");
}

static void status_table(struct n2l_target *t, char *result,
			 unsigned int maxlen)
{
	size_t sz = 0;

	DMEMIT("%s %s %u ", dev_name_or_dash(t->flash),
	       dev_name_or_dash(t->disk), N2L_SLOT_SECTORS);
	sz += n2l_emit_features(t, result + sz, maxlen - sz);
	DMEMIT(" ");
	if (t->applied) {
		sz += n2l_emit_servers(t->store, result + sz, maxlen - sz, true);
	} else {
		unsigned int i;

		DMEMIT("%u", t->nr_servers);
		for (i = 0; i < t->nr_servers; i++)
			DMEMIT(" %s", t->servers[i]);
	}
	DMEMIT(" ");
	sz += n2l_emit_placement(t, result + sz, maxlen - sz);
	DMEMIT(" ");
	sz += n2l_emit_prefetch(t, result + sz, maxlen - sz);
}

static void status_ima(struct dm_target *ti, char *result, unsigned int maxlen)
{
	struct n2l_target *t = to_target(ti);
	char placement[32], prefetch[32];
	size_t sz = 0;

	n2l_placement_name(t, placement, sizeof(placement));
	n2l_prefetch_name(t, prefetch, sizeof(prefetch));
	DMEMIT_TARGET_NAME_VERSION(ti->type);
	DMEMIT(",flash=%s,disk=%s,slot_sectors=%u,discard_passdown=%c,servers=%u",
	       dev_name_or_dash(t->flash), dev_name_or_dash(t->disk),
	       N2L_SLOT_SECTORS, t->discard_passdown ? 'y' : 'n', t->nr_servers);
	DMEMIT(",replicas=%u,authenticated=%c,encrypted=%c", t->replicas,
	       t->identity[0] ? 'y' : 'n', t->key_desc[0] ? 'y' : 'n');
	DMEMIT(",metadata=%s", dev_name_or_dash(t->meta));
	DMEMIT(",placement=%s,prefetch=%s;", placement, prefetch);
}

static void n2l_status(struct dm_target *ti, status_type_t type,
		       unsigned int status_flags, char *result,
		       unsigned int maxlen)
{
	struct n2l_target *t = to_target(ti);

	switch (type) {
	case STATUSTYPE_INFO:
		status_info(t, result, maxlen);
		break;
	case STATUSTYPE_TABLE:
		status_table(t, result, maxlen);
		break;
	case STATUSTYPE_IMA:
		status_ima(ti, result, maxlen);
		break;
	}
}

/*
 * Messages:
 *   clear_stats
 *   placement <name> [<key> <value>]*
 *   prefetch <name> [<key> <value>]*
 *   add_server <host:port>
 *   remove_server <host:port>
 *   forget_server <host:port>
 *   set <knob> <value>
 */
static int n2l_message(struct dm_target *ti, unsigned int argc, char **argv,
		       char *result, unsigned int maxlen)
{
	struct n2l_store *s = to_target(ti)->store;
	char *error = NULL;
	int r;

	if (argc == 1 && !strcasecmp(argv[0], "clear_stats")) {
		n2l_store_clear_stats(s);
		return 0;
	}
	if (argc >= 2 && !strcasecmp(argv[0], "placement"))
		r = n2l_set_placement(s, argc - 1, argv + 1, &error);
	else if (argc >= 2 && !strcasecmp(argv[0], "prefetch"))
		r = n2l_set_prefetch(s, argc - 1, argv + 1, &error);
	else if (argc == 2 && !strcasecmp(argv[0], "add_server"))
		r = n2l_add_server(s, argv[1], &error);
	else if (argc == 2 && !strcasecmp(argv[0], "remove_server"))
		r = n2l_remove_server(s, argv[1], &error);
	else if (argc == 2 && !strcasecmp(argv[0], "forget_server"))
		r = n2l_forget_server(s, argv[1], &error);
	else if (argc == 3 && !strcasecmp(argv[0], "set"))
		r = n2l_set_knob(s, argv[1], argv[2], &error);
	else {
		DMERR("%s: Unsupported message '%s' with %u arguments",
		      dm_device_name(s->md), argc ? argv[0] : "", argc);
		return -EINVAL;
	}
	if (r)
		DMERR("%s: %s: %s", dm_device_name(s->md), argv[0], error);
	return r;
}

/*----------------------------------------------------------------*/

static int n2l_iterate_devices(struct dm_target *ti,
			       iterate_devices_callout_fn fn, void *data)
{
	struct n2l_target *t = to_target(ti);
	int r = 0;

	/* Slots go anywhere on a medium: each counts whole, not ti->len. */
	if (t->flash)
		r = fn(ti, t->flash, 0, bdev_nr_sectors(t->flash->bdev), data);
	if (!r && t->disk)
		r = fn(ti, t->disk, 0, bdev_nr_sectors(t->disk->bdev), data);
	return r;
}

/*
 * Stable writes: the pages of a write must not change until it has ended
 * (swap then waits for a page's writeback before anyone writes to it
 * again, SWP_STABLE_WRITES; filesystems do the same). A Network RAM write
 * is sealed once, with the CRC32C of its pages (or with their
 * ciphertext), and the plain pages go on the wire after that, and again
 * to a server that replaces one that failed: a page changed meanwhile
 * would be stored with a seal that does not match it, and read back as
 * lost.
 *
 * Since 6.11 the flag is a queue limit that the table stacks from each
 * target's (BLK_FEAT_STABLE_WRITES, which dm inherits and never clears).
 * 6.1 sets the queue flag only from the devices a target iterates, for a
 * target that asks (needs_stable_writes, as dm-integrity does) or a device
 * that has it, and clears it otherwise whenever a table is bound: a table
 * without block media names no device, so resume sets it again.
 */
#ifdef BLK_FEAT_STABLE_WRITES
void n2l_want_stable_writes(struct dm_target *ti)
{
}

static void stable_writes_limits(struct queue_limits *limits)
{
	limits->features |= BLK_FEAT_STABLE_WRITES;
}

static void stable_writes_resume(struct n2l_store *s)
{
}
#else
void n2l_want_stable_writes(struct dm_target *ti)
{
	ti->needs_stable_writes = true;
}

static void stable_writes_limits(struct queue_limits *limits)
{
}

static void stable_writes_resume(struct n2l_store *s)
{
	blk_queue_flag_set(QUEUE_FLAG_STABLE_WRITES, dm_disk(s->md)->queue);
}
#endif

static void n2l_io_hints(struct dm_target *ti, struct queue_limits *limits)
{
	unsigned int slot_bytes = N2L_SLOT_SECTORS << SECTOR_SHIFT;

	limits->logical_block_size = slot_bytes;
	limits->physical_block_size = slot_bytes;
	limits->io_min = slot_bytes;
	limits->discard_granularity = slot_bytes;
	limits->discard_alignment = 0;
	/* Discards only unmap slots; any size will do. */
	limits->max_discard_sectors = round_down(UINT_MAX >> SECTOR_SHIFT,
						 N2L_SLOT_SECTORS);
	limits->max_hw_discard_sectors = limits->max_discard_sectors;
	stable_writes_limits(limits);
}

static int n2l_preresume(struct dm_target *ti)
{
	struct n2l_target *t = to_target(ti);

	n2l_store_apply(t->store, t);
	stable_writes_resume(t->store);
	return 0;
}

/*
 * Background migration stops while the device is suspended, and what it
 * holds is committed to the metadata device, if it has one.
 */
static void n2l_postsuspend(struct dm_target *ti)
{
	struct n2l_store *s = to_target(ti)->store;

	n2l_mig_stop(s);
	n2l_meta_sync(s);
}

static void n2l_resume(struct dm_target *ti)
{
	struct n2l_store *s = to_target(ti)->store;
	int r;

	n2l_mig_start(s);
	/* The disk's sysfs node exists only once the first table is live. */
	r = n2l_sysfs_add(s);
	if (r)
		DMERR("%s: cannot create the sysfs directory: %d",
		      dm_device_name(s->md), r);
}

static struct target_type n2l_target_type = {
	.name = "nswap2l",
	.version = { 2, 1, 0 },
	.module = THIS_MODULE,
	.ctr = n2l_ctr,
	.dtr = n2l_dtr,
	.map = n2l_map,
	.end_io = n2l_end_io,
	.postsuspend = n2l_postsuspend,
	.preresume = n2l_preresume,
	.resume = n2l_resume,
	.status = n2l_status,
	.message = n2l_message,
	.iterate_devices = n2l_iterate_devices,
	.io_hints = n2l_io_hints,
};

static int __init n2l_init(void)
{
	int r;

	r = n2l_builtin_policies_register();
	if (r)
		return r;
	r = dm_register_target(&n2l_target_type);
	if (r) {
		n2l_builtin_policies_unregister();
		return r;
	}
	return 0;
}

static void __exit n2l_exit(void)
{
	dm_unregister_target(&n2l_target_type);
	n2l_builtin_policies_unregister();
}

module_init(n2l_init);
module_exit(n2l_exit);

MODULE_DESCRIPTION(DM_NAME " target placing 4 KiB slots on Network RAM, Flash and disk");
MODULE_AUTHOR("Nswap2L developers");
MODULE_LICENSE("GPL");
/* What dm_get_target_type() asks for, so that a table line loads us. */
MODULE_ALIAS("dm-nswap2l");
