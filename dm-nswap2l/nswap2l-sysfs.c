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

	spin_lock_irq(&s->lock);
	strscpy(name, s->placement->type->base.name, sizeof(name));
	spin_unlock_irq(&s->lock);
	return n2l_policy_names(N2L_POLICY_PLACEMENT, name, buf, PAGE_SIZE);
}

/*
 * A policy file takes what the message of the same kind takes after its
 * command: name [key value]*.
 */
static ssize_t policy_store(struct n2l_store *s, const struct n2l_attr *a,
			    const char *buf, size_t len,
			    int (*set)(struct n2l_store *s, unsigned int argc,
				       char **argv, char **error))
{
	char *error = NULL, **argv;
	int argc, r;

	argv = argv_split(GFP_KERNEL, buf, &argc);
	if (!argv)
		return -ENOMEM;
	r = set(s, argc, argv, &error);
	if (r)
		DMERR("%s: %s: %s", dm_device_name(s->md), a->attr.name, error);
	argv_free(argv);
	return r ? r : len;
}

static ssize_t placement_store(struct n2l_store *s, const struct n2l_attr *a,
			       const char *buf, size_t len)
{
	return policy_store(s, a, buf, len, n2l_set_placement);
}

static ssize_t prefetch_show(struct n2l_store *s, const struct n2l_attr *a,
			     char *buf)
{
	char name[32];

	spin_lock_irq(&s->lock);
	strscpy(name, s->mig.policy ? s->mig.policy->type->base.name : "none",
		sizeof(name));
	spin_unlock_irq(&s->lock);
	return n2l_policy_names(N2L_POLICY_PREFETCH, name, buf, PAGE_SIZE);
}

static ssize_t prefetch_store(struct n2l_store *s, const struct n2l_attr *a,
			      const char *buf, size_t len)
{
	return policy_store(s, a, buf, len, n2l_set_prefetch);
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

/* "full" when no medium has room for a slot on none yet, else "ok". */
static ssize_t space_show(struct n2l_store *s, const struct n2l_attr *a,
			  char *buf)
{
	bool full;

	spin_lock_irq(&s->lock);
	full = __n2l_full(s);
	spin_unlock_irq(&s->lock);
	return sysfs_emit(buf, "%s\n", full ? "full" : "ok");
}

/* A number, or every choice with the current one in brackets. */
static ssize_t knob_show(struct n2l_store *s, const struct n2l_attr *a,
			 char *buf)
{
	int n = n2l_show_knob(s, a->attr.name, buf, PAGE_SIZE - 1, true);

	if (n < 0)
		return n;
	return n + sysfs_emit_at(buf, n, "\n");
}

/* The same check and effect as "dmsetup message ... set <knob> <value>". */
static ssize_t knob_store(struct n2l_store *s, const struct n2l_attr *a,
			  const char *buf, size_t len)
{
	char value[16], *error;
	int r;

	if (len >= sizeof(value))
		return -EINVAL;
	strscpy(value, buf, sizeof(value));
	r = n2l_set_knob(s, a->attr.name, strim(value), &error);
	return r ? r : len;
}

/* One line per server: name, state and its counters. */
/* "<state> <generation> <commits>", or "none" without a metadata device. */
static ssize_t metadata_show(struct n2l_store *s, const struct n2l_attr *a,
			     char *buf)
{
	return n2l_meta_show(s, buf);
}

static ssize_t servers_show(struct n2l_store *s, const struct n2l_attr *a,
			    char *buf)
{
	char line[400];
	unsigned int i;
	int n = 0;

	for (i = 0; i < N2L_NET_SERVERS; i++) {
		if (!n2l_server_line(s, i, line, sizeof(line)))
			continue;
		n += sysfs_emit_at(buf, n, "%s\n", line);
	}
	return n;
}

/* "add <host:port>" or "remove <host:port>", as the messages. */
static ssize_t servers_store(struct n2l_store *s, const struct n2l_attr *a,
			     const char *buf, size_t len)
{
	char *error = NULL, **argv;
	int argc, r = -EINVAL;

	argv = argv_split(GFP_KERNEL, buf, &argc);
	if (!argv)
		return -ENOMEM;
	if (argc == 2 && !strcmp(argv[0], "add"))
		r = n2l_add_server(s, argv[1], &error);
	else if (argc == 2 && !strcmp(argv[0], "remove"))
		r = n2l_remove_server(s, argv[1], &error);
	else if (argc == 2 && !strcmp(argv[0], "forget"))
		r = n2l_forget_server(s, argv[1], &error);
	if (r)
		DMERR("%s: servers: %s", dm_device_name(s->md),
		      error ?: "write \"add <host:port>\", \"remove <host:port>\" or \"forget <host:port>\"");
	argv_free(argv);
	return r ? r : len;
}

/*----------------------------------------------------------------*/

enum {
	F_HELD, F_CAPACITY, F_READS, F_WRITES, F_READ_BYTES, F_WRITE_BYTES,
	F_READS_INFLIGHT, F_MOVED_IN, F_MOVED_OUT,
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
		/* Network RAM: what its servers donate, as status says. */
		v = a->medium == N2L_NETRAM ? n2l_netram_capacity(s, false) :
					      md->alloc.nr_blocks;
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
	case F_READS_INFLIGHT:
		v = atomic_read(&md->stats.reads_inflight);
		break;
	case F_MOVED_IN:
		v = atomic64_read(&md->stats.moved_in);
		break;
	case F_MOVED_OUT:
		v = atomic64_read(&md->stats.moved_out);
		break;
	}
	return sysfs_emit(buf, "%llu\n", (unsigned long long)v);
}

