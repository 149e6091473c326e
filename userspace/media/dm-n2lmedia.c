// SPDX-License-Identifier: GPL-2.0-only
/*
 * n2lmedia: a test-only target that gives a fast memory device (brd, or a
 * memory-backed null_blk without delay) the timing of a storage medium, for
 * the benchmarks and tests of nswap2l. The backing device holds the data;
 * this target only decides when each bio reaches it.
 *
 * Glossary
 *
 *   due time   when a bio is handed to the backing device: the time the
 *              model says the medium would complete it
 *   service    the time a request occupies the medium: flash, from the
 *              moment it gets a service slot until it completes; disk,
 *              seek, rotation and transfer
 *   bus time   what a flash request holds the device's one bus (its
 *              controller and channels) for: a fixed cost per request plus
 *              its bytes over its direction's bandwidth
 *   direction  read or write; flushes and discards count as writes
 *
 * Constructor
 *
 *   n2lmedia <backing dev> <offset> <model> <#args> [<key> <value>]*
 *
 *   backing dev   the device that holds the data
 *   offset        the sector on it where the target's sector 0 lies
 *   model         flash or disk
 *   #args         how many words follow: twice the number of keys given
 *
 *   flash: each direction has read_qd or write_qd service slots. A request
 *   of S bytes starts when one of its direction's slots is free (requests
 *   that find none wait in FIFO order), then holds the bus for its bus
 *   time, req_us + S / mbps of its direction, and completes its
 *   direction's latency, lat_us + S / xfer_mbps, after that. The bus is
 *   one for both directions and serves requests one at a time in arrival
 *   order (one that waits for a slot holds up those behind it), as an
 *   SSD's controller and channels serve reads and writes alike: a stream
 *   of writes slows the reads issued behind it, and the two directions
 *   together never move more than the bus can. The latency's part per
 *   byte, the rate at which a request's data then reaches the host in
 *   nothing the requests share, makes a lone large request slower
 *   without lowering what a full queue moves. A direction completes its
 *   requests in the order they arrived (a page behind 1 MiB waits).
 *
 *   The fixed cost is what makes one model right for small and large
 *   requests at once: a 4 KiB request's bus time is mostly req_us, a
 *   1 MiB one's mostly its bytes. The benchmark sets req_us and mbps so
 *   that both sizes keep their ratio to Network RAM's time at queue depth
 *   32, and the latencies so that a page and 1 MiB keep it at depth 1
 *   (userspace/bench/profiles.py, flash_keys()).
 *
 *   key            default  meaning
 *   read_lat_us    100      latency of a read after its bus time
 *   write_lat_us   100      latency of a write after its bus time
 *   read_req_us    0        bus time of every read besides its bytes
 *   write_req_us   0        bus time of every write besides its bytes
 *   read_mbps      0        read bandwidth, 10^6 bytes/s; 0 is unlimited
 *   write_mbps     0        write bandwidth; 0 is unlimited
 *   read_xfer_mbps 0        rate of a read's latency per byte; 0 is none
 *   write_xfer_mbps 0       rate of a write's latency per byte; 0 is none
 *   read_qd        32       reads in service at once (1 to 1024)
 *   write_qd       32       writes in service at once (1 to 1024)
 *
 *   disk: one actuator serves requests one at a time in arrival order. A
 *   request that starts at the sector where the previous one ended costs
 *   its transfer, S / mbps; any other costs a seek of seek_min_us +
 *   (seek_max_us - seek_min_us) * sqrt(distance / target length), half a
 *   rotation (deterministic: 4167 us at 7200 rpm) and its transfer.
 *
 *   key            default  meaning
 *   mbps           100      transfer rate, 10^6 bytes/s (at least 1)
 *   seek_min_us    1000     track-to-track seek
 *   seek_max_us    6200     full-stroke seek (not less than seek_min_us)
 *   rpm            7200     spindle speed (at least 1)
 *
 *   The disk's defaults make random 4 KiB requests over the whole device
 *   cost about 8 ms each (125 per second), as the benchmark wants: two
 *   independent uniform positions lie sqrt-distance 8/15 of the way apart
 *   on average, so the mean seek is 1000 + 5200 * 8 / 15 = 3773 us, plus
 *   4167 us of rotation and 41 us of transfer, 7981 us. Sequential 4 KiB
 *   requests cost 41 us, 195 times fewer.
 *
 *   Flushes and discards are requests of 0 bytes: no transfer, no seek,
 *   served in their turn (on flash, a write's req_us of bus). Discards
 *   are advertised only when the backing device takes them. The logical
 *   block size is at least 4096.
 *
 * Status
 *
 *   flash <read requests> <read bytes> <read service us>
 *         <write requests> <write bytes> <write service us> <queued>
 *   disk  <read requests> <read bytes> <read service us> <read seeks>
 *         <read sequential> <write requests> <write bytes>
 *         <write service us> <write seeks> <write sequential> <queued>
 *
 *   requests     requests the model served (counted when they arrive)
 *   bytes        data bytes they moved (0 for flushes and discards)
 *   service us   their service times summed, in microseconds
 *   seeks        disk requests that paid a seek and a rotation
 *   sequential   disk requests that started where the previous one ended
 *   queued       bios waiting for their due time now
 *
 *   The table status prints every key of the model with its value.
 *
 * Messages
 *
 *   clear_stats   zero the counters (not queued)
 *
 * Examples
 *
 *   dmsetup create flash --table "0 131072 n2lmedia /dev/nullb0 0 flash 8 read_lat_us 80 write_lat_us 130 read_req_us 50 read_mbps 110"
 *   dmsetup create disk --table "0 524288 n2lmedia /dev/nullb1 0 disk 0"
 *
 * Timing: map() plans each bio's due time from the model's state, under
 * the lock with irqs off, and queues it; one hrtimer, armed for the
 * earliest due time, moves due bios to a ready list, and a worker on a
 * WQ_MEM_RECLAIM | WQ_HIGHPRI queue of the target's own submits them
 * (swap may run over this device: submitting must not wait for memory).
 * The clock is ktime_get(): under QEMU's -icount it is the guest's
 * virtual clock, and the model repeats exactly.
 */
