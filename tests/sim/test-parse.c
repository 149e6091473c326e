// SPDX-License-Identifier: GPL-2.0-only
/*
 * The trace parser: lines as tracefs, trace-cmd and perf print them, the
 * lines that are not ours, and lines that look like ours but are broken.
 */
#include "sim-test.h"

static enum sim_line parse(const char *line, struct sim_event *ev)
{
	const char *why = NULL;
	enum sim_line r = sim_parse_line(line, ev, &why);

	CHECK((r == SIM_LINE_BAD) == (why != NULL));
	return r;
}

static void check_bad(const char *line)
{
	struct sim_event ev;

	if (parse(line, &ev) != SIM_LINE_BAD) {
		fprintf(stderr, "  not rejected: %s\n", line);
		unit_failed_checks++;
	}
}

#define EV(t, sec, frac, maj, mi, s, n, mv, m, f, to_)			\
	{ .ns = (sec) * 1000000000ULL + (frac), .dev = { maj, mi },	\
	  .slot = s, .nr = n, .moved = mv, .type = t, .medium = m,	\
	  .from = f, .to = to_ }

/* Lines as each producer prints them, and the events they are. */
static const struct {
	const char *line;
	struct sim_event ev;
} good_lines[] = {
	/* tracefs trace */
	{ "  n2l-pattern-123 [000] ..... 1234.567890: nswap2l_write: dev=254:0 slot=0 nr=256 medium=netram",
	  EV(SIM_EV_WRITE, 1234, 567890000, 254, 0, 0, 256, 0, N2L_NETRAM, 0, 0) },
	/* trace_pipe, with irq flags, a worker's name and the last run */
	{ "kworker/u8:3-1234    [003] d..2. 99.000001: nswap2l_free: dev=253:17 slot=4294967040 nr=256 medium=none",
	  EV(SIM_EV_FREE, 99, 1000, 253, 17, 4294967040U, 256, 0, N2L_NONE, 0, 0) },
	/* trace-cmd report, nanoseconds, padded fields */
	{ "     n2l-pattern-4711  [001]  5631.123456789: nswap2l_read:         dev=254:1 slot=77 nr=3 medium=flash",
	  EV(SIM_EV_READ, 5631, 123456789, 254, 1, 77, 3, 0, N2L_FLASH, 0, 0) },
	/* perf script, the system before the event */
	{ "     n2l-pattern  4711 [002]  5631.123456: nswap2l:nswap2l_migrate: dev=254:0 slot=512 nr=256 moved=255 from=netram to=flash",
	  EV(SIM_EV_MIGRATE, 5631, 123456000, 254, 0, 512, 256, 255, 0, N2L_NETRAM, N2L_FLASH) },
	/* perf script -F+period: a sample count before the event */
	{ "n2l-pattern 4711 [002] 7.5:          1 nswap2l:nswap2l_write: dev=8:0 slot=1 nr=1 medium=disk",
	  EV(SIM_EV_WRITE, 7, 500000000, 8, 0, 1, 1, 0, N2L_DISK, 0, 0) },
};

TEST(parse_lines_of_every_producer)
{
	struct sim_event ev;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(good_lines); i++) {
		CHECK_EQ(parse(good_lines[i].line, &ev), SIM_LINE_EVENT);
		if (memcmp(&ev, &good_lines[i].ev, sizeof(ev))) {
			fprintf(stderr, "  parsed wrong: %s\n", good_lines[i].line);
			unit_failed_checks++;
		}
	}
}

TEST(parse_ignores_lines_that_are_not_ours)
{
	struct sim_event ev;

	CHECK_EQ(parse("", &ev), SIM_LINE_OTHER);
	CHECK_EQ(parse("# tracer: nop", &ev), SIM_LINE_OTHER);
	CHECK_EQ(parse("#  n2l-pattern-1 [000] 1.0: nswap2l_write: dev=1:2", &ev),
		 SIM_LINE_OTHER);
	CHECK_EQ(parse("cpus=4", &ev), SIM_LINE_OTHER);
	CHECK_EQ(parse("  bash-1 [000] ..... 1.000: sched_switch: prev_comm=bash", &ev),
		 SIM_LINE_OTHER);
	/* other events of the system, and names that only start like ours */
	CHECK_EQ(parse("  x-1 [000] ..... 1.0: nswap2l_netram_put: dev=1:2 slot=1", &ev),
		 SIM_LINE_OTHER);
	CHECK_EQ(parse("  x-1 [000] ..... 1.0: nswap2l_writes: dev=1:2", &ev),
		 SIM_LINE_OTHER);
	CHECK_EQ(parse("  x-1 [000] ..... 1.0: mynswap2l_write: dev=1:2", &ev),
		 SIM_LINE_OTHER);
}

