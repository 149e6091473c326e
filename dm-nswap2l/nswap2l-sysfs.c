// SPDX-License-Identifier: GPL-2.0-only
/*
 * /sys/block/dm-N/nswap2l/: knobs and counters of one device. A knob's
 * store calls the same function as the matching dmsetup message.
 */
#include "nswap2l.h"

struct n2l_attr {
	struct attribute attr;
	ssize_t (*show)(struct n2l_store *s, const struct n2l_attr *a,
			char *buf);
	ssize_t (*store)(struct n2l_store *s, const struct n2l_attr *a,
			 const char *buf, size_t len);
	enum n2l_medium medium;
	unsigned int field;
};

static struct n2l_store *kobj_store(struct kobject *kobj)
{
	return container_of(kobj, struct n2l_store, kobj);
}

static ssize_t attr_show(struct kobject *kobj, struct attribute *attr,
			 char *buf)
{
	struct n2l_attr *a = container_of(attr, struct n2l_attr, attr);

	return a->show ? a->show(kobj_store(kobj), a, buf) : -EIO;
}

static ssize_t attr_store(struct kobject *kobj, struct attribute *attr,
			  const char *buf, size_t len)
{
	struct n2l_attr *a = container_of(attr, struct n2l_attr, attr);

	return a->store ? a->store(kobj_store(kobj), a, buf, len) : -EIO;
}

/*----------------------------------------------------------------*/

static ssize_t placement_show(struct n2l_store *s, const struct n2l_attr *a,
			      char *buf)
{
	char name[32];

	mutex_lock(&s->config_lock);
	strscpy(name, s->placement->type->base.name, sizeof(name));
	mutex_unlock(&s->config_lock);
	return n2l_policy_names(N2L_POLICY_PLACEMENT, name, buf, PAGE_SIZE);
}

/* Accepts what the message takes after "placement": name [key value]*. */
static ssize_t placement_store(struct n2l_store *s, const struct n2l_attr *a,
			       const char *buf, size_t len)
{
	char *error = NULL, **argv;
	int argc, r;

	argv = argv_split(GFP_KERNEL, buf, &argc);
	if (!argv)
		return -ENOMEM;
	r = n2l_set_placement(s, argc, argv, &error);
	if (r)
		DMERR("%s: placement_policy: %s", dm_device_name(s->md), error);
	argv_free(argv);
	return r ? r : len;
}

static ssize_t clear_stats_store(struct n2l_store *s, const struct n2l_attr *a,
				 const char *buf, size_t len)
{
	bool clear;

	if (kstrtobool(buf, &clear) || !clear)
		return -EINVAL;
	n2l_store_clear_stats(s);
	return len;
}

static ssize_t slots_show(struct n2l_store *s, const struct n2l_attr *a,
			  char *buf)
{
	return sysfs_emit(buf, "%u\n", n2l_nr_slots(s));
}

/*----------------------------------------------------------------*/

enum {
	F_HELD, F_CAPACITY, F_READS, F_WRITES, F_READ_BYTES, F_WRITE_BYTES,
};

static ssize_t medium_show(struct n2l_store *s, const struct n2l_attr *a,
			   char *buf)
{
	struct n2l_medium_dev *md = &s->media[a->medium];
	u64 v = 0;

	switch (a->field) {
	case F_HELD:
		spin_lock_irq(&s->lock);
		v = md->held;
		spin_unlock_irq(&s->lock);
		break;
	case F_CAPACITY:
		v = md->alloc.nr_blocks;
		break;
	case F_READS:
		v = atomic64_read(&md->stats.reads);
		break;
	case F_WRITES:
		v = atomic64_read(&md->stats.writes);
		break;
	case F_READ_BYTES:
		v = (u64)atomic64_read(&md->stats.read_sectors) << SECTOR_SHIFT;
		break;
	case F_WRITE_BYTES:
		v = (u64)atomic64_read(&md->stats.write_sectors) << SECTOR_SHIFT;
		break;
	}
	return sysfs_emit(buf, "%llu\n", (unsigned long long)v);
}

enum { F_NOSPC, F_DISCARDED, F_ZERO_READS, F_DROPPED };

static ssize_t counter_show(struct n2l_store *s, const struct n2l_attr *a,
			    char *buf)
{
	atomic64_t *c[] = {
		[F_NOSPC] = &s->stats.nospc,
		[F_DISCARDED] = &s->stats.discarded,
		[F_ZERO_READS] = &s->stats.zero_reads,
		[F_DROPPED] = &s->stats.dropped,
	};

	return sysfs_emit(buf, "%llu\n",
			  (unsigned long long)atomic64_read(c[a->field]));
}

#define N2L_ATTR(_name, _mode, _show, _store)				\
	static struct n2l_attr n2l_attr_##_name = {			\
		.attr = { .name = #_name, .mode = _mode },		\
		.show = _show, .store = _store,				\
	}

#define N2L_MEDIUM_ATTR(_name, _medium, _field)				\
	static struct n2l_attr n2l_attr_##_name = {			\
		.attr = { .name = #_name, .mode = 0444 },		\
		.show = medium_show, .medium = _medium, .field = _field,	\
	}