#include <linux/bio.h>
#include <linux/device-mapper.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/stringify.h>
#include <linux/workqueue.h>

#define DM_MSG_PREFIX "n2lmedia"

#define MEDIA_BLOCK	4096
#define MEDIA_MAX_US	10000000	/* 10 s, for latencies and seeks */
#define MEDIA_MAX_MBPS	1000000
#define MEDIA_MAX_QD	1024

/* Key indices: flash keys alternate read and write, so + dir works. */
enum {
	FLASH_LAT, FLASH_REQ = 2, FLASH_MBPS = 4, FLASH_QD = 6, FLASH_XFER = 8,
	FLASH_NR_KEYS = 10
};
enum { DISK_MBPS, DISK_SEEK_MIN, DISK_SEEK_MAX, DISK_RPM, DISK_NR_KEYS };
#define MEDIA_MAX_KEYS FLASH_NR_KEYS

struct media_key {
	const char *name;
	unsigned int def;
	struct dm_arg arg;	/* bounds, and the error outside them */
};

#define US_KEY(n, d) { n, d, { 0, MEDIA_MAX_US, \
	"Invalid " n ": an integer from 0 to " __stringify(MEDIA_MAX_US) } }
#define MBPS_KEY(n, d, lo) { n, d, { lo, MEDIA_MAX_MBPS, \
	"Invalid " n ": an integer from " #lo " to " __stringify(MEDIA_MAX_MBPS) } }
#define QD_KEY(n) { n, 32, { 1, MEDIA_MAX_QD, \
	"Invalid " n ": an integer from 1 to " __stringify(MEDIA_MAX_QD) } }

