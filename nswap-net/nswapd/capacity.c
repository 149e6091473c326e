// SPDX-License-Identifier: GPL-2.0-only
/*
 * How much the node can donate: every interval,
 *   target = clamp(used + (MemAvailable - reserve), min, max)  pages.
 * Our pages are locked, so MemAvailable already leaves them out.
 */
#include "server.h"

#include <stdio.h>
#include <string.h>

int meminfo_avail_kb(const char *path, uint64_t *kb)
{
	char line[256];
	FILE *f = fopen(path, "re");
	int rc = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long v;

		if (sscanf(line, "MemAvailable: %llu kB", &v) == 1) {
			*kb = v;
			rc = 0;
			break;
		}
	}
	fclose(f);
	return rc;
}

uint64_t capacity_target(uint64_t used_pages, uint64_t avail_kb, const struct config *cfg)
{
	const uint64_t pages_per_mb = (1U << 20) / N2L_PAGE_SIZE;
	uint64_t avail = avail_kb / (N2L_PAGE_SIZE / 1024);
	uint64_t reserve = cfg->reserve_mb * pages_per_mb;
	uint64_t min = cfg->min_mb * pages_per_mb;
	uint64_t target;

	if (avail >= reserve)
		target = used_pages + (avail - reserve);
	else
		target = used_pages > reserve - avail ? used_pages - (reserve - avail) : 0;
	if (target < used_pages && avail >= reserve)	/* overflow */
		target = UINT64_MAX;
	if (cfg->max_mb && target > cfg->max_mb * pages_per_mb)
		target = cfg->max_mb * pages_per_mb;
	if (target < min)
		target = min;
	return target;
}