#define N2L_COUNTER_ATTR(_name, _field)					\
	static struct n2l_attr n2l_attr_##_name = {			\
		.attr = { .name = #_name, .mode = 0444 },		\
		.show = counter_show, .field = _field,			\
	}

N2L_ATTR(placement_policy, 0644, placement_show, placement_store);
N2L_ATTR(clear_stats, 0200, NULL, clear_stats_store);
N2L_ATTR(slots, 0444, slots_show, NULL);
N2L_MEDIUM_ATTR(netram_held, N2L_NETRAM, F_HELD);
N2L_MEDIUM_ATTR(netram_capacity, N2L_NETRAM, F_CAPACITY);
N2L_MEDIUM_ATTR(netram_reads, N2L_NETRAM, F_READS);
N2L_MEDIUM_ATTR(netram_writes, N2L_NETRAM, F_WRITES);
N2L_MEDIUM_ATTR(netram_read_bytes, N2L_NETRAM, F_READ_BYTES);
N2L_MEDIUM_ATTR(netram_write_bytes, N2L_NETRAM, F_WRITE_BYTES);
N2L_MEDIUM_ATTR(flash_held, N2L_FLASH, F_HELD);
N2L_MEDIUM_ATTR(flash_capacity, N2L_FLASH, F_CAPACITY);
N2L_MEDIUM_ATTR(flash_reads, N2L_FLASH, F_READS);
N2L_MEDIUM_ATTR(flash_writes, N2L_FLASH, F_WRITES);
N2L_MEDIUM_ATTR(flash_read_bytes, N2L_FLASH, F_READ_BYTES);
N2L_MEDIUM_ATTR(flash_write_bytes, N2L_FLASH, F_WRITE_BYTES);
N2L_MEDIUM_ATTR(disk_held, N2L_DISK, F_HELD);
N2L_MEDIUM_ATTR(disk_capacity, N2L_DISK, F_CAPACITY);
N2L_MEDIUM_ATTR(disk_reads, N2L_DISK, F_READS);
N2L_MEDIUM_ATTR(disk_writes, N2L_DISK, F_WRITES);
N2L_MEDIUM_ATTR(disk_read_bytes, N2L_DISK, F_READ_BYTES);
N2L_MEDIUM_ATTR(disk_write_bytes, N2L_DISK, F_WRITE_BYTES);
N2L_COUNTER_ATTR(nospc_errors, F_NOSPC);
N2L_COUNTER_ATTR(discarded_slots, F_DISCARDED);
N2L_COUNTER_ATTR(zero_reads, F_ZERO_READS);
N2L_COUNTER_ATTR(dropped_writes, F_DROPPED);

static struct attribute *n2l_attrs[] = {
	&n2l_attr_placement_policy.attr,
	&n2l_attr_clear_stats.attr,
	&n2l_attr_slots.attr,
	&n2l_attr_netram_held.attr,
	&n2l_attr_netram_capacity.attr,
	&n2l_attr_netram_reads.attr,
	&n2l_attr_netram_writes.attr,
	&n2l_attr_netram_read_bytes.attr,
	&n2l_attr_netram_write_bytes.attr,
	&n2l_attr_flash_held.attr,
	&n2l_attr_flash_capacity.attr,
	&n2l_attr_flash_reads.attr,
	&n2l_attr_flash_writes.attr,
	&n2l_attr_flash_read_bytes.attr,
	&n2l_attr_flash_write_bytes.attr,
	&n2l_attr_disk_held.attr,
	&n2l_attr_disk_capacity.attr,
	&n2l_attr_disk_reads.attr,
	&n2l_attr_disk_writes.attr,
	&n2l_attr_disk_read_bytes.attr,
	&n2l_attr_disk_write_bytes.attr,
	&n2l_attr_nospc_errors.attr,
	&n2l_attr_discarded_slots.attr,
	&n2l_attr_zero_reads.attr,
	&n2l_attr_dropped_writes.attr,
	NULL,
};
ATTRIBUTE_GROUPS(n2l);

static const struct sysfs_ops n2l_sysfs_ops = {
	.show = attr_show,
	.store = attr_store,
};

static void n2l_kobj_release(struct kobject *kobj)
{
	complete(&kobj_store(kobj)->kobj_released);
}

static struct kobj_type n2l_ktype = {
	.sysfs_ops = &n2l_sysfs_ops,
	.default_groups = n2l_groups,
	.release = n2l_kobj_release,
};

/*----------------------------------------------------------------*/

/* Called at every resume; the directory is made once per store. */
int n2l_sysfs_add(struct n2l_store *s)
{
	int r;

	if (s->kobj_added)
		return 0;
	r = kobject_init_and_add(&s->kobj, &n2l_ktype,
				 &disk_to_dev(dm_disk(s->md))->kobj, "nswap2l");
	if (r) {
		kobject_put(&s->kobj);
		wait_for_completion(&s->kobj_released);
		reinit_completion(&s->kobj_released);
		return r;
	}
	s->kobj_added = true;
	return 0;
}

/* Returns once no show or store can run any more. */
void n2l_sysfs_del(struct n2l_store *s)
{
	if (!s->kobj_added)
		return;
	kobject_del(&s->kobj);
	kobject_put(&s->kobj);
	wait_for_completion(&s->kobj_released);
	s->kobj_added = false;
}
