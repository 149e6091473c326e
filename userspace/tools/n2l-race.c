// SPDX-License-Identifier: GPL-2.0-only
/*
 * n2l-race: writers, readers and discards racing over the same slots of
 * a block device, then an exact check of what every slot holds.
 *
 *   n2l-race <dev> <slots> <seconds> <writers> <readers> owned|shared [eio-ok]
 *
 * It runs for <seconds>, or until SIGUSR1, then checks every slot.
 *
 * Every 4 KiB block written carries (magic, slot, writer, sequence) and a
 * payload derived from them, so any block read can be judged alone.
 *
 * owned:  each group of 8 slots belongs to one writer, which writes runs
 *         of 1..8 slots (one multi-slot bio) or discards them, one
 *         operation at a time. Readers check every block they read is
 *         zero or a whole block of the slot it was read from. At the end
 *         every slot must hold exactly its owner's last write, or zeroes
 *         if that was a discard.
 * shared: every writer writes anywhere, so writes to one slot overlap.
 *         At the end every slot must hold a whole block of that slot.
 *
 * eio-ok: a read that fails with EIO (a slot whose every copy is lost, or
 *         out of reach for now) is not an error: readers and the final
 *         check read such a run again slot by slot, print "EIO run <slot>"
 *         or "EIO end <slot>" for every slot that fails, and go on; the
 *         summary line then ends with "eio_run <n> eio_end <n>". Wrong data
 *         is never acceptable.
 *
 * Exit 0 when all is well, 1 on a wrong block (the first ones are
 * printed), 2 on an I/O error or bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define BLOCK	4096u
#define GROUP	8u
#define MAGIC	0x6e7377617032ULL	/* "nswap2" */

struct header {
	uint64_t magic, slot, writer, seq;
};

static int fd;
static uint64_t nr_slots;
static unsigned int nr_writers;
static int owned;
static atomic_int stop;
static atomic_uint_fast64_t *last_seq;	/* owned mode: per slot, 0 = zeroes */
static atomic_ulong writes, reads, discards, wrong, eio_run, eio_end;
static atomic_int io_error;
static int eio_ok;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(uint64_t *w, uint64_t slot, uint64_t writer, uint64_t seq)
{
	uint64_t s = (slot << 20) ^ (writer << 50) ^ seq ^ 0x5bd1e995;
	unsigned int i;

	w[0] = MAGIC;
	w[1] = slot;
	w[2] = writer;
	w[3] = seq;
	for (i = 4; i < BLOCK / 8; i++)
		w[i] = rnd(&s) + i;
}

static int is_zero(const uint64_t *w)
{
	unsigned int i;

	for (i = 0; i < BLOCK / 8; i++)
		if (w[i])
			return 0;
	return 1;
}

/* A whole block of @slot: right header and the payload it implies. */
static int whole_block_of(const uint64_t *w, uint64_t slot, uint64_t *tmp)
{
	if (w[0] != MAGIC || w[1] != slot)
		return 0;
	fill(tmp, w[1], w[2], w[3]);
	return !memcmp(w, tmp, BLOCK);
}

static void report(const char *what, uint64_t slot, const uint64_t *w)
{
	if (atomic_fetch_add(&wrong, 1) < 10)
		fprintf(stderr, "WRONG %s slot %" PRIu64 ": magic %#" PRIx64
			" slot %" PRIu64 " writer %" PRIu64 " seq %" PRIu64 "\n",
			what, slot, w[0], w[1], w[2], w[3]);
}

static void fail_io(const char *op, uint64_t slot)
{
	fprintf(stderr, "n2l-race: %s at slot %" PRIu64 ": %s\n", op, slot,
		strerror(errno));
	atomic_store(&io_error, 1);
	atomic_store(&stop, 1);
}

static void *aligned(size_t n)
{
	void *p;

	if (posix_memalign(&p, BLOCK, n)) {
		fprintf(stderr, "n2l-race: out of memory\n");
		exit(2);
	}
	return p;
}

static void on_usr1(int sig)
{
	(void)sig;
	atomic_store(&stop, 1);
}

/*----------------------------------------------------------------*/

static void pick_run(uint64_t *r, unsigned int id, uint64_t *first,
		     uint64_t *n)
{
	uint64_t groups = nr_slots / GROUP, g, off;

	if (owned) {
		/* groups id, id + writers, id + 2 * writers, ... */
		g = id + (rnd(r) % ((groups - id + nr_writers - 1) / nr_writers)) *
			 nr_writers;
	} else {
		g = rnd(r) % groups;
	}
	off = rnd(r) % GROUP;
	*first = g * GROUP + off;
	*n = 1 + rnd(r) % (GROUP - off);
}

static void *writer(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg;
	uint64_t r = 0x9e3779b9ULL * (id + 1), seq = 0, first, n, i;
	uint64_t *buf = aligned(GROUP * BLOCK), range[2];

	while (!atomic_load(&stop)) {
		pick_run(&r, id, &first, &n);
		if (owned && rnd(&r) % 10 == 0) {
			range[0] = first * BLOCK;
			range[1] = n * BLOCK;
			if (ioctl(fd, BLKDISCARD, range)) {
				fail_io("discard", first);
				break;
			}
			for (i = 0; i < n; i++)
				atomic_store(&last_seq[first + i], 0);
			atomic_fetch_add(&discards, 1);
			continue;
		}
		seq++;
		for (i = 0; i < n; i++)
			fill(buf + i * (BLOCK / 8), first + i, id, seq);
		if (pwrite(fd, buf, n * BLOCK, (off_t)(first * BLOCK)) !=
		    (ssize_t)(n * BLOCK)) {
			fail_io("write", first);
			break;
		}
		if (owned)
			for (i = 0; i < n; i++)
				atomic_store(&last_seq[first + i], seq);
		atomic_fetch_add(&writes, 1);
	}
	free(buf);
	return NULL;
}

