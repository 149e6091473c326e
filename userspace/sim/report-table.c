// SPDX-License-Identifier: GPL-2.0-only
/*
 * The report as a table: what was replayed and how, then a line per
 * policy. Percentages are of the slot reads that a medium served; reads
 * of slots that held no data are counted apart, as the kernel's zero
 * reads; the ratio is prefetch hits over slots prefetched.
 */
#include "sim.h"

static void print_cap(FILE *f, const char *name, u64 cap, const char *how)
{
	if (cap == SIM_UNLIMITED)
		fprintf(f, "%s unlimited", name);
	else
		fprintf(f, "%s %llu slots%s", name, (unsigned long long)cap, how);
}

static void print_amount(FILE *f, const struct sim_knobs *k)
{
	switch (k->amount_mode) {
	case SIM_AMOUNT_FIXED:
		fprintf(f, "%u slots", k->amount);
		break;
	case SIM_AMOUNT_NETRAM:
		fprintf(f, "%u%% of the slots on Network RAM", k->amount);
		break;
	default:
		fprintf(f, "%u%% of the slots written since the last run",
			k->amount);
	}
}

static void print_header(FILE *f, const struct sim_report *rep)
{
	const struct sim_config *cfg = rep->cfg;
	const struct sim_trace *t = rep->t;

	fprintf(f, "trace %s: %zu events of device %u:%u (%s; %u device%s in the trace); %llu malformed line%s ignored\n",
		rep->file, t->nr, t->dev.major, t->dev.minor,
		rep->dev_given ? "chosen with --dev" : "the first seen, --dev chooses",
		t->devices, t->devices == 1 ? "" : "s",
		(unsigned long long)t->malformed, t->malformed == 1 ? "" : "s");
	fprintf(f, "model: %u slots; ", cfg->nr_slots);
	print_cap(f, "Network RAM", cfg->cap[N2L_NETRAM],
		  rep->netram_from_trace ? " (the trace's peak)" : "");
	print_cap(f, ", Flash", cfg->cap[N2L_FLASH], "");
	print_cap(f, ", disk", cfg->cap[N2L_DISK], "");
	fprintf(f, "; placement netram-first\n");
	fprintf(f, "migration: a run every %u ms of trace time moves ",
		cfg->knobs.interval_ms);
	print_amount(f, &cfg->knobs);
	fprintf(f, "; seed %llu\n\n", (unsigned long long)cfg->seed);
}

static void print_policy(FILE *f, const struct sim_result *r)
{
	u64 served = sim_served(r);
	enum n2l_medium m;

	fprintf(f, "%-8s %10llu %10llu ", r->policy,
		(unsigned long long)r->c.prefetched, (unsigned long long)r->c.hits);
	if (r->c.prefetched)
		fprintf(f, "%8.3f", (double)r->c.hits / (double)r->c.prefetched);
	else
		fprintf(f, "%8s", "-");
	for_each_medium(m)
		fprintf(f, " %10llu %5.1f%%", (unsigned long long)r->c.reads[m],
			sim_pct(r->c.reads[m], served));
	fprintf(f, " %10llu %8llu", (unsigned long long)r->c.reads[N2L_NONE],
		(unsigned long long)r->c.nospc);
	for_each_medium(m)
		fprintf(f, " %10u", r->held[m]);
	fprintf(f, "\n");
}

void sim_print_table(FILE *f, const struct sim_report *rep)
{
	unsigned int i;

	print_header(f, rep);
	fprintf(f, "%-8s %10s %10s %8s %s %10s %8s %s\n", "", "slots",
		"prefetch", "read/",
		"--------------- slot reads served by ----------------",
		"zero", "writes", "---- slots held at the end -----");
	fprintf(f, "%-8s %10s %10s %8s %17s %17s %17s %10s %8s %10s %10s %10s\n",
		"policy", "prefetched", "hits", "prefetch", "netram", "flash",
		"disk", "reads", "no room", "netram", "flash", "disk");
	for (i = 0; i < rep->nr_res; i++)
		print_policy(f, &rep->res[i]);
}
