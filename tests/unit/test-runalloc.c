// SPDX-License-Identifier: GPL-2.0-only
#include "runalloc.h"
#include "unit.h"

static u32 get(struct runalloc *ra, u32 want, u32 *start)
{
	n2l_blk_t b = to_blk(~0U);
	u32 n = runalloc_get(ra, want, &b);

	*start = from_blk(b);
	return n;
}

TEST(runalloc_empty_medium_gives_nothing)
{
	struct runalloc ra;
	u32 s;

	CHECK_EQ(runalloc_init(&ra, 0), 0);
	CHECK_EQ(get(&ra, 1, &s), 0);
	CHECK_EQ(runalloc_free(&ra), 0);
	runalloc_exit(&ra);
}

TEST(runalloc_consecutive_runs_are_adjacent)
{
	struct runalloc ra;
	u32 s;

	runalloc_init(&ra, 100);
	CHECK_EQ(get(&ra, 4, &s), 4);
	CHECK_EQ(s, 0);
	CHECK_EQ(get(&ra, 10, &s), 10);
	CHECK_EQ(s, 4);
	CHECK_EQ(runalloc_free(&ra), 86);
	runalloc_exit(&ra);
}

TEST(runalloc_full_medium_refuses)
{
	struct runalloc ra;
	u32 s;

	runalloc_init(&ra, 70);
	CHECK_EQ(get(&ra, 64, &s), 64);
	CHECK_EQ(get(&ra, 64, &s), 6);
	CHECK_EQ(s, 64);
	CHECK_EQ(get(&ra, 1, &s), 0);
	CHECK_EQ(runalloc_free(&ra), 0);
	runalloc_exit(&ra);
}

TEST(runalloc_wraps_to_freed_space)
{
	struct runalloc ra;
	u32 s;

	runalloc_init(&ra, 16);
	CHECK_EQ(get(&ra, 16, &s), 16);
	runalloc_put(&ra, to_blk(2), 3);
	CHECK_EQ(get(&ra, 8, &s), 3);
	CHECK_EQ(s, 2);
	runalloc_exit(&ra);
}

TEST(runalloc_skips_small_holes_for_a_fitting_one)
{
	struct runalloc ra;
	u32 s;

	runalloc_init(&ra, 200);
	CHECK_EQ(get(&ra, 200, &s), 200);
	runalloc_put(&ra, to_blk(10), 1);	/* hole of 1 */
	runalloc_put(&ra, to_blk(20), 2);	/* hole of 2 */
	runalloc_put(&ra, to_blk(100), 50);	/* hole of 50 */
	/* cursor is at 0 after the full allocation wrapped */
	CHECK_EQ(get(&ra, 8, &s), 8);
	CHECK_EQ(s, 100);
	CHECK_EQ(get(&ra, 1, &s), 1);
	CHECK_EQ(s, 108);
	runalloc_exit(&ra);
}

TEST(runalloc_settles_for_longest_hole)
{
	struct runalloc ra;
	u32 s;

	runalloc_init(&ra, 64);
	CHECK_EQ(get(&ra, 64, &s), 64);
	runalloc_put(&ra, to_blk(5), 2);
	runalloc_put(&ra, to_blk(30), 3);
	runalloc_put(&ra, to_blk(50), 1);
	CHECK_EQ(get(&ra, 16, &s), 3);
	CHECK_EQ(s, 30);
	runalloc_exit(&ra);
}

TEST(runalloc_quarantine_holds_blocks_until_taken_and_put)
{
	struct runalloc ra;
	n2l_blk_t b;
	u32 s, n;

	runalloc_init(&ra, 32);
	CHECK_EQ(get(&ra, 32, &s), 32);
	runalloc_defer(&ra, 0, to_blk(4), 4);
	runalloc_defer(&ra, 0, to_blk(8), 2);	/* adjacent: one run */
	runalloc_defer(&ra, 1, to_blk(20), 1);
	CHECK_EQ(runalloc_free(&ra), 0);
	CHECK_EQ(runalloc_quarantined(&ra, 0), 6);
	CHECK_EQ(runalloc_quarantined(&ra, 1), 1);
	CHECK_EQ(get(&ra, 1, &s), 0);

	n = runalloc_take_quarantined(&ra, 0, 1024, &b);
	CHECK_EQ(n, 6);
	CHECK_EQ(from_blk(b), 4);
	CHECK_EQ(runalloc_take_quarantined(&ra, 0, 1024, &b), 0);
	CHECK_EQ(runalloc_free(&ra), 0);	/* taken, not yet put */
	runalloc_put(&ra, b, n);
	CHECK_EQ(runalloc_free(&ra), 6);
	CHECK_EQ(runalloc_quarantined(&ra, 1), 1);
	runalloc_exit(&ra);
}