static void *reader(void *arg)
{
	uint64_t r = 0x85ebca6bULL * ((uintptr_t)arg + 101), first, n, i;
	uint64_t *buf = aligned(GROUP * BLOCK), *tmp = aligned(BLOCK);

	while (!atomic_load(&stop)) {
		first = rnd(&r) % nr_slots;
		n = 1 + rnd(&r) % GROUP;
		if (first + n > nr_slots)
			n = nr_slots - first;
		if (pread(fd, buf, n * BLOCK, (off_t)(first * BLOCK)) !=
		    (ssize_t)(n * BLOCK)) {
			if (!eio_ok || errno != EIO) {
				fail_io("read", first);
				break;
			}
			/* Which slots: each alone; a lost one reads as zeroes here. */
			for (i = 0; i < n; i++) {
				if (pread(fd, buf + i * (BLOCK / 8), BLOCK,
					  (off_t)((first + i) * BLOCK)) == BLOCK)
					continue;
				if (errno != EIO) {
					fail_io("read", first + i);
					break;
				}
				printf("EIO run %" PRIu64 "\n", first + i);
				atomic_fetch_add(&eio_run, 1);
				memset(buf + i * (BLOCK / 8), 0, BLOCK);
			}
			if (atomic_load(&io_error))
				break;
		}
		for (i = 0; i < n; i++) {
			const uint64_t *w = buf + i * (BLOCK / 8);

			if (!is_zero(w) && !whole_block_of(w, first + i, tmp))
				report("during run", first + i, w);
		}
		atomic_fetch_add(&reads, 1);
	}
	free(buf);
	free(tmp);
	return NULL;
}

/*----------------------------------------------------------------*/

static uint64_t owner_of(uint64_t slot)
{
	return (slot / GROUP) % nr_writers;
}

static void final_check(void)
{
	uint64_t *w = aligned(BLOCK), *tmp = aligned(BLOCK), slot, seq;

	for (slot = 0; slot < nr_slots; slot++) {
		if (pread(fd, w, BLOCK, (off_t)(slot * BLOCK)) != BLOCK) {
			if (eio_ok && errno == EIO) {
				printf("EIO end %" PRIu64 "\n", slot);
				atomic_fetch_add(&eio_end, 1);
				continue;
			}
			fail_io("final read", slot);
			break;
		}
		if (!owned) {
			if (!is_zero(w) && !whole_block_of(w, slot, tmp))
				report("at end", slot, w);
			continue;
		}
		seq = atomic_load(&last_seq[slot]);
		if (!seq ? !is_zero(w) :
		    !whole_block_of(w, slot, tmp) || w[2] != owner_of(slot) ||
		    w[3] != seq)
			report(seq ? "at end (expected last write)" :
				     "at end (expected zeroes)", slot, w);
	}
	free(w);
	free(tmp);
}

int main(int argc, char **argv)
{
	unsigned int nr_readers, seconds, i;
	pthread_t *t;

	if ((argc != 7 && argc != 8) ||
	    (strcmp(argv[6], "owned") && strcmp(argv[6], "shared")) ||
	    (argc == 8 && strcmp(argv[7], "eio-ok"))) {
		fprintf(stderr, "usage: n2l-race <dev> <slots> <seconds> <writers> <readers> owned|shared [eio-ok]\n");
		return 2;
	}
	eio_ok = argc == 8;
	nr_slots = strtoull(argv[2], NULL, 0);
	seconds = (unsigned int)atoi(argv[3]);
	nr_writers = (unsigned int)atoi(argv[4]);
	nr_readers = (unsigned int)atoi(argv[5]);
	owned = !strcmp(argv[6], "owned");
	if (nr_slots < GROUP * 2 || nr_slots % GROUP || !nr_writers ||
	    nr_slots / GROUP < nr_writers) {
		fprintf(stderr, "n2l-race: need a multiple of %u slots, at least one group per writer\n",
			GROUP);
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_DIRECT);
	if (fd < 0) {
		perror(argv[1]);
		return 2;
	}
	last_seq = calloc(nr_slots, sizeof(*last_seq));
	t = calloc(nr_writers + nr_readers, sizeof(*t));
	if (!last_seq || !t)
		return 2;

	signal(SIGUSR1, on_usr1);
	for (i = 0; i < nr_writers; i++)
		pthread_create(&t[i], NULL, writer, (void *)(uintptr_t)i);
	for (i = 0; i < nr_readers; i++)
		pthread_create(&t[nr_writers + i], NULL, reader, (void *)(uintptr_t)i);
	for (i = 0; i < seconds * 10 && !atomic_load(&stop); i++)
		usleep(100000);
	atomic_store(&stop, 1);
	for (i = 0; i < nr_writers + nr_readers; i++)
		pthread_join(t[i], NULL);
	if (!atomic_load(&io_error))
		final_check();

	printf("writes %lu reads %lu discards %lu wrong %lu",
	       atomic_load(&writes), atomic_load(&reads),
	       atomic_load(&discards), atomic_load(&wrong));
	if (eio_ok)
		printf(" eio_run %lu eio_end %lu", atomic_load(&eio_run),
		       atomic_load(&eio_end));
	printf("\n");
	free(t);
	free(last_seq);
	close(fd);
	if (atomic_load(&io_error))
		return 2;
	return atomic_load(&wrong) ? 1 : 0;
}