TEST(parse_rejects_truncated_lines)
{
	check_bad("  n2l-1 [000] ..... 1.000000: nswap2l_write: dev=254:0 slot=0 nr=256");
	check_bad("  n2l-1 [000] ..... 1.000000: nswap2l_write: dev=254:0 slot=0 nr=256 medium=");
	check_bad("  n2l-1 [000] ..... 1.000000: nswap2l_write: dev=254:0 slot=0 nr=2 medium=netr");
	check_bad("  n2l-1 [000] ..... 1.000000: nswap2l_write:");
	check_bad("  n2l-1 [000] ..... 1.000000: nswap2l_write");
	check_bad("  n2l-1 [000] ..... 1.000000: nswap2l_migrate: dev=254:0 slot=0 nr=2 moved=2 from=netram");
	check_bad("nswap2l_read: dev=254:0 slot=0 nr=1 medium=flash");
	check_bad("  n2l-1 [000] ..... : nswap2l_read: dev=254:0 slot=0 nr=1 medium=flash");
	check_bad("  n2l-1 [000] ..... 1.000000 nswap2l_read: dev=254:0 slot=0 nr=1 medium=flash");
	check_bad("  n2l-1 [000] ..... 1.: nswap2l_read: dev=254:0 slot=0 nr=1 medium=flash");
}

TEST(parse_rejects_bad_numbers)
{
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=4294967296 nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=99999999999999999999999 nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=-1 nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=+1 nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=0x10 nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=12abc nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot= nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254 slot=1 nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0:1 slot=1 nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=4294967296:0 slot=1 nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=1 nr=1 medium=4");
	/* the run must end within 2^32 slots; moved at most nr */
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=4294967295 nr=2 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_migrate: dev=254:0 slot=0 nr=2 moved=3 from=netram to=flash");
	/* a timestamp past 2^64 ns, or not a number */
	check_bad("x-1 [000] 18446744074.0: nswap2l_read: dev=254:0 slot=1 nr=1 medium=flash");
	check_bad("x-1 [000] 1e3: nswap2l_read: dev=254:0 slot=1 nr=1 medium=flash");
	check_bad("x-1 [000] 1.2.3: nswap2l_read: dev=254:0 slot=1 nr=1 medium=flash");
}

TEST(parse_rejects_unknown_and_repeated_fields)
{
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=1 nr=1 medium=flash extra=1");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=1 slot=2 nr=1 medium=flash");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=1 nr=1 medium=flash junk");
	check_bad("x-1 [000] 1.0: nswap2l_read: [FAILED TO PARSE] dev=265289728 slot=1 nr=1 medium=2");
	check_bad("x-1 [000] 1.0: nswap2l_read: dev=254:0 slot=1 nr=1 moved=1 medium=flash");
}

TEST(parse_accepts_edge_values)
{
	struct sim_event ev;

	CHECK_EQ(parse("x-1 [000] 18446744072.999999999: nswap2l_read: dev=4294967295:4294967295 slot=4294967295 nr=1 medium=disk",
		       &ev), SIM_LINE_EVENT);
	CHECK_EQ(ev.ns, 18446744072999999999ULL);
	CHECK_EQ(ev.dev.major, U32_MAX);
	CHECK_EQ(ev.slot, U32_MAX);
	/* digits past the nanosecond are dropped, an integer clock is seconds */
	CHECK_EQ(parse("x-1 [000] 2.1234567899: nswap2l_free: dev=1:1 slot=0 nr=0 medium=none",
		       &ev), SIM_LINE_EVENT);
	CHECK_EQ(ev.ns, 2123456789ULL);
	CHECK_EQ(parse("x-1 [000] 42: nswap2l_free: dev=1:1 slot=0 nr=0 medium=none",
		       &ev), SIM_LINE_EVENT);
	CHECK_EQ(ev.ns, 42000000000ULL);
	CHECK_EQ(parse("x-1 [000] 1.5: nswap2l_write: dev=1:1 slot=0 nr=1 medium=netram\r",
		       &ev), SIM_LINE_EVENT);
}

TEST(parse_numbers)
{
	u64 v;
	u32 w;

	CHECK_EQ(sim_parse_u64("18446744073709551615", 20, UINT64_MAX, &v), 0);
	CHECK(v == UINT64_MAX);
	CHECK_EQ(sim_parse_u64("18446744073709551616", 20, UINT64_MAX, &v), -ERANGE);
	CHECK_EQ(sim_parse_u64("101", 3, 100, &v), -ERANGE);
	CHECK_EQ(sim_parse_u64("100", 3, 100, &v), 0);
	CHECK_EQ(sim_parse_u64("7", 1, 5, &v), -ERANGE);
	CHECK_EQ(sim_parse_u64("", 0, 5, &v), -EINVAL);
	CHECK_EQ(sim_parse_u64(" 1", 2, 5, &v), -EINVAL);
	CHECK_EQ(sim_parse_u32("4294967295", 10, &w), 0);
	CHECK_EQ(w, U32_MAX);
	CHECK_EQ(sim_parse_u32("4294967296", 10, &w), -ERANGE);
	CHECK_EQ(sim_parse_time("0.000000001", 11, &v), 0);
	CHECK_EQ(v, 1);
	CHECK_EQ(sim_parse_time(".5", 2, &v), -EINVAL);
}
