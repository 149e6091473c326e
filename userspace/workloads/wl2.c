// SPDX-License-Identifier: GPL-2.0-only
/*
 * WL2: one process reads, checks and rewrites pages chosen uniformly at
 * random from its whole footprint: the worst case for a disk, every fault
 * a seek. It makes as many touches as WL1 does with the same footprint
 * and passes (pages times passes), so the two compare page for page; some
 * pages are touched more often than others, and their versions say so.
 *
 * Footprint: F bytes of 4 KiB pages (default 1.75 times the limit), plus
 * 4 bytes a page for the versions. Result figures as WL1's: pages,
 * touches, checksum; on wrong data, the first bad page.
 */
#include <stdbool.h>

#include "pages.h"

static const struct wl_spec wl2_spec = {
	.name = "wl2",
	.footprint = 1.75,
	.passes = 3,
	.procs = 1,
	.max_procs = 1,
	.passes_help = "random page touches, in units of the region's size",
};

int main(int argc, char **argv)
{
	return region_main(argc, argv, &wl2_spec, true);
}
