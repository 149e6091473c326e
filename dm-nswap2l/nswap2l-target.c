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
			char *result, unsigned int maxlen, size_t *szp)
{
	struct n2l_medium_stats *st = &s->media[m].stats;
	size_t sz = *szp;

	DMEMIT(" %s %u/%u %llu %llu %llu %llu", n2l_medium_name(m), held,
	       s->media[m].alloc.nr_blocks,
	       (unsigned long long)atomic64_read(&st->reads),
	       (unsigned long long)atomic64_read(&st->writes),
	       (unsigned long long)atomic64_read(&st->read_sectors),
	       (unsigned long long)atomic64_read(&st->write_sectors));
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
 *
 * TABLE: the line that recreates the device with its current policies.
 */
static void status_info(struct n2l_target *t, char *result,
			unsigned int maxlen)
{
	struct n2l_store *s = t->store;
	u32 held[N2L_NR_MEDIA], mapped = 0;
	enum n2l_medium m;
	size_t sz = 0;

	spin_lock_irq(&s->lock);
	for_each_medium(m) {
		held[m] = s->media[m].held;
		mapped += held[m];
	}
	spin_unlock_irq(&s->lock);

	DMEMIT("%u %u/%u", N2L_SLOT_SECTORS, mapped, n2l_nr_slots(s));
	for_each_medium(m)
		emit_medium(s, m, held[m], result, maxlen, &sz);
	DMEMIT(" %llu %llu %llu %llu ",
	       (unsigned long long)atomic64_read(&s->stats.nospc),
	       (unsigned long long)atomic64_read(&s->stats.discarded),
	       (unsigned long long)atomic64_read(&s->stats.zero_reads),
	       (unsigned long long)atomic64_read(&s->stats.dropped));
	n2l_emit_placement(t, result + sz, maxlen - sz);
}

static void status_table(struct n2l_target *t, char *result,
			 unsigned int maxlen)
{
	size_t sz = 0;

	DMEMIT("%s %s %u ", dev_name_or_dash(t->flash),
	       dev_name_or_dash(t->disk), N2L_SLOT_SECTORS);
	DMEMIT(t->discard_passdown ? "0 " : "1 no_discard_passdown ");
	DMEMIT("0 ");
	sz += n2l_emit_placement(t, result + sz, maxlen - sz);
	DMEMIT(" none 0");
}

static void status_ima(struct dm_target *ti, char *result, unsigned int maxlen)
{
	struct n2l_target *t = to_target(ti);
	char placement[32];
	size_t sz = 0;

	n2l_placement_name(t, placement, sizeof(placement));
	DMEMIT_TARGET_NAME_VERSION(ti->type);
	DMEMIT(",flash=%s,disk=%s,slot_sectors=%u,discard_passdown=%c,servers=0",
	       dev_name_or_dash(t->flash), dev_name_or_dash(t->disk),
	       N2L_SLOT_SECTORS, t->discard_passdown ? 'y' : 'n');
	DMEMIT(",placement=%s,prefetch=none;", placement);
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
	if (argc >= 2 && !strcasecmp(argv[0], "placement")) {
		r = n2l_set_placement(s, argc - 1, argv + 1, &error);
		if (r)
			DMERR("%s: placement: %s", dm_device_name(s->md), error);
		return r;
	}
	DMERR("%s: Unsupported message '%s' with %u arguments",
	      dm_device_name(s->md), argc ? argv[0] : "", argc);
	return -EINVAL;
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
}

static int n2l_preresume(struct dm_target *ti)
{
	struct n2l_target *t = to_target(ti);

	n2l_store_apply(t->store, t);
	return 0;
}

static void n2l_resume(struct dm_target *ti)
{
	struct n2l_store *s = to_target(ti)->store;
	int r;

	/* The disk's sysfs node exists only once the first table is live. */
	r = n2l_sysfs_add(s);
	if (r)
		DMERR("%s: cannot create the sysfs directory: %d",
		      dm_device_name(s->md), r);
}

static struct target_type n2l_target_type = {
	.name = "nswap2l",
	.version = { 1, 0, 0 },
	.module = THIS_MODULE,
	.ctr = n2l_ctr,
	.dtr = n2l_dtr,
	.map = n2l_map,
	.end_io = n2l_end_io,
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
