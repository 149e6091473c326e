// SPDX-License-Identifier: GPL-2.0-only
/*
 * A whole trace into memory: every nswap2l event of every device, then
 * only those of the device to replay. Kept in memory because every policy
 * replays the same events, and stdin can be read only once.
 */
#include <errno.h>
#include <sys/types.h>

#include "sim.h"

#define SIM_TOLD_BAD	5	/* malformed lines reported one by one */

static int push(struct sim_trace *t, const struct sim_event *ev)
{
	struct sim_event *grown;
	size_t cap;

	if (t->nr == t->cap) {
		cap = t->cap ? t->cap * 2 : 4096;
		grown = realloc(t->ev, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		t->ev = grown;
		t->cap = cap;
	}
	t->ev[t->nr++] = *ev;
	return 0;
}

/*
 * One C string: no newline at the end, and no NUL inside that would hide
 * the rest of a broken line from the parser.
 */
static void clean_line(char *line, ssize_t len)
{
	ssize_t i;

	while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		line[--len] = '\0';
	for (i = 0; i < len; i++)
		if (!line[i])
			line[i] = '?';
}

int sim_trace_read(struct sim_trace *t, FILE *f, const char *name)
{
	struct sim_event ev;
	const char *why;
	size_t size = 0;
	char *line = NULL;
	ssize_t len;
	int r = 0;

	while (!r && (len = getline(&line, &size, f)) >= 0) {
		t->lines++;
		clean_line(line, len);
		switch (sim_parse_line(line, &ev, &why)) {
		case SIM_LINE_EVENT:
			r = push(t, &ev);
			break;
		case SIM_LINE_BAD:
			if (t->malformed++ < SIM_TOLD_BAD)
				fprintf(stderr, "n2l-sim: %s:%llu: malformed nswap2l event ignored: %s\n",
					name, (unsigned long long)t->lines, why);
			break;
		case SIM_LINE_OTHER:
			break;
		}
	}
	free(line);
	if (!r && ferror(f))
		r = -EIO;
	return r;
}

static u64 dev_key(const struct sim_dev *d)
{
	return (u64)d->major << 32 | d->minor;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

/* Distinct devices among the events; 1 if memory is short (a note only). */
static u32 count_devices(const struct sim_trace *t)
{
	u64 *keys = malloc(t->nr * sizeof(*keys));
	size_t i;
	u32 n = 1;

	if (!keys)
		return 1;
	for (i = 0; i < t->nr; i++)
		keys[i] = dev_key(&t->ev[i].dev);
	qsort(keys, t->nr, sizeof(*keys), cmp_u64);
	for (i = 1; i < t->nr; i++)
		n += keys[i] != keys[i - 1];
	free(keys);
	return n;
}

void sim_trace_select(struct sim_trace *t, const struct sim_dev *want)
{
	size_t i, kept = 0;
	u64 key;

	t->devices = 0;
	if (want)
		t->dev = *want;
	if (!t->nr)
		return;
	t->devices = count_devices(t);
	if (!want)
		t->dev = t->ev[0].dev;
	key = dev_key(&t->dev);
	for (i = 0; i < t->nr; i++)
		if (dev_key(&t->ev[i].dev) == key)
			t->ev[kept++] = t->ev[i];
	t->nr = kept;
}

void sim_trace_free(struct sim_trace *t)
{
	free(t->ev);
	memset(t, 0, sizeof(*t));
}

u64 sim_trace_nr_slots(const struct sim_trace *t)
{
	u64 end, nr = 0;
	size_t i;

	for (i = 0; i < t->nr; i++) {
		end = (u64)t->ev[i].slot + t->ev[i].nr;
		nr = max(nr, end);
	}
	return nr;
}
