// SPDX-License-Identifier: GPL-2.0-only
/*
 * Randomised checks, meant to run under ASan/UBSan: the parser on mangled
 * lines and on random events printed as each producer prints them, and
 * the model on random event streams, against its own invariants.
 */
#include "sim-test.h"

#define FUZZ_LINES	20000
#define FUZZ_STREAMS	60
#define FUZZ_SLOTS	96

static u64 fuzz_state = 0x853c49e6748fea9bULL;

static u32 rnd(u32 n)
{
	fuzz_state ^= fuzz_state << 13;
	fuzz_state ^= fuzz_state >> 7;
	fuzz_state ^= fuzz_state << 17;
	return n ? (u32)(fuzz_state % n) : 0;
}

static const char *const seeds[] = {
	"  n2l-pattern-123 [000] ..... 1234.567890: nswap2l_write: dev=254:0 slot=0 nr=256 medium=netram",
	"n2l-pattern-4711 [001]  5631.123456789: nswap2l_read:  dev=254:1 slot=77 nr=3 medium=flash",
	"n2l-pattern 4711 [002] 5631.123456: nswap2l:nswap2l_migrate: dev=254:0 slot=512 nr=256 moved=255 from=netram to=flash",
	"kworker/u8:3-1234 [003] d..2. 99.000001: nswap2l_free: dev=253:17 slot=4294967040 nr=256 medium=none",
};

static void mangle(char *s, size_t cap)
{
	static const char noise[] = "0123456789:=. -x\t\xff";
	size_t len = strlen(s), at;

	switch (rnd(4)) {
	case 0:		/* overwrite a byte */
		if (len)
			s[rnd((u32)len)] = rnd(2) ? noise[rnd(sizeof(noise) - 1)] :
					   (char)(rnd(255) + 1);
		break;
	case 1:		/* truncate */
		s[rnd((u32)len + 1)] = '\0';
		break;
	case 2:		/* insert digits: overflow */
		at = rnd((u32)len + 1);
		if (len + 12 < cap) {
			memmove(s + at + 11, s + at, len - at + 1);
			memcpy(s + at, "99999999999", 11);
		}
		break;
	default:	/* drop a byte */
		if (len) {
			at = rnd((u32)len);
			memmove(s + at, s + at + 1, len - at);
		}
	}
}

TEST(fuzz_parser_on_mangled_lines)
{
	char line[512];
	struct sim_event ev;
	const char *why;
	unsigned int i, j, n[3] = { 0 };
	enum sim_line r;

	for (i = 0; i < FUZZ_LINES; i++) {
		snprintf(line, sizeof(line), "%s", seeds[rnd(ARRAY_SIZE(seeds))]);
		for (j = rnd(4) + 1; j; j--)
			mangle(line, sizeof(line));
		why = NULL;
		r = sim_parse_line(line, &ev, &why);
		n[r]++;
		CHECK((r == SIM_LINE_BAD) == (why != NULL));
		if (r != SIM_LINE_EVENT)
			continue;
		CHECK((u64)ev.slot + ev.nr <= (u64)U32_MAX + 1);
		CHECK(ev.moved <= ev.nr);
		CHECK(ev.medium < N2L_NR_MEDIA && ev.from < N2L_NR_MEDIA &&
		      ev.to < N2L_NR_MEDIA);
	}
	/* the mangling produced all three outcomes */
	CHECK(n[SIM_LINE_OTHER] && n[SIM_LINE_EVENT] && n[SIM_LINE_BAD]);
}

/* A random event, printed as tracefs, trace-cmd or perf script would. */
static void print_event(char *buf, size_t len, const struct sim_event *ev,
			unsigned int producer)
{
	static const char *const names[] = {
		"write", "read", "free", "migrate"
	};
	static const char *const heads[] = {
		"  n2l-pattern-%u [%03u] d..1. %llu.%06llu: ",
		"n2l-pattern-%u  [%03u]  %llu.%06llu: ",
		"n2l-pattern %u [%03u] %llu.%06llu: nswap2l:",
	};
	unsigned long long us = ev->ns / 1000;
	int n;

	n = snprintf(buf, len, heads[producer], rnd(99999), rnd(64),
		     us / 1000000, us % 1000000);
	n += snprintf(buf + n, len - n, "nswap2l_%s: dev=%u:%u slot=%u nr=%u ",
		      names[ev->type], ev->dev.major, ev->dev.minor, ev->slot,
		      ev->nr);
	if (ev->type == SIM_EV_MIGRATE)
		snprintf(buf + n, len - n, "moved=%u from=%s to=%s", ev->moved,
			 n2l_medium_name(ev->from), n2l_medium_name(ev->to));
	else
		snprintf(buf + n, len - n, "medium=%s", n2l_medium_name(ev->medium));
}

