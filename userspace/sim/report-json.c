// SPDX-License-Identifier: GPL-2.0-only
/*
 * The report as one JSON object: "trace" (what was read), "model" (how it
 * was replayed; null capacities are unlimited) and "policies", an object
 * with one member per policy, in the order they ran.
 */
#include "sim.h"

static void json_string(FILE *f, const char *s)
{
	unsigned char c;

	fputc('"', f);
	for (; (c = (unsigned char)*s); s++) {
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_cap(FILE *f, const char *key, u64 cap)
{
	if (cap == SIM_UNLIMITED)
		fprintf(f, ",\"%s\":null", key);
	else
		fprintf(f, ",\"%s\":%llu", key, (unsigned long long)cap);
}

/* "key":{"netram":..,"flash":..,"disk":..} of per-medium counts. */
static void json_media(FILE *f, const char *key, const u64 *v)
{
	enum n2l_medium m;

	fprintf(f, ",\"%s\":{", key);
	for_each_medium(m)
		fprintf(f, "%s\"%s\":%llu", m == N2L_NETRAM ? "" : ",",
			n2l_medium_name(m), (unsigned long long)v[m]);
	fputc('}', f);
}

static void json_trace(FILE *f, const struct sim_report *rep)
{
	const struct sim_trace *t = rep->t;

	fprintf(f, "\"trace\":{\"file\":");
	json_string(f, rep->file);
	fprintf(f, ",\"device\":\"%u:%u\",\"device_from\":\"%s\",\"devices\":%u,\"events\":%zu,\"lines\":%llu,\"malformed\":%llu}",
		t->dev.major, t->dev.minor, rep->dev_given ? "option" : "first seen",
		t->devices, t->nr, (unsigned long long)t->lines,
		(unsigned long long)t->malformed);
}

static void json_model(FILE *f, const struct sim_report *rep)
{
	const struct sim_config *cfg = rep->cfg;

	fprintf(f, ",\"model\":{\"slots\":%u", cfg->nr_slots);
	json_cap(f, "netram_slots", cfg->cap[N2L_NETRAM]);
	fprintf(f, ",\"netram_from_trace\":%s",
		rep->netram_from_trace ? "true" : "false");
	json_cap(f, "flash_slots", cfg->cap[N2L_FLASH]);
	json_cap(f, "disk_slots", cfg->cap[N2L_DISK]);
	fprintf(f, ",\"placement\":\"netram-first\",\"interval_ms\":%u,\"amount_mode\":\"%s\",\"amount\":%u,\"seed\":%llu}",
		cfg->knobs.interval_ms, sim_amount_modes[cfg->knobs.amount_mode],
		cfg->knobs.amount, (unsigned long long)cfg->seed);
}

static void json_policy(FILE *f, const struct sim_result *r)
{
	u64 served = sim_served(r), held[N2L_NR_MEDIA];
	enum n2l_medium m;

	json_string(f, r->policy);
	fprintf(f, ":{\"prefetched\":%llu,\"prefetch_hits\":%llu,\"read_prefetch_ratio\":",
		(unsigned long long)r->c.prefetched, (unsigned long long)r->c.hits);
	if (r->c.prefetched)
		fprintf(f, "%.6f", (double)r->c.hits / (double)r->c.prefetched);
	else
		fprintf(f, "null");
	json_media(f, "reads", r->c.reads);
	fprintf(f, ",\"read_pct\":{");
	for_each_medium(m)
		fprintf(f, "%s\"%s\":%.3f", m == N2L_NETRAM ? "" : ",",
			n2l_medium_name(m), sim_pct(r->c.reads[m], served));
	fprintf(f, "},\"zero_reads\":%llu", (unsigned long long)r->c.reads[N2L_NONE]);
	json_media(f, "writes", r->c.writes);
	fprintf(f, ",\"nospc_writes\":%llu,\"migration_runs\":%llu",
		(unsigned long long)r->c.nospc, (unsigned long long)r->c.ticks);
	fprintf(f, ",\"prefetch_target\":%llu,\"prefetch_activations\":%llu",
		(unsigned long long)r->c.target,
		(unsigned long long)r->c.activations);
	fprintf(f, ",\"prefetch_room_target\":%llu",
		(unsigned long long)r->c.room_target);
	for_each_medium(m)
		held[m] = r->held[m];
	json_media(f, "held", held);
	fputc('}', f);
}

void sim_print_json(FILE *f, const struct sim_report *rep)
{
	unsigned int i;

	fputc('{', f);
	json_trace(f, rep);
	json_model(f, rep);
	fprintf(f, ",\"policies\":{");
	for (i = 0; i < rep->nr_res; i++) {
		if (i)
			fputc(',', f);
		json_policy(f, &rep->res[i]);
	}
	fprintf(f, "}}\n");
}