enum {
	F_NOSPC, F_DISCARDED, F_ZERO_READS, F_DROPPED, F_SLOW_WRITES,
	F_SLOW_READS, F_FAILED_READS, F_MOVED, F_RETURNED, F_PREFETCHED,
	F_PREFETCH_HITS, F_REREPLICATED, F_AUTH_FAILURES, F_PREFETCH_READS,
	F_PREFETCH_TARGET, F_PREFETCH_ACTIVATIONS, F_PREFETCH_ROOM_TARGET,
};

static ssize_t counter_show(struct n2l_store *s, const struct n2l_attr *a,
			    char *buf)
{
	atomic64_t *c[] = {
		[F_NOSPC] = &s->stats.nospc,
		[F_DISCARDED] = &s->stats.discarded,
		[F_ZERO_READS] = &s->stats.zero_reads,
		[F_DROPPED] = &s->stats.dropped,
		[F_SLOW_WRITES] = &s->stats.slow_writes,
		[F_SLOW_READS] = &s->stats.slow_reads,
		[F_FAILED_READS] = &s->netram.failed_reads,
		[F_MOVED] = &s->netram.moved_pages,
		[F_RETURNED] = &s->netram.returned_pages,
		[F_PREFETCHED] = &s->stats.prefetched,
		[F_PREFETCH_HITS] = &s->stats.prefetch_hits,
		[F_REREPLICATED] = &s->netram.rereplicated,
		[F_AUTH_FAILURES] = &s->netram.auth_failures,
		[F_PREFETCH_READS] = &s->stats.prefetch_reads,
		[F_PREFETCH_TARGET] = &s->stats.prefetch_target,
		[F_PREFETCH_ACTIVATIONS] = &s->stats.prefetch_activations,
		[F_PREFETCH_ROOM_TARGET] = &s->stats.prefetch_room_target,
	};

	return sysfs_emit(buf, "%llu\n",
			  (unsigned long long)atomic64_read(c[a->field]));
}

enum { F_READ_PREFETCH_RATIO, F_READ_PARALLELISM, F_READ_PREFETCH_RATIO_ALL };

/*
 * "<x>.<xxx>": first reads or every read per prefetched slot, reads in
 * flight per read.
 */
static ssize_t ratio_show(struct n2l_store *s, const struct n2l_attr *a,
			  char *buf)
{
	u64 num, den, milli;

	if (a->field == F_READ_PREFETCH_RATIO) {
		num = atomic64_read(&s->stats.prefetch_hits);
		den = atomic64_read(&s->stats.prefetched);
	} else if (a->field == F_READ_PREFETCH_RATIO_ALL) {
		num = atomic64_read(&s->stats.prefetch_reads);
		den = atomic64_read(&s->stats.prefetched);
	} else {
		num = atomic64_read(&s->stats.read_parallel);
		den = atomic64_read(&s->stats.read_issues);
	}
	milli = n2l_milli(num, den);
	return sysfs_emit(buf, "%llu.%03llu\n",
			  (unsigned long long)div_u64(milli, 1000),
			  (unsigned long long)(milli % 1000));
}

