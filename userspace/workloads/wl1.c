// SPDX-License-Identifier: GPL-2.0-only
/*
 * WL1: one process reads, checks and rewrites every page of its footprint
 * in order, --passes times: the best case for a disk, whose readahead and
 * merged writes follow a sequential sweep.
 *
 * Footprint: F bytes of 4 KiB pages (default 1.75 times the limit), plus
 * 4 bytes a page for the versions. Result figures: pages, touches (pages
 * times passes), checksum (of the final versions; the same seed gives the
 * same checksum on any device); on wrong data, the first bad page.
 */
#include <stdbool.h>

#include "pages.h"

static const struct wl_spec wl1_spec = {
	.name = "wl1",
	.footprint = 1.75,
	.passes = 3,
	.procs = 1,
	.max_procs = 1,
	.passes_help = "sequential read-modify-write sweeps over every page",
};

int main(int argc, char **argv)
{
	return region_main(argc, argv, &wl1_spec, false);
}