TEST(fuzz_parser_reads_back_what_producers_print)
{
	struct sim_event ev, got;
	const char *why;
	char line[512];
	unsigned int i;

	for (i = 0; i < FUZZ_LINES; i++) {
		memset(&ev, 0, sizeof(ev));
		ev.ns = ((u64)rnd(4000000) * 1000000 + rnd(1000000)) * 1000;
		ev.type = (u8)rnd(4);
		ev.dev.major = rnd(2) ? 254 : U32_MAX;
		ev.dev.minor = rnd(1U << 20);
		ev.nr = rnd(300);
		ev.slot = rnd(2) ? rnd(1000) : U32_MAX - ev.nr + 1;
		if (ev.type == SIM_EV_MIGRATE) {
			ev.moved = rnd(ev.nr + 1);
			ev.from = (u8)rnd(N2L_NR_MEDIA);
			ev.to = (u8)rnd(N2L_NR_MEDIA);
		} else {
			ev.medium = (u8)rnd(N2L_NR_MEDIA);
		}
		print_event(line, sizeof(line), &ev, rnd(3));
		CHECK_EQ(sim_parse_line(line, &got, &why), SIM_LINE_EVENT);
		if (memcmp(&ev, &got, sizeof(ev))) {
			fprintf(stderr, "  read back differently: %s\n", line);
			unit_failed_checks++;
			return;
		}
	}
}

/* What the model's counters must agree with, whatever happened. */
static void check_model(const struct sim_model *m, u64 read_slots,
			u64 write_slots)
{
	u32 held[N2L_NR_MEDIA] = { 0 }, marked = 0, i;
	enum n2l_medium md;
	u64 reads = 0, writes = m->c.nospc;

	for (i = 0; i < m->nr_slots; i++) {
		held[m->map[i].medium]++;
		marked += m->map[i].prefetched;
		CHECK(!m->map[i].prefetched || m->map[i].medium == N2L_FLASH);
	}
	for_each_medium(md) {
		CHECK_EQ(held[md], m->held[md]);
		CHECK(m->held[md] <= m->cap[md]);
		writes += m->c.writes[md];
	}
	for (md = N2L_NONE; md <= N2L_DISK; md++)
		reads += m->c.reads[md];
	CHECK_EQ(reads, read_slots);
	CHECK_EQ(writes, write_slots);
	CHECK(m->c.hits + marked <= m->c.prefetched);
}

static void fuzz_stream(const char *policy)
{
	u64 caps[] = { 0, 1, 7, 40, SIM_UNLIMITED };
	u64 read_slots = 0, write_slots = 0;
	struct sim_model m;
	u32 i, op, slot, nr;

	model_open(&m, FUZZ_SLOTS, caps[rnd(4) + 1], caps[rnd(5)], policy);
	m.cap[N2L_DISK] = (u32)min_t(u64, caps[rnd(5)], FUZZ_SLOTS);
	m.knobs.amount_mode = rnd(3);
	m.knobs.amount = m.knobs.amount_mode == SIM_AMOUNT_FIXED ? rnd(60) :
			 rnd(101);
	for (i = 0; i < 3000; i++) {
		op = rnd(10);
		slot = rnd(FUZZ_SLOTS);
		nr = rnd(min(FUZZ_SLOTS - slot, 20U) + 1);
		if (op < 5) {
			sim_write(&m, slot, nr);
			write_slots += nr;
		} else if (op < 8) {
			sim_read(&m, slot, nr);
			read_slots += nr;
		} else if (op < 9) {
			sim_free(&m, slot, nr);
		} else {
			sim_mig_tick(&m);
		}
	}
	check_model(&m, read_slots, write_slots);
	if (!strcmp(policy, "none"))
		CHECK_EQ(m.c.prefetched, 0);
	model_close(&m);
}

TEST(fuzz_model_keeps_its_invariants)
{
	static const char *const policies[] = {
		"none", "rr", "random", "lrs", "mrs"
	};
	unsigned int i;

	for (i = 0; i < FUZZ_STREAMS; i++)
		fuzz_stream(policies[i % ARRAY_SIZE(policies)]);
}
