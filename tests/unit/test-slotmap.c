// SPDX-License-Identifier: GPL-2.0-only
#include "slotmap.h"
#include "unit.h"

TEST(slotmap_entry_fields_round_trip)
{
	sme_t e = sme_make(N2L_DISK, 0xfffffffeU, SME_WRITING | SME_PREFETCHED);

	CHECK_EQ(sizeof(sme_t), 8);
	CHECK_EQ(sme_medium(e), N2L_DISK);
	CHECK_EQ(sme_blk(e), 0xfffffffeU);
	CHECK_EQ(sme_flags(e), SME_WRITING | SME_PREFETCHED);

	e = sme_make(N2L_NETRAM, sme_netram_loc(255, SME_VERS_MAX), SME_WRITING);
	CHECK_EQ(sme_medium(e), N2L_NETRAM);
	CHECK_EQ(sme_group(e), 255);
	CHECK_EQ(sme_vers(e), SME_VERS_MAX);
	CHECK_EQ(sme_flags(e), SME_WRITING);
	CHECK(sme_at(e, 255, SME_VERS_MAX));
	CHECK(!sme_at(e, 254, SME_VERS_MAX));
	CHECK(!sme_at(e, 255, SME_VERS_MAX - 1));
}

TEST(slotmap_flags_change_without_touching_other_fields)
{
	sme_t e = sme_make(N2L_NETRAM, sme_netram_loc(7, 1ULL << 40), SME_PREFETCHED);

	e = sme_set_flags(e, SME_WRITING);
	CHECK_EQ(sme_flags(e), SME_WRITING);
	CHECK_EQ(sme_group(e), 7);
	CHECK_EQ(sme_vers(e), 1ULL << 40);
	CHECK_EQ(sme_medium(e), N2L_NETRAM);
}

TEST(slotmap_lost_slots_are_neither_data_nor_unmapped)
{
	struct slotmap m;

	CHECK_EQ(slotmap_init(&m, 8), 0);
	slotmap_set(&m, to_slot(2), sme_make(N2L_NONE, 0, SME_LOST));
	slotmap_set(&m, to_slot(3), sme_make(N2L_NONE, 0, SME_LOST));
	CHECK(sme_lost(slotmap_get(&m, to_slot(2))));
	CHECK(!sme_lost(slotmap_get(&m, to_slot(1))));
	CHECK_EQ(slotmap_unmapped_run(&m, to_slot(0), 8), 2);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(2), 8), 2);
	CHECK_EQ(slotmap_unmapped_run(&m, to_slot(4), 8), 4);
	slotmap_exit(&m);
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
	slotmap_set(&m, to_slot(0), sme_make(N2L_FLASH, 100, 0));
	slotmap_set(&m, to_slot(1), sme_make(N2L_FLASH, 101, SME_WRITING));
	slotmap_set(&m, to_slot(2), sme_make(N2L_FLASH, 102, SME_PREFETCHED));
	slotmap_set(&m, to_slot(3), sme_make(N2L_FLASH, 200, 0));
	slotmap_set(&m, to_slot(4), sme_make(N2L_DISK, 201, 0));
	slotmap_set(&m, to_slot(5), sme_make(N2L_DISK, 202, 0));
	slotmap_set(&m, to_slot(15), sme_make(N2L_DISK, 5, 0));

	CHECK_EQ(slotmap_contiguous(&m, to_slot(0), 16), 3);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(0), 2), 2);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(3), 16), 1);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(4), 16), 2);
	/* the last slot: a run may not run off the map */
	CHECK_EQ(slotmap_contiguous(&m, to_slot(15), 8), 1);
	CHECK_EQ(slotmap_unmapped_run(&m, to_slot(6), 16), 9);
	slotmap_exit(&m);
}

TEST(slotmap_netram_runs_share_group_and_version)
{
	struct slotmap m;
	u64 a = sme_netram_loc(3, 77), b = sme_netram_loc(4, 77);

	slotmap_init(&m, 8);
	slotmap_set(&m, to_slot(0), sme_make(N2L_NETRAM, a, 0));
	slotmap_set(&m, to_slot(1), sme_make(N2L_NETRAM, a, SME_WRITING));
	slotmap_set(&m, to_slot(2), sme_make(N2L_NETRAM, a, 0));
	slotmap_set(&m, to_slot(3), sme_make(N2L_NETRAM, b, 0));
	slotmap_set(&m, to_slot(4), sme_make(N2L_NETRAM, sme_netram_loc(4, 78), 0));
	/* a write in flight does not cut a run: readers read the old copies */
	CHECK_EQ(slotmap_contiguous(&m, to_slot(0), 8), 3);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(3), 8), 1);
	CHECK_EQ(slotmap_contiguous(&m, to_slot(4), 8), 1);
	slotmap_exit(&m);
}

/*
 * With a metadata device, a change of what the device keeps (medium, lost
 * flag, location) marks its run dirty for both map areas; a change of the
 * running device's own flags does not.
 */
TEST(slotmap_tracks_changes_that_a_metadata_device_keeps)
{
	struct slotmap m;
	sme_t e = sme_make(N2L_FLASH, 5, 0);

	CHECK_EQ(slotmap_init(&m, 25), 0);
	CHECK_EQ(slotmap_track(&m, 10), 0);
	CHECK_EQ(slotmap_runs(&m), 3);
	CHECK(test_bit(0, m.dirty[0]) && test_bit(2, m.dirty[1]));	/* all, at first */
	bitmap_clear(m.dirty[0], 0, 3);
	bitmap_clear(m.dirty[1], 0, 3);
	slotmap_set(&m, to_slot(12), e);
	CHECK(test_bit(1, m.dirty[0]) && test_bit(1, m.dirty[1]));
	CHECK(!test_bit(0, m.dirty[0]) && !test_bit(2, m.dirty[0]));
	bitmap_clear(m.dirty[0], 1, 1);
	bitmap_clear(m.dirty[1], 1, 1);
	slotmap_set(&m, to_slot(12), sme_set_flags(e, SME_WRITING | SME_PF_READ));
	CHECK(!test_bit(1, m.dirty[0]) && !test_bit(1, m.dirty[1]));
	slotmap_set(&m, to_slot(24), sme_make(N2L_NONE, 0, SME_LOST));
	CHECK(test_bit(2, m.dirty[0]) && test_bit(2, m.dirty[1]));
	slotmap_exit(&m);
}