static const struct media_key flash_keys[FLASH_NR_KEYS] = {
	US_KEY("read_lat_us", 100),
	US_KEY("write_lat_us", 100),
	US_KEY("read_req_us", 0),
	US_KEY("write_req_us", 0),
	MBPS_KEY("read_mbps", 0, 0),
	MBPS_KEY("write_mbps", 0, 0),
	QD_KEY("read_qd"),
	QD_KEY("write_qd"),
	MBPS_KEY("read_xfer_mbps", 0, 0),
	MBPS_KEY("write_xfer_mbps", 0, 0),
};

static const struct media_key disk_keys[DISK_NR_KEYS] = {
	MBPS_KEY("mbps", 100, 1),
	US_KEY("seek_min_us", 1000),
	US_KEY("seek_max_us", 6200),
	{ "rpm", 7200, { 1, 1000000, "Invalid rpm: an integer from 1 to 1000000" } },
};

/* A flash direction: its costs and its service slots. */
struct flash_dir {
	u64 lat_ns;
	u64 req_ns;		/* bus time of a request besides its bytes */
	unsigned int mbps;	/* 0: unlimited */
	unsigned int xfer_mbps;	/* 0: no latency per byte */
	unsigned int qd;
	/*
	 * The done time of the last request in each slot. A request is done
	 * its latency after its bus time's end, and no sooner than the
	 * direction's previous request (the slot before slot_next), so done
	 * times never decrease: the slot used qd requests ago,
	 * slot_free[slot_next], frees first.
	 */
	ktime_t *slot_free;
	unsigned int slot_next;
};

/* Flash: two directions over one bus. */
struct flash_state {
	struct flash_dir dir[2];
	ktime_t bus_free;	/* when the last request's bus time ends */
};

struct disk_state {
	u64 seek_min_ns, seek_span_ns, rot_ns;
	unsigned int mbps;
	ktime_t busy_until;	/* when the last request's service ends */
	sector_t head;		/* where the last request ended */
};

struct media_stats {
	u64 requests, bytes, service_ns, seeks, sequential;
};

struct media_c;

struct media_model {
	const char *name;
	const struct media_key *keys;
	unsigned int nr_keys;
	char *unknown_key;	/* ti->error for a key not in keys */
	unsigned int nr_queues;
	int (*setup)(struct dm_target *ti, struct media_c *mc);
	ktime_t (*plan)(struct media_c *mc, int dir, sector_t pos,
			unsigned int bytes, ktime_t now);
	void (*reset)(struct media_c *mc);
	bool disk_stats;
};

struct media_c {
	struct dm_dev *dev;
	sector_t start;
	sector_t len;
	const struct media_model *model;
	unsigned int args[MEDIA_MAX_KEYS];	/* every key's value */

	struct hrtimer timer;
	struct workqueue_struct *wq;
	struct work_struct submit_work;

	spinlock_t lock;	/* irqs off: the timer takes it in hardirq */
	/* Protected by lock: */
	bool may_queue;		/* false from presuspend to resume */
	/*
	 * Bios waiting for their due time, one queue per direction for flash
	 * and one for disk; due times never decrease along a queue (see
	 * flash_dir and disk_plan), so the head is due first.
	 */
	struct bio_list queue[2];
	struct bio_list ready;	/* due, for the worker, in due order */
	unsigned int queued;	/* bios in queue[] */
	ktime_t timer_due;	/* what the timer is armed for, or KTIME_MAX */
	struct flash_state flash;
	struct disk_state disk;
	struct media_stats stats[2];
};

/* What map() keeps with each bio. */
struct media_io {
	ktime_t due;
};

static ktime_t bio_due(struct bio *bio)
{
	return ((struct media_io *)dm_per_bio_data(bio, sizeof(struct media_io)))->due;
}

/* S / mbps in ns, for mbps in 10^6 bytes/s; 0 when unlimited. */
static u64 transfer_ns(unsigned int bytes, unsigned int mbps)
{
	return mbps ? div_u64((u64)bytes * 1000, mbps) : 0;
}

static void __media_account(struct media_c *mc, int dir, unsigned int bytes,
			    u64 service_ns)
{
	struct media_stats *st = &mc->stats[dir];

	lockdep_assert_held(&mc->lock);
	st->requests++;
	st->bytes += bytes;
	st->service_ns += service_ns;
}

