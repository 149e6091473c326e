// SPDX-License-Identifier: GPL-2.0-only
/*
 * WL4: --procs processes (fork), each running WL2's random read-check-
 * rewrite loop on a region of its own, all at once: many faults in flight
 * from independent address spaces. The processes fill their regions, line
 * up, and start their timed loops together; seconds runs from the first
 * start to the last finish. Any process that finds wrong data fails the
 * run (exit 1, with its index as process=); one that dies or cannot set
 * up fails it with exit 3.
 *
 * Footprint: F bytes (default 2 times the limit) split evenly, F / P per
 * process, plus 4 bytes a page for the versions. Each process has its own
 * seed, drawn from --seed. Result figures: pages, touches and checksum
 * summed over the processes. --corrupt-at counts the touches of process 0.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pages.h"

static const struct wl_spec wl4_spec = {
	.name = "wl4",
	.footprint = 2.0,
	.passes = 3,
	.procs = 4,
	.max_procs = 256,
	.passes_help = "random page touches, in units of each region's size",
};

struct wl4 {
	const struct wl_opts *opts;
	struct region *regions;	/* one a process, shared with the parent */
	int ready[2];		/* each process writes a byte when filled */
	int go[2];		/* closed by the parent to start them all */
};

static void make_pipe(int fds[2])
{
	if (pipe(fds))
		wl_setup_error("pipe: %s", strerror(errno));
}

/* In each process, between filling its region and the timed loop */
static void line_up(void *arg)
{
	struct wl4 *w = arg;
	char c = 0;

	/* closing at once lets the parent see EOF if a sibling died instead */
	if (write(w->ready[1], &c, 1) != 1)
		wl_setup_error("ready pipe: %s", strerror(errno));
	close(w->ready[1]);
	while (read(w->go[0], &c, 1) < 0 && errno == EINTR)
		;
}

static __noreturn void run_process(struct wl4 *w, unsigned int i)
{
	const struct wl_opts *o = w->opts;
	struct region *r = &w->regions[i];

	close(w->ready[0]);
	close(w->go[1]);
	region_map(r, region_pages(o, o->procs), wl_at(o->seed, i),
		   i ? 0 : o->corrupt_at);
	_exit(region_run(r, o->passes, true, line_up, w) ? 0 : 1);
}

static void start_all(struct wl4 *w)
{
	unsigned int i;
	ssize_t n;
	pid_t pid;
	char c;

	for (i = 0; i < w->opts->procs; i++) {
		pid = fork();
		if (pid < 0)
			wl_setup_error("fork: %s", strerror(errno));
		if (!pid)
			run_process(w, i);
	}
	close(w->ready[1]);
	close(w->go[0]);
	do
		n = read(w->ready[0], &c, 1);
	while (n > 0 || (n < 0 && errno == EINTR));
	close(w->go[1]);
}

/* Exit status 0 or 1 from every process, or the run cannot be judged */
static void wait_all(const struct wl4 *w)
{
	unsigned int i;
	int status;

	for (i = 0; i < w->opts->procs; i++) {
		if (wait(&status) < 0)
			wl_setup_error("wait: %s", strerror(errno));
		if (WIFSIGNALED(status))
			wl_setup_error("a process died of signal %d",
				       WTERMSIG(status));
		if (WEXITSTATUS(status) > 1)
			wl_setup_error("a process failed to set up");
	}
}

/* Totals over the processes, and the first process with wrong data */
static void report(const struct wl4 *w, struct wl_result *res)
{
	struct region total = { .started = w->regions[0].started };
	const struct region *r;
	unsigned int i, bad = 0;

	for (i = 0; i < w->opts->procs; i++) {
		r = &w->regions[i];
		total.pages += r->pages;
		total.touches += r->touches;
		total.checksum += r->checksum;
		if (r->started < total.started)
			total.started = r->started;
		if (r->finished > total.finished)
			total.finished = r->finished;
		if (r->reason && !total.reason) {
			total.reason = r->reason;
			total.err = r->err;
			total.version_sum = r->version_sum;
			bad = i;
		}
	}
	res->seconds = total.finished - total.started;
	region_report(&total, res);
	if (total.reason)
		wl_add(res, "process", "%u", bad);
}

int main(int argc, char **argv)
{
	struct wl_result res;
	struct wl_opts o;
	struct wl4 w = { .opts = &o };
	size_t bytes;

	wl_parse(argc, argv, &wl4_spec, &o);
	wl_result_init(&res, &o);
	region_pages(&o, o.procs);
	bytes = o.procs * sizeof(*w.regions);
	w.regions = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (w.regions == MAP_FAILED)
		wl_setup_error("mmap: %s", strerror(errno));
	make_pipe(w.ready);
	make_pipe(w.go);
	fflush(stdout);
	start_all(&w);
	wait_all(&w);
	report(&w, &res);
	return wl_report(&res);
}
