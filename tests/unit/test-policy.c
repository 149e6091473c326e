// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>
#include "n2l-policies.h"
#include "unit.h"

static void setup(void)
{
	static int done;

	if (!done) {
		CHECK_EQ(n2l_builtin_policies_register(), 0);
		done = 1;
	}
}

TEST(registry_finds_by_name_and_default)
{
	struct n2l_policy_type *t;

	setup();
	t = n2l_policy_get(N2L_POLICY_PLACEMENT, "netram-first");
	CHECK(t == &n2l_placement_netram_first.base);
	n2l_policy_put(t);
	t = n2l_policy_get(N2L_POLICY_PLACEMENT, "default");
	CHECK(t == &n2l_placement_netram_first.base);
	CHECK(!n2l_policy_get(N2L_POLICY_PLACEMENT, "no-such-policy"));
	/* names are per kind */
	CHECK(!n2l_policy_get(N2L_POLICY_PREFETCH, "netram-first"));
}

TEST(registry_refuses_duplicate_names)
{
	setup();
	CHECK_EQ(n2l_policy_register(&n2l_placement_netram_first.base), -EEXIST);
}

TEST(registry_lists_choices_with_selected_in_brackets)
{
	static struct n2l_placement_type other = {
		.base = { .name = "aaa-test", .kind = N2L_POLICY_PLACEMENT },
	};
	char buf[128];

	setup();
	n2l_policy_names(N2L_POLICY_PLACEMENT, "netram-first", buf, sizeof(buf));
	CHECK(!strcmp(buf, "[netram-first]\n"));
	CHECK_EQ(n2l_policy_register(&other.base), 0);
	n2l_policy_names(N2L_POLICY_PLACEMENT, "netram-first", buf, sizeof(buf));
	CHECK(!strcmp(buf, "aaa-test [netram-first]\n"));
	n2l_policy_names(N2L_POLICY_PLACEMENT, "aaa-test", buf, sizeof(buf));
	CHECK(!strcmp(buf, "[aaa-test] netram-first\n"));
	/* a short buffer is cut, never overrun */
	CHECK_EQ(n2l_policy_names(N2L_POLICY_PLACEMENT, "x", buf, 5), 4);
	CHECK_EQ(strlen(buf), 4);
	n2l_policy_unregister(&other.base);
}

static enum n2l_medium place(enum n2l_medium now, u32 netram, u32 flash,
			     u32 disk)
{
	struct n2l_placement *p = n2l_placement_netram_first.create();
	struct n2l_place_ctx ctx = {
		.now = now,
		.free = { 0, netram, flash, disk },
	};
	enum n2l_medium m;

	p->type = &n2l_placement_netram_first;
	m = p->type->place(p, &ctx);
	p->type->destroy(p);
	return m;
}

TEST(netram_first_prefers_fastest_medium_with_room)
{
	CHECK_EQ(place(N2L_NONE, 5, 5, 5), N2L_NETRAM);
	CHECK_EQ(place(N2L_NONE, 0, 5, 5), N2L_FLASH);
	CHECK_EQ(place(N2L_NONE, 0, 0, 5), N2L_DISK);
	CHECK_EQ(place(N2L_NONE, 0, 0, 0), N2L_NONE);
	/* a slot moves up when something faster has room */
	CHECK_EQ(place(N2L_DISK, 0, 1, 0), N2L_FLASH);
	CHECK_EQ(place(N2L_FLASH, 3, 1, 0), N2L_NETRAM);
}

TEST(netram_first_rewrites_in_place_when_nothing_faster_has_room)
{
	CHECK_EQ(place(N2L_FLASH, 0, 0, 9), N2L_FLASH);
	CHECK_EQ(place(N2L_DISK, 0, 0, 0), N2L_DISK);
	CHECK_EQ(place(N2L_NETRAM, 0, 9, 9), N2L_NETRAM);
}
