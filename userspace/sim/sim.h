/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * n2l-sim: replays a slot trace recorded from nswap2l's tracepoints
 * (nswap2l-trace.h) against the prefetch policies, with the module's own
 * policy code, and reports what each policy would have done.
 *
 * Glossary:
 *   event     one parsed nswap2l_write/read/free/migrate tracepoint line
 *   trace     the events of one device, in the order of the trace
 *   model     the simulated device: slot map, media capacities, the
 *             placement policy, one prefetch policy, the migration engine
 *   tick      one run of the migration worker, every interval of trace time
 *   copy      what slots written by one Network RAM PUT share (the kernel's
 *             server and version); the engine moves runs of one copy
 */
#ifndef N2L_SIM_H
#define N2L_SIM_H

#include <stdio.h>

#include "n2l-policies.h"

/* Mirrors of the kernel's limits that shape the migration engine. */
#define SIM_MIG_BATCH		256	/* N2L_MIG_BATCH: candidates per select */
#define SIM_MAX_PAGES		256	/* N2L_MAX_PAGES: slots per PUT and run */
#define SIM_DEFAULT_MAX_SLOTS	(1U << 26)	/* 256 GiB of 4 KiB slots */
#define SIM_UNLIMITED		UINT64_MAX	/* a capacity not given */

/*----------------------------------------------------------------*/
/* Numbers (num.c): strict unsigned decimal, as the kernel prints them. */

struct sim_dev {
	u32 major, minor;
};

int sim_parse_u64(const char *s, size_t len, u64 max, u64 *out);
int sim_parse_u32(const char *s, size_t len, u32 *out);
/* "<seconds>[.<fraction>]" to nanoseconds; digits past 1 ns are ignored. */
int sim_parse_time(const char *s, size_t len, u64 *ns);
int sim_parse_dev(const char *s, size_t len, struct sim_dev *dev);

/*----------------------------------------------------------------*/
/* Trace events (trace-parse.c, trace-load.c, trace-peak.c). */

enum sim_ev_type {
	SIM_EV_WRITE,
	SIM_EV_READ,
	SIM_EV_FREE,
	SIM_EV_MIGRATE,
};

struct sim_event {
	u64 ns;			/* trace time */
	struct sim_dev dev;
	u32 slot, nr;
	u32 moved;		/* migrate: how many of nr moved */
	u8 type;		/* enum sim_ev_type */
	u8 medium;		/* write, read, free: as recorded */
	u8 from, to;		/* migrate */
};

enum sim_line {
	SIM_LINE_OTHER,		/* not an nswap2l event: ignored */
	SIM_LINE_EVENT,
	SIM_LINE_BAD,		/* looks like an nswap2l event, does not parse */
};

/* One line of trace text (NUL-terminated, no newline); @why on SIM_LINE_BAD. */
enum sim_line sim_parse_line(const char *line, struct sim_event *ev,
			     const char **why);

struct sim_trace {
	struct sim_event *ev;
	size_t nr, cap;
	u64 lines;
	u64 malformed;		/* lines that looked like events but were not */
	u32 devices;		/* distinct devices seen, after sim_trace_select() */
	struct sim_dev dev;	/* the device kept */
};

/* Appends the events of @f; -errno on a read or allocation failure. */
int sim_trace_read(struct sim_trace *t, FILE *f, const char *name);
/* Keeps the events of @want, or of the first device seen if NULL. */
void sim_trace_select(struct sim_trace *t, const struct sim_dev *want);
void sim_trace_free(struct sim_trace *t);
/* One past the highest slot the trace names. */
u64 sim_trace_nr_slots(const struct sim_trace *t);
/* The most slots the trace itself shows on Network RAM at once. */
int sim_trace_netram_peak(const struct sim_trace *t, u32 nr_slots, u32 *peak);

/*----------------------------------------------------------------*/
/* The model (model.c, migrate.c, replay.c). */

enum sim_amount_mode {		/* enum n2l_amount_mode */
	SIM_AMOUNT_SWAPOUTS,
	SIM_AMOUNT_FIXED,
	SIM_AMOUNT_NETRAM,
};

struct sim_knobs {		/* struct n2l_mig_knobs */
	u32 interval_ms;
	u32 amount;
	u32 amount_mode;	/* enum sim_amount_mode */
};

