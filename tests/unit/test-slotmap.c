// SPDX-License-Identifier: GPL-2.0-only
#include "slotmap.h"
#include "unit.h"

TEST(slotmap_entry_fields_round_trip)
{
	sme_t e = sme_make(N2L_DISK, 0xfffffffeU, SME_VERSION_MASK,
			   SME_MIGRATING | SME_PREFETCHED);

	CHECK_EQ(sizeof(sme_t), 8);
	CHECK_EQ(sme_medium(e), N2L_DISK);
	CHECK_EQ(sme_loc(e), 0xfffffffeU);
	CHECK_EQ(sme_version(e), SME_VERSION_MASK);
	CHECK_EQ(sme_flags(e), SME_MIGRATING | SME_PREFETCHED);

	e = sme_make(N2L_NETRAM, 7, 5, 0);
	CHECK_EQ(sme_medium(e), N2L_NETRAM);
	CHECK_EQ(sme_loc(e), 7);
	CHECK_EQ(sme_version(e), 5);
	CHECK_EQ(sme_flags(e), 0);
}

TEST(slotmap_version_wraps_without_touching_other_fields)
{
	sme_t e = sme_make(N2L_FLASH, 42, SME_VERSION_MASK, SME_PREFETCHED);

	e = sme_bump(e);
	CHECK_EQ(sme_version(e), 0);
	CHECK_EQ(sme_medium(e), N2L_FLASH);
	CHECK_EQ(sme_loc(e), 42);
	CHECK_EQ(sme_flags(e), SME_PREFETCHED);
	e = sme_set_flags(e, 0);
	CHECK_EQ(sme_flags(e), 0);
	CHECK_EQ(sme_loc(e), 42);
}

TEST(slotmap_new_map_is_unmapped)
{
	struct slotmap m;

	CHECK_EQ(slotmap_init(&m, 100), 0);
	CHECK_EQ(sme_medium(slotmap_get(&m, to_slot(99))), N2L_NONE);
	CHECK_EQ(slotmap_unmapped_run(&m, to_slot(0), 1000), 100);
	CHECK_EQ(slotmap_unmapped_run(&m, to_slot(90), 5), 5);
	slotmap_exit(&m);
}

TEST(slotmap_contiguous_runs_stop_at_gaps_and_media)
{
	struct slotmap m;

	slotmap_init(&m, 16);
	slotmap_set(&m, to_slot(0), sme_make(N2L_FLASH, 100, 1, 0));
	slotmap_set(&m, to_slot(1), sme_make(N2L_FLASH, 101, 9, 0));
	slotmap_set(&m, to_slot(2), sme_make(N2L_FLASH, 102, 3, SME_PREFETCHED));
	slotmap_set(&m, to_slot(3), sme_make(N2L_FLASH, 200, 1, 0));
	slotmap_set(&m, to_slot(4), sme_make(N2L_DISK, 201, 1, 0));
	slotmap_set(&m, to_slot(5), sme_make(N2L_DISK, 202, 1, 0));
	slotmap_set(&m, to_slot(15), sme_make(N2L_DISK, 5, 1, 0));

	CHECK_EQ(slotmap_contiguous(&m, to_slot(0), 16), 3);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(0), 2), 2);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(3), 16), 1);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(4), 16), 2);
	/* the last slot: a run may not run off the map */
	CHECK_EQ(slotmap_contiguous(&m, to_slot(15), 8), 1);
	CHECK_EQ(slotmap_unmapped_run(&m, to_slot(6), 16), 9);
	slotmap_exit(&m);
}

TEST(slotmap_netram_runs_share_server_and_version)
{
	struct slotmap m;
	u32 a = sme_netram_loc(3, 77), b = sme_netram_loc(4, 77);

	CHECK_EQ(sme_netram_server(a), 3);
	CHECK_EQ(sme_netram_version(a), 77);
	CHECK_EQ(sme_netram_version(sme_netram_loc(63, SME_VERSION_MASK)),
		 SME_VERSION_MASK);
	slotmap_init(&m, 8);
	slotmap_set(&m, to_slot(0), sme_make(N2L_NETRAM, a, 77, 0));
	slotmap_set(&m, to_slot(1), sme_make(N2L_NETRAM, a, 77, 0));
	slotmap_set(&m, to_slot(2), sme_make(N2L_NETRAM, a, 90, 0));
	slotmap_set(&m, to_slot(3), sme_make(N2L_NETRAM, b, 77, 0));
	slotmap_set(&m, to_slot(4), sme_make(N2L_NETRAM, sme_netram_loc(4, 78), 78, 0));
	/* the entry version may run ahead of the copy (a write in flight) */
	CHECK_EQ(slotmap_contiguous(&m, to_slot(0), 8), 3);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(3), 8), 1);
	slotmap_exit(&m);
}