TEST(runalloc_quarantine_runs_respect_max_len)
{
	struct runalloc ra;
	n2l_blk_t b;
	u32 s;

	runalloc_init(&ra, 100);
	CHECK_EQ(get(&ra, 100, &s), 100);
	runalloc_defer(&ra, 1, to_blk(10), 25);
	CHECK_EQ(runalloc_take_quarantined(&ra, 1, 10, &b), 10);
	CHECK_EQ(from_blk(b), 10);
	CHECK_EQ(runalloc_take_quarantined(&ra, 1, 10, &b), 10);
	CHECK_EQ(from_blk(b), 20);
	CHECK_EQ(runalloc_take_quarantined(&ra, 1, 10, &b), 5);
	CHECK_EQ(from_blk(b), 30);
	CHECK_EQ(runalloc_quarantined(&ra, 1), 0);
	runalloc_exit(&ra);
}

/* Random operations against a plain array: no block is handed out twice. */
TEST(runalloc_model_check)
{
	enum { N = 1000 };
	static char state[N];	/* 0 free, 1 allocated, 2 quarantined */
	struct runalloc ra;
	unsigned int seed = 12345, op, i;
	u32 s, n, j, used;
	n2l_blk_t b;

	runalloc_init(&ra, N);
	for (op = 0; op < 200000; op++) {
		unsigned int r = rand_r(&seed);

		switch (r % 4) {
		case 0:
		case 1:
			n = get(&ra, 1 + r % 37, &s);
			for (j = 0; j < n; j++) {
				CHECK(state[s + j] == 0);
				state[s + j] = 1;
			}
			break;
		case 2:
			i = rand_r(&seed) % N;
			if (state[i] == 1) {
				if (r & 8) {
					runalloc_put(&ra, to_blk(i), 1);
					state[i] = 0;
				} else {
					runalloc_defer(&ra, (r >> 5) & 1, to_blk(i), 1);
					state[i] = 2;
				}
			}
			break;
		case 3:
			n = runalloc_take_quarantined(&ra, (r >> 5) & 1, 16, &b);
			for (j = 0; j < n; j++) {
				CHECK(state[from_blk(b) + j] == 2);
				state[from_blk(b) + j] = 0;
			}
			if (n)
				runalloc_put(&ra, b, n);
			break;
		}
	}
	for (used = 0, i = 0; i < N; i++)
		used += state[i] != 0;
	CHECK_EQ(ra.nr_used, used);
	runalloc_exit(&ra);
}

/* A loaded map takes the blocks it names, each once. */
TEST(runalloc_take_refuses_a_block_taken_or_beyond_the_medium)
{
	struct runalloc ra;
	n2l_blk_t b;

	CHECK_EQ(runalloc_init(&ra, 8), 0);
	CHECK(runalloc_take(&ra, to_blk(3)));
	CHECK(!runalloc_take(&ra, to_blk(3)));
	CHECK(!runalloc_take(&ra, to_blk(8)));
	CHECK_EQ(runalloc_free(&ra), 7);
	CHECK_EQ(runalloc_get(&ra, 4, &b), 4);	/* the hole after block 3 */
	CHECK_EQ(from_blk(b), 4);
	CHECK_EQ(runalloc_get(&ra, 4, &b), 3);	/* and the one before */
	CHECK_EQ(from_blk(b), 0);
	CHECK_EQ(runalloc_get(&ra, 1, &b), 0);
	runalloc_exit(&ra);
}
