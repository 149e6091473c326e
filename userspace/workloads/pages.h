/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A region of 4 KiB pages that WL1, WL2 and WL4 read, check and rewrite.
 *
 * Every page holds a pattern derived from the seed, the page's index and
 * its version (how many times it has been rewritten), and the region keeps
 * each page's version apart from the page. A touch checks the whole page
 * against the pattern it must hold and writes the next version, so a page
 * that comes back from swap wrong, stale (an older version), from another
 * page's slot or zeroed is caught at its next touch; a final sweep checks
 * every page once more, and the versions must add up to the touches made.
 *
 * Operations, for --corrupt-at: touches, counted from 1; the byte flipped
 * is in the page just written.
 */
#ifndef WL_PAGES_H
#define WL_PAGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define PAGE_BYTES 4096
#define PAGE_WORDS (PAGE_BYTES / 8)

struct page_error {
	size_t page;
	uint32_t version;	/* what the page should have held */
	size_t word;
	uint64_t expected, got;
};

struct region {
	uint64_t *mem;
	uint32_t *version;	/* per page */
	size_t pages;
	uint64_t seed;
	unsigned long long touches;
	unsigned long long corrupt_at;
	double started, finished;	/* the timed touches */
	uint64_t checksum;	/* of every page's version, set by the sweep */
	unsigned long long version_sum;
	const char *reason;	/* NULL while every page was right */
	struct page_error err;
};

size_t region_pages(const struct wl_opts *o, unsigned int parts);
void region_map(struct region *r, size_t pages, uint64_t seed,
		unsigned long long corrupt_at);
bool region_run(struct region *r, unsigned long passes, bool random,
		void (*ready)(void *arg), void *arg);
void region_report(const struct region *r, struct wl_result *res);
int region_main(int argc, char **argv, const struct wl_spec *spec,
		bool random);

#endif