enum { F_LOST, F_UNDERREPLICATED };

static ssize_t slots_of_show(struct n2l_store *s, const struct n2l_attr *a,
			     char *buf)
{
	u32 n;

	spin_lock_irq(&s->lock);
	n = a->field == F_LOST ? __n2l_lost_slots(s) : __n2l_underreplicated(s);
	spin_unlock_irq(&s->lock);
	return sysfs_emit(buf, "%u\n", n);
}

/* The latency histogram of one medium and direction: its bucket counts. */
static ssize_t latency_show(struct n2l_store *s, const struct n2l_attr *a,
			    char *buf)
{
	const struct n2l_latency *lat = &s->media[a->medium].stats.lat[a->field];
	unsigned int b;
	int n = 0;

	for (b = 0; b < N2L_LAT_BUCKETS; b++)
		n += sysfs_emit_at(buf, n, "%s%llu", b ? " " : "",
				   (unsigned long long)atomic64_read(&lat->bucket[b]));
	return n + sysfs_emit_at(buf, n, "\n");
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

#define N2L_RATIO_ATTR(_name, _field)					\
	static struct n2l_attr n2l_attr_##_name = {			\
		.attr = { .name = #_name, .mode = 0444 },		\
		.show = ratio_show, .field = _field,			\
	}

#define N2L_SLOTS_ATTR(_name, _field)					\
	static struct n2l_attr n2l_attr_##_name = {			\
		.attr = { .name = #_name, .mode = 0444 },		\
		.show = slots_of_show, .field = _field,			\
	}

#define N2L_LATENCY_ATTR(_name, _medium, _dir)				\
	static struct n2l_attr n2l_attr_##_name = {			\
		.attr = { .name = #_name, .mode = 0444 },		\
		.show = latency_show, .medium = _medium, .field = _dir,	\
	}

#define N2L_KNOB_ATTR(_name)	N2L_ATTR(_name, 0644, knob_show, knob_store)

N2L_ATTR(placement_policy, 0644, placement_show, placement_store);
N2L_ATTR(clear_stats, 0200, NULL, clear_stats_store);
N2L_ATTR(slots, 0444, slots_show, NULL);
N2L_ATTR(space, 0444, space_show, NULL);
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
N2L_COUNTER_ATTR(slow_writes, F_SLOW_WRITES);
N2L_COUNTER_ATTR(slow_reads, F_SLOW_READS);
N2L_COUNTER_ATTR(failed_reads, F_FAILED_READS);
N2L_COUNTER_ATTR(moved_pages, F_MOVED);
N2L_COUNTER_ATTR(returned_pages, F_RETURNED);
N2L_SLOTS_ATTR(lost_slots, F_LOST);
N2L_SLOTS_ATTR(underreplicated_slots, F_UNDERREPLICATED);
N2L_COUNTER_ATTR(rereplicated_slots, F_REREPLICATED);
N2L_COUNTER_ATTR(auth_failures, F_AUTH_FAILURES);
N2L_ATTR(servers, 0644, servers_show, servers_store);
N2L_ATTR(metadata, 0444, metadata_show, NULL);
N2L_KNOB_ATTR(netram_timeout_ms);
N2L_KNOB_ATTR(netram_dead_after_ms);
N2L_KNOB_ATTR(replicas);
N2L_ATTR(prefetch_policy, 0644, prefetch_show, prefetch_store);
N2L_KNOB_ATTR(prefetch_interval_ms);
N2L_KNOB_ATTR(prefetch_amount);
N2L_KNOB_ATTR(prefetch_amount_mode);
N2L_KNOB_ATTR(prefetch_enabled);
N2L_COUNTER_ATTR(prefetched_slots, F_PREFETCHED);
N2L_COUNTER_ATTR(prefetch_hits, F_PREFETCH_HITS);
N2L_RATIO_ATTR(read_prefetch_ratio, F_READ_PREFETCH_RATIO);
N2L_RATIO_ATTR(read_parallelism, F_READ_PARALLELISM);
N2L_COUNTER_ATTR(prefetch_reads, F_PREFETCH_READS);
N2L_RATIO_ATTR(read_prefetch_ratio_all, F_READ_PREFETCH_RATIO_ALL);
N2L_COUNTER_ATTR(prefetch_target, F_PREFETCH_TARGET);
N2L_COUNTER_ATTR(prefetch_activations, F_PREFETCH_ACTIVATIONS);
N2L_COUNTER_ATTR(prefetch_room_target, F_PREFETCH_ROOM_TARGET);
N2L_MEDIUM_ATTR(netram_reads_inflight, N2L_NETRAM, F_READS_INFLIGHT);
N2L_MEDIUM_ATTR(flash_reads_inflight, N2L_FLASH, F_READS_INFLIGHT);
N2L_MEDIUM_ATTR(disk_reads_inflight, N2L_DISK, F_READS_INFLIGHT);
N2L_MEDIUM_ATTR(netram_moved_in, N2L_NETRAM, F_MOVED_IN);
N2L_MEDIUM_ATTR(netram_moved_out, N2L_NETRAM, F_MOVED_OUT);
N2L_MEDIUM_ATTR(flash_moved_in, N2L_FLASH, F_MOVED_IN);
N2L_MEDIUM_ATTR(flash_moved_out, N2L_FLASH, F_MOVED_OUT);
N2L_MEDIUM_ATTR(disk_moved_in, N2L_DISK, F_MOVED_IN);
N2L_MEDIUM_ATTR(disk_moved_out, N2L_DISK, F_MOVED_OUT);
N2L_LATENCY_ATTR(netram_read_latency, N2L_NETRAM, READ);
N2L_LATENCY_ATTR(netram_write_latency, N2L_NETRAM, WRITE);
N2L_LATENCY_ATTR(flash_read_latency, N2L_FLASH, READ);
N2L_LATENCY_ATTR(flash_write_latency, N2L_FLASH, WRITE);
N2L_LATENCY_ATTR(disk_read_latency, N2L_DISK, READ);
N2L_LATENCY_ATTR(disk_write_latency, N2L_DISK, WRITE);

static struct attribute *n2l_attrs[] = {
	&n2l_attr_placement_policy.attr,
	&n2l_attr_clear_stats.attr,
	&n2l_attr_slots.attr,
	&n2l_attr_space.attr,
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
	&n2l_attr_slow_writes.attr,
	&n2l_attr_slow_reads.attr,
	&n2l_attr_failed_reads.attr,
	&n2l_attr_moved_pages.attr,
	&n2l_attr_returned_pages.attr,
	&n2l_attr_lost_slots.attr,
	&n2l_attr_underreplicated_slots.attr,
	&n2l_attr_rereplicated_slots.attr,
	&n2l_attr_auth_failures.attr,
	&n2l_attr_servers.attr,
	&n2l_attr_metadata.attr,
	&n2l_attr_netram_timeout_ms.attr,
	&n2l_attr_netram_dead_after_ms.attr,
	&n2l_attr_replicas.attr,
	&n2l_attr_prefetch_policy.attr,
	&n2l_attr_prefetch_interval_ms.attr,
	&n2l_attr_prefetch_amount.attr,
	&n2l_attr_prefetch_amount_mode.attr,
	&n2l_attr_prefetch_enabled.attr,
	&n2l_attr_prefetched_slots.attr,
	&n2l_attr_prefetch_hits.attr,
	&n2l_attr_read_prefetch_ratio.attr,
	&n2l_attr_read_parallelism.attr,
	&n2l_attr_prefetch_reads.attr,
	&n2l_attr_read_prefetch_ratio_all.attr,
	&n2l_attr_prefetch_target.attr,
	&n2l_attr_prefetch_activations.attr,
	&n2l_attr_prefetch_room_target.attr,
	&n2l_attr_netram_reads_inflight.attr,
	&n2l_attr_flash_reads_inflight.attr,
	&n2l_attr_disk_reads_inflight.attr,
	&n2l_attr_netram_moved_in.attr,
	&n2l_attr_netram_moved_out.attr,
	&n2l_attr_flash_moved_in.attr,
	&n2l_attr_flash_moved_out.attr,
	&n2l_attr_disk_moved_in.attr,
	&n2l_attr_disk_moved_out.attr,
	&n2l_attr_netram_read_latency.attr,
	&n2l_attr_netram_write_latency.attr,
	&n2l_attr_flash_read_latency.attr,
	&n2l_attr_flash_write_latency.attr,
	&n2l_attr_disk_read_latency.attr,
	&n2l_attr_disk_write_latency.attr,
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