/*----------------------------------------------------------------*/
/* Flash */

static int flash_setup(struct dm_target *ti, struct media_c *mc)
{
	int dir;

	for (dir = READ; dir <= WRITE; dir++) {
		struct flash_dir *fd = &mc->flash.dir[dir];

		fd->lat_ns = (u64)mc->args[FLASH_LAT + dir] * NSEC_PER_USEC;
		fd->req_ns = (u64)mc->args[FLASH_REQ + dir] * NSEC_PER_USEC;
		fd->mbps = mc->args[FLASH_MBPS + dir];
		fd->qd = mc->args[FLASH_QD + dir];
		fd->xfer_mbps = mc->args[FLASH_XFER + dir];
		fd->slot_free = kcalloc(fd->qd, sizeof(*fd->slot_free), GFP_KERNEL);
		if (!fd->slot_free) {
			ti->error = "Cannot allocate the service slots";
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * A request's slot, then its turn on the bus shared by both directions,
 * then its latency. Both directions take the bus in arrival order, so
 * bus ends never decrease; a latency that grows with the bytes could let
 * a page finish before the 1 MiB ahead of it, which the direction's one
 * FIFO queue of due bios cannot hold, so it waits for it.
 */
static ktime_t flash_plan(struct media_c *mc, int dir, sector_t pos,
			  unsigned int bytes, ktime_t now)
{
	struct flash_state *fs = &mc->flash;
	struct flash_dir *fd = &fs->dir[dir];
	ktime_t *slot = &fd->slot_free[fd->slot_next];
	ktime_t prev_done = fd->slot_free[(fd->slot_next + fd->qd - 1) % fd->qd];
	ktime_t start = max(now, *slot);
	ktime_t bus_end = ktime_add_ns(max(start, fs->bus_free),
				       fd->req_ns + transfer_ns(bytes, fd->mbps));
	ktime_t done = ktime_add_ns(bus_end, fd->lat_ns +
				    transfer_ns(bytes, fd->xfer_mbps));

	done = max(done, prev_done);
	fs->bus_free = bus_end;
	*slot = done;
	fd->slot_next = (fd->slot_next + 1) % fd->qd;
	__media_account(mc, dir, bytes, ktime_sub(done, start));
	return done;
}

static void flash_reset(struct media_c *mc)
{
	int dir;

	mc->flash.bus_free = 0;
	for (dir = READ; dir <= WRITE; dir++) {
		struct flash_dir *fd = &mc->flash.dir[dir];

		memset(fd->slot_free, 0, fd->qd * sizeof(*fd->slot_free));
	}
}

/*----------------------------------------------------------------*/
/* Disk */

static int disk_setup(struct dm_target *ti, struct media_c *mc)
{
	struct disk_state *d = &mc->disk;

	if (mc->args[DISK_SEEK_MAX] < mc->args[DISK_SEEK_MIN]) {
		ti->error = "seek_max_us is less than seek_min_us";
		return -EINVAL;
	}
	d->mbps = mc->args[DISK_MBPS];
	d->seek_min_ns = (u64)mc->args[DISK_SEEK_MIN] * NSEC_PER_USEC;
	d->seek_span_ns = (u64)mc->args[DISK_SEEK_MAX] * NSEC_PER_USEC - d->seek_min_ns;
	/* Half a rotation: 60 s / rpm / 2. */
	d->rot_ns = div_u64(30 * NSEC_PER_SEC, mc->args[DISK_RPM]);
	return 0;
}

/* seek_min + (seek_max - seek_min) * sqrt(distance / length). */
static u64 disk_seek_ns(struct media_c *mc, sector_t from, sector_t to)
{
	u64 dist = from > to ? from - to : to - from;
	u64 len = mc->len;
	u32 root;

	/* Scale to 32 bits, so that dist << 32 cannot overflow. */
	while (len > U32_MAX) {
		len >>= 1;
		dist >>= 1;
	}
	dist = min(dist, len);
	root = int_sqrt64(div64_u64(dist << 32, len));	/* 0 to 1 << 16 */
	return mc->disk.seek_min_ns + mul_u64_u32_shr(mc->disk.seek_span_ns, root, 16);
}

static ktime_t disk_plan(struct media_c *mc, int dir, sector_t pos,
			 unsigned int bytes, ktime_t now)
{
	struct disk_state *d = &mc->disk;
	ktime_t start = max(now, d->busy_until);
	u64 cost = transfer_ns(bytes, d->mbps);

	if (bytes) {
		if (pos == d->head) {
			mc->stats[dir].sequential++;
		} else {
			cost += disk_seek_ns(mc, d->head, pos) + d->rot_ns;
			mc->stats[dir].seeks++;
		}
		d->head = pos + (bytes >> SECTOR_SHIFT);
	}
	/* One at a time in arrival order: due times never decrease. */
	d->busy_until = ktime_add_ns(start, cost);
	__media_account(mc, dir, bytes, cost);
	return d->busy_until;
}

static void disk_reset(struct media_c *mc)
{
	mc->disk.busy_until = 0;
}

static const struct media_model media_models[] = {
	{
		.name = "flash",
		.keys = flash_keys,
		.nr_keys = FLASH_NR_KEYS,
		.unknown_key = "Unknown flash argument: read_lat_us, write_lat_us, read_req_us, write_req_us, read_mbps, write_mbps, read_qd, write_qd, read_xfer_mbps or write_xfer_mbps",
		.nr_queues = 2,
		.setup = flash_setup,
		.plan = flash_plan,
		.reset = flash_reset,
	}, {
		.name = "disk",
		.keys = disk_keys,
		.nr_keys = DISK_NR_KEYS,
		.unknown_key = "Unknown disk argument: mbps, seek_min_us, seek_max_us or rpm",
		.nr_queues = 1,
		.setup = disk_setup,
		.plan = disk_plan,
		.reset = disk_reset,
		.disk_stats = true,
	},
};

/*----------------------------------------------------------------*/
/* Queues, timer and worker */

/* The queue whose head is due first, or NULL if all are empty. */
static struct bio_list *__media_earliest(struct media_c *mc)
{
	struct bio_list *first = NULL;
	unsigned int i;

	for (i = 0; i < mc->model->nr_queues; i++) {
		struct bio_list *q = &mc->queue[i];

		if (q->head && (!first || bio_due(q->head) < bio_due(first->head)))
			first = q;
	}
	return first;
}

/* Moves every bio due by @now to the ready list, in due order. */
static bool __media_take_due(struct media_c *mc, ktime_t now)
{
	struct bio_list *q;
	bool moved = false;

	lockdep_assert_held(&mc->lock);
	while ((q = __media_earliest(mc)) && bio_due(q->head) <= now) {
		bio_list_add(&mc->ready, bio_list_pop(q));
		mc->queued--;
		moved = true;
	}
	return moved;
}

/*
 * Arms the timer for @due, the earliest queued bio's due time. Both
 * callers, the timer and map(), hold the lock, so timer_due is what the
 * timer was last started for.
 */
static void __media_arm(struct media_c *mc, ktime_t due)
{
	lockdep_assert_held(&mc->lock);
	mc->timer_due = due;
	if (due != KTIME_MAX)
		hrtimer_start(&mc->timer, due, HRTIMER_MODE_ABS);
}

/*
 * In hardirq: hand what is due to the worker, re-arm for the rest. It
 * re-arms with hrtimer_start(), not HRTIMER_RESTART, because map() may
 * have started the timer again meanwhile.
 */
static enum hrtimer_restart media_timer_fn(struct hrtimer *timer)
{
	struct media_c *mc = container_of(timer, struct media_c, timer);
	struct bio_list *next;
	unsigned long flags;
	bool ready;

	spin_lock_irqsave(&mc->lock, flags);
	ready = __media_take_due(mc, ktime_get());
	next = __media_earliest(mc);
	__media_arm(mc, next ? bio_due(next->head) : KTIME_MAX);
	spin_unlock_irqrestore(&mc->lock, flags);
	if (ready)
		queue_work(mc->wq, &mc->submit_work);
	return HRTIMER_NORESTART;
}

static void media_submit(struct work_struct *work)
{
	struct media_c *mc = container_of(work, struct media_c, submit_work);
	struct bio_list ready;
	struct bio *bio;

	spin_lock_irq(&mc->lock);
	ready = mc->ready;
	bio_list_init(&mc->ready);
	spin_unlock_irq(&mc->lock);
	/* submit_bio_noacct(), with dm's accounting and remap trace. */
	while ((bio = bio_list_pop(&ready)))
		dm_submit_bio_remap(bio, NULL);
}

/*
 * Submits every queued bio now, whatever its due time, and waits until the
 * worker has. map() queues nothing while may_queue is false, and the timer
 * re-arms only while bios are queued, so once it is cancelled and the
 * queues are empty it stays idle. The model's clock starts afresh: what
 * it had planned is gone.
 */
static void media_flush_all(struct media_c *mc)
{
	spin_lock_irq(&mc->lock);
	mc->may_queue = false;
	spin_unlock_irq(&mc->lock);
	hrtimer_cancel(&mc->timer);

	spin_lock_irq(&mc->lock);
	__media_take_due(mc, KTIME_MAX);
	mc->timer_due = KTIME_MAX;
	mc->model->reset(mc);
	spin_unlock_irq(&mc->lock);

	queue_work(mc->wq, &mc->submit_work);
	flush_work(&mc->submit_work);
}

/*----------------------------------------------------------------*/
/* Constructor and destructor */

static void media_dtr(struct dm_target *ti)
{
	struct media_c *mc = ti->private;

	/* After a suspend nothing is queued; this only makes sure. */
	if (mc->wq) {
		media_flush_all(mc);
		destroy_workqueue(mc->wq);
	}
	if (mc->dev)
		dm_put_device(ti, mc->dev);
	kfree(mc->flash.dir[READ].slot_free);
	kfree(mc->flash.dir[WRITE].slot_free);
	kfree(mc);
}

static const struct media_model *media_find_model(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(media_models); i++)
		if (!strcmp(name, media_models[i].name))
			return &media_models[i];
	return NULL;
}

/* <#args> [<key> <value>]*: every key at most once, all of them used. */
static int parse_model_args(struct dm_target *ti, struct media_c *mc,
			    struct dm_arg_set *as)
{
	static const struct dm_arg nr_args = {
		0, 2 * MEDIA_MAX_KEYS, "Invalid number of model arguments"
	};
	const struct media_model *m = mc->model;
	const struct dm_arg *arg;
	unsigned long seen = 0;
	unsigned int nargs, i;
	const char *key;
	int r;

	for (i = 0; i < m->nr_keys; i++)
		mc->args[i] = m->keys[i].def;
	r = dm_read_arg_group(&nr_args, as, &nargs, &ti->error);
	if (r)
		return r;
	if (nargs % 2) {
		ti->error = "Model arguments come in <key> <value> pairs";
		return -EINVAL;
	}
	if (as->argc > nargs) {
		ti->error = "Too many arguments for #args";
		return -EINVAL;
	}
	while (as->argc) {
		key = dm_shift_arg(as);
		for (i = 0; i < m->nr_keys; i++)
			if (!strcmp(key, m->keys[i].name))
				break;
		if (i == m->nr_keys) {
			ti->error = m->unknown_key;
			return -EINVAL;
		}
		if (__test_and_set_bit(i, &seen)) {
			ti->error = "Model argument given twice";
			return -EINVAL;
		}
		/* kstrtouint, not dm_read_arg's sscanf: it refuses overflow. */
		arg = &m->keys[i].arg;
		if (kstrtouint(dm_shift_arg(as), 10, &mc->args[i]) ||
		    mc->args[i] < arg->min || mc->args[i] > arg->max) {
			ti->error = arg->error;
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * <backing dev> <offset> <model> <#args> [<key> <value>]*
 * (the whole grammar is at the top of this file)
 */
static int media_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct dm_arg_set as = { .argc = argc, .argv = argv };
	unsigned long long offset;
	struct media_c *mc;
	const char *path;
	int r;

	if (argc < 4) {
		ti->error = "Requires <backing dev> <offset> <model> <#args> [<key> <value>]*";
		return -EINVAL;
	}
	mc = kzalloc(sizeof(*mc), GFP_KERNEL);
	if (!mc) {
		ti->error = "Cannot allocate the context";
		return -ENOMEM;
	}
	ti->private = mc;
	spin_lock_init(&mc->lock);
	hrtimer_init(&mc->timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	mc->timer.function = media_timer_fn;
	INIT_WORK(&mc->submit_work, media_submit);
	mc->timer_due = KTIME_MAX;
	mc->may_queue = true;
	mc->len = ti->len;

	path = dm_shift_arg(&as);
	if (kstrtoull(dm_shift_arg(&as), 10, &offset) || offset != (sector_t)offset) {
		ti->error = "Invalid offset";
		r = -EINVAL;
		goto bad;
	}
	mc->start = offset;
	mc->model = media_find_model(dm_shift_arg(&as));
	if (!mc->model) {
		ti->error = "Unknown model: flash or disk";
		r = -EINVAL;
		goto bad;
	}
	r = parse_model_args(ti, mc, &as);
	if (r)
		goto bad;
	r = mc->model->setup(ti, mc);
	if (r)
		goto bad;

	r = dm_get_device(ti, path, dm_table_get_mode(ti->table), &mc->dev);
	if (r) {
		ti->error = "Backing device lookup failed";
		goto bad;
	}
	mc->wq = alloc_workqueue("n2lmedia", WQ_MEM_RECLAIM | WQ_HIGHPRI, 0);
	if (!mc->wq) {
		ti->error = "Cannot allocate the workqueue";
		r = -ENOMEM;
		goto bad;
	}
	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->per_io_data_size = sizeof(struct media_io);
	return 0;

bad:
	media_dtr(ti);
	return r;
}

/*----------------------------------------------------------------*/
/* I/O */

static int media_map(struct dm_target *ti, struct bio *bio)
{
	struct media_c *mc = ti->private;
	struct media_io *io = dm_per_bio_data(bio, sizeof(*io));
	unsigned int bytes = bio_has_data(bio) ? bio->bi_iter.bi_size : 0;
	sector_t pos = dm_target_offset(ti, bio->bi_iter.bi_sector);
	int dir = bio_data_dir(bio);
	unsigned long flags;

	bio_set_dev(bio, mc->dev->bdev);
	if (bio_sectors(bio))
		bio->bi_iter.bi_sector = mc->start + pos;

	spin_lock_irqsave(&mc->lock, flags);
	if (unlikely(!mc->may_queue)) {
		spin_unlock_irqrestore(&mc->lock, flags);
		return DM_MAPIO_REMAPPED;
	}
	io->due = mc->model->plan(mc, dir, pos, bytes, ktime_get());
	bio_list_add(&mc->queue[mc->model->nr_queues == 1 ? 0 : dir], bio);
	mc->queued++;
	if (io->due < mc->timer_due)
		__media_arm(mc, io->due);
	spin_unlock_irqrestore(&mc->lock, flags);
	return DM_MAPIO_SUBMITTED;
}

static void media_presuspend(struct dm_target *ti)
{
	media_flush_all(ti->private);
}

static void media_resume(struct dm_target *ti)
{
	struct media_c *mc = ti->private;

	spin_lock_irq(&mc->lock);
	mc->may_queue = true;
	spin_unlock_irq(&mc->lock);
}

/*----------------------------------------------------------------*/
/* Status and messages */

static void emit_stats(const struct media_stats *st, bool disk, char *result,
		       unsigned int maxlen, size_t *szp)
{
	size_t sz = *szp;

	DMEMIT(" %llu %llu %llu", (unsigned long long)st->requests,
	       (unsigned long long)st->bytes,
	       (unsigned long long)div_u64(st->service_ns, NSEC_PER_USEC));
	if (disk)
		DMEMIT(" %llu %llu", (unsigned long long)st->seeks,
		       (unsigned long long)st->sequential);
	*szp = sz;
}

/*
 * INFO: "<model> <read stats> <write stats> <queued>" (see the top of
 * the file); TABLE: the constructor's line with every key; IMA: the model.
 */
static void media_status(struct dm_target *ti, status_type_t type,
			 unsigned int status_flags, char *result,
			 unsigned int maxlen)
{
	struct media_c *mc = ti->private;
	const struct media_model *m = mc->model;
	struct media_stats st[2];
	unsigned int queued, i;
	size_t sz = 0;

	switch (type) {
	case STATUSTYPE_INFO:
		spin_lock_irq(&mc->lock);
		memcpy(st, mc->stats, sizeof(st));
		queued = mc->queued;
		spin_unlock_irq(&mc->lock);
		DMEMIT("%s", m->name);
		emit_stats(&st[READ], m->disk_stats, result, maxlen, &sz);
		emit_stats(&st[WRITE], m->disk_stats, result, maxlen, &sz);
		DMEMIT(" %u", queued);
		break;
	case STATUSTYPE_TABLE:
		DMEMIT("%s %llu %s %u", mc->dev->name,
		       (unsigned long long)mc->start, m->name, 2 * m->nr_keys);
		for (i = 0; i < m->nr_keys; i++)
			DMEMIT(" %s %u", m->keys[i].name, mc->args[i]);
		break;
	case STATUSTYPE_IMA:
		DMEMIT_TARGET_NAME_VERSION(ti->type);
		DMEMIT(",model=%s;", m->name);
		break;
	}
}

/* clear_stats: zero the counters. */
static int media_message(struct dm_target *ti, unsigned int argc, char **argv,
			 char *result, unsigned int maxlen)
{
	struct media_c *mc = ti->private;

	if (argc == 1 && !strcasecmp(argv[0], "clear_stats")) {
		spin_lock_irq(&mc->lock);
		memset(mc->stats, 0, sizeof(mc->stats));
		spin_unlock_irq(&mc->lock);
		return 0;
	}
	DMERR("Unsupported message '%s'", argv[0]);
	return -EINVAL;
}

static int media_iterate_devices(struct dm_target *ti,
				 iterate_devices_callout_fn fn, void *data)
{
	struct media_c *mc = ti->private;

	return fn(ti, mc->dev, mc->start, ti->len, data);
}

/*
 * dm core has stacked the backing device's limits (iterate_devices);
 * whole 4 KiB blocks keep the disk model's sequential check exact.
 */
static void media_io_hints(struct dm_target *ti, struct queue_limits *limits)
{
	limits->logical_block_size = max_t(unsigned int,
					   limits->logical_block_size, MEDIA_BLOCK);
	limits->physical_block_size = max_t(unsigned int,
					    limits->physical_block_size, MEDIA_BLOCK);
	limits->io_min = max_t(unsigned int, limits->io_min, MEDIA_BLOCK);
}

static struct target_type media_target = {
	.name = "n2lmedia",
	.version = {1, 1, 0},
	.module = THIS_MODULE,
	.ctr = media_ctr,
	.dtr = media_dtr,
	.map = media_map,
	.presuspend = media_presuspend,
	.presuspend_undo = media_resume,
	.resume = media_resume,
	.status = media_status,
	.message = media_message,
	.iterate_devices = media_iterate_devices,
	.io_hints = media_io_hints,
};

static int __init media_init(void)
{
	return dm_register_target(&media_target);
}

static void __exit media_exit(void)
{
	dm_unregister_target(&media_target);
}

module_init(media_init);
module_exit(media_exit);

MODULE_DESCRIPTION(DM_NAME " target emulating a storage medium's timing (for tests)");
MODULE_AUTHOR("Nswap2L developers");
MODULE_LICENSE("GPL");