struct sim_config {
	u32 nr_slots;
	u64 cap[N2L_NR_MEDIA];	/* slots per medium, or SIM_UNLIMITED */
	struct sim_knobs knobs;
	u64 seed;
};

struct sim_counts {
	u64 reads[N2L_NR_MEDIA];	/* slots read; [N2L_NONE]: zero reads */
	u64 writes[N2L_NR_MEDIA];	/* slots written, by medium placed on */
	u64 nospc;			/* slots whose write found no room */
	u64 prefetched;			/* slots moved by the engine */
	u64 hits;			/* first reads of prefetched slots */
	u64 ticks;			/* engine runs that had swap-outs */
	u64 target;			/* slots the engine's runs set out to move */
	u64 activations;		/* engine runs that had slots to move */
	u64 room_target;		/* of the target, to make room */
};

struct sim_result {
	const char *policy;
	struct sim_counts c;
	u32 held[N2L_NR_MEDIA];		/* at the end of the trace */
};

struct sim_slot {
	u32 copy;		/* Network RAM copy, for grouping runs */
	u8 medium;		/* enum n2l_medium */
	u8 prefetched;		/* SME_PREFETCHED: moved here, not read yet */
};

struct sim_run {		/* struct n2l_mig_run */
	u32 first, nr, copy;
};

struct sim_model {
	struct sim_slot *map;
	u32 nr_slots;
	u32 cap[N2L_NR_MEDIA];
	u32 held[N2L_NR_MEDIA];
	u32 next_copy;
	u64 swapouts;			/* slots written since the last tick */
	u64 seen_prefetched, seen_hits;	/* at the last tick, for plan() */
	struct sim_knobs knobs;
	struct n2l_placement *place;
	struct n2l_prefetch *pf;
	struct sim_counts c;
	n2l_slot_t victims[SIM_MIG_BATCH];
	struct sim_run runs[SIM_MIG_BATCH];
};

int sim_model_init(struct sim_model *m, const struct sim_config *cfg,
		   struct n2l_prefetch_type *pf);
void sim_model_exit(struct sim_model *m);
void sim_write(struct sim_model *m, u32 slot, u32 nr);
void sim_read(struct sim_model *m, u32 slot, u32 nr);
void sim_free(struct sim_model *m, u32 slot, u32 nr);
u32 sim_room(const struct sim_model *m, enum n2l_medium md);
void sim_remap(struct sim_model *m, u32 slot, enum n2l_medium md, u32 copy,
	       bool prefetched);

/* The migration worker's run: mig_work() without the rescheduling. */
void sim_mig_tick(struct sim_model *m);
u64 sim_mig_amount(const struct sim_model *m, u64 swapouts);

/* Replays @t against @pf; -ENOMEM, or -ENOENT if no placement policy. */
int sim_replay(const struct sim_trace *t, const struct sim_config *cfg,
	       struct n2l_prefetch_type *pf, struct sim_result *res);

/*----------------------------------------------------------------*/
/* The command line (options.c) and the report (report*.c). */

enum sim_opts_result {
	SIM_OPTS_RUN,
	SIM_OPTS_HELP,		/* usage printed on stdout */
	SIM_OPTS_BAD,		/* what is wrong printed on stderr */
};

struct sim_opts {
	const char *path;		/* "-": stdin */
	bool dev_given;
	struct sim_dev dev;
	const char **policies;		/* as registered; all if none named */
	unsigned int nr_policies;
	u64 cap[N2L_NR_MEDIA];		/* SIM_UNLIMITED: not given */
	struct sim_knobs knobs;
	u64 seed;
	u64 max_slots;
	bool json;
};

/* Call with the policies registered: the usage text lists them. */
enum sim_opts_result sim_parse_options(int argc, char **argv,
				       struct sim_opts *o);
void sim_opts_free(struct sim_opts *o);

struct sim_report {
	const char *file;
	const struct sim_trace *t;
	const struct sim_config *cfg;
	bool dev_given;
	bool netram_from_trace;
	const struct sim_result *res;
	unsigned int nr_res;
};

extern const char *const sim_amount_modes[];
u64 sim_served(const struct sim_result *r);
double sim_pct(u64 n, u64 total);
void sim_print_table(FILE *f, const struct sim_report *rep);
void sim_print_json(FILE *f, const struct sim_report *rep);

#endif /* N2L_SIM_H */
