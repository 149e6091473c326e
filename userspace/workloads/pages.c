// SPDX-License-Identifier: GPL-2.0-only
/*
 * The page pattern and the touch loops of WL1, WL2 and WL4 (see pages.h).
 */
#include <inttypes.h>
#include <string.h>

#include "pages.h"

/*
 * Word i of a page holds base + i * golden: one add per word keeps the
 * CPU cost far below that of a swap fault, and base, a hash of seed, page
 * and version, differs between any two pages and any two versions.
 */
static uint64_t page_base(const struct region *r, size_t page,
			  uint32_t version)
{
	return wl_mix(wl_at(r->seed, page) ^ version);
}

static uint64_t *page_at(const struct region *r, size_t page)
{
	return r->mem + page * PAGE_WORDS;
}

static void page_write(uint64_t *w, uint64_t base)
{
	size_t i;

	for (i = 0; i < PAGE_WORDS; i++)
		w[i] = base + i * WL_GOLDEN;
}

/* A branch-free scan first, so that the common case vectorises */
static size_t first_bad_word(const uint64_t *w, uint64_t base)
{
	uint64_t diff = 0;
	size_t i;

	for (i = 0; i < PAGE_WORDS; i++)
		diff |= w[i] ^ (base + i * WL_GOLDEN);
	if (!diff)
		return PAGE_WORDS;
	for (i = 0; w[i] == base + i * WL_GOLDEN; i++)
		;
	return i;
}

static bool page_check(struct region *r, size_t page)
{
	const uint64_t *w = page_at(r, page);
	uint32_t version = r->version[page];
	uint64_t base = page_base(r, page, version);
	size_t bad = first_bad_word(w, base);

	if (bad == PAGE_WORDS)
		return true;
	r->err = (struct page_error){
		.page = page,
		.version = version,
		.word = bad,
		.expected = base + bad * WL_GOLDEN,
		.got = w[bad],
	};
	r->reason = "page-content";
	return false;
}

static bool page_touch(struct region *r, size_t page)
{
	uint64_t *w = page_at(r, page);

	if (!page_check(r, page))
		return false;
	page_write(w, page_base(r, page, ++r->version[page]));
	if (++r->touches == r->corrupt_at)
		wl_flip_byte(w, PAGE_BYTES, r->touches);
	return true;
}

size_t region_pages(const struct wl_opts *o, unsigned int parts)
{
	size_t pages = o->footprint / parts / PAGE_BYTES;

	if (!pages)
		wl_usage_error(o, "a footprint of %zu bytes is below %u pages",
			       o->footprint, parts);
	return pages;
}

void region_map(struct region *r, size_t pages, uint64_t seed,
		unsigned long long corrupt_at)
{
	*r = (struct region){
		.mem = wl_map(pages * PAGE_BYTES),
		.version = wl_map(pages * sizeof(*r->version)),
		.pages = pages,
		.seed = seed,
		.corrupt_at = corrupt_at,
	};
}

/* Version 0 everywhere, so that the first touch of a page checks it too */
static void region_fill(struct region *r)
{
	size_t page;

	for (page = 0; page < r->pages; page++)
		page_write(page_at(r, page), page_base(r, page, 0));
}

/* WL1: sequential passes over every page */
static bool region_passes(struct region *r, unsigned long passes)
{
	unsigned long pass;
	size_t page;

	for (pass = 0; pass < passes; pass++)
		for (page = 0; page < r->pages; page++)
			if (!page_touch(r, page))
				return false;
	return true;
}

/* WL2: @touches pages, each chosen uniformly from the whole region */
static bool region_random(struct region *r, unsigned long long touches)
{
	/* a stream apart from the one the page patterns come from */
	uint64_t rng = wl_mix(~r->seed);
	unsigned long long n;

	for (n = 0; n < touches; n++)
		if (!page_touch(r, wl_below(wl_next(&rng), r->pages)))
			return false;
	return true;
}

/*
 * Every page once more, read only, then the totals: the versions must add
 * up to the touches counted, and those to the touches the run had to make.
 */
static bool region_verify(struct region *r, unsigned long long touches)
{
	size_t page;

	r->checksum = 0;
	r->version_sum = 0;
	for (page = 0; page < r->pages; page++) {
		if (!page_check(r, page))
			return false;
		r->checksum += page_base(r, page, r->version[page]);
		r->version_sum += r->version[page];
	}
	if (r->version_sum != r->touches || r->touches != touches) {
		r->reason = "touch-count";
		return false;
	}
	return true;
}

/*
 * Fill, call @ready (WL4 lines its processes up there), then the timed
 * touches, as many as @passes sweeps would make, and the final check.
 */
bool region_run(struct region *r, unsigned long passes, bool random,
		void (*ready)(void *arg), void *arg)
{
	unsigned long long touches = (unsigned long long)r->pages * passes;
	bool ok;

	region_fill(r);
	if (ready)
		ready(arg);
	r->started = wl_now();
	ok = random ? region_random(r, touches) : region_passes(r, passes);
	r->finished = wl_now();
	return ok && region_verify(r, touches);
}

/* The whole of WL1 (sequential) and WL2 (random): one process, one region */
int region_main(int argc, char **argv, const struct wl_spec *spec,
		bool random)
{
	struct wl_result res;
	struct wl_opts o;
	struct region r;

	wl_parse(argc, argv, spec, &o);
	wl_result_init(&res, &o);
	region_map(&r, region_pages(&o, 1), o.seed, o.corrupt_at);
	region_run(&r, o.passes, random, NULL, NULL);
	res.seconds = r.finished - r.started;
	region_report(&r, &res);
	return wl_report(&res);
}

void region_report(const struct region *r, struct wl_result *res)
{
	res->footprint = r->pages * PAGE_BYTES;
	wl_add(res, "pages", "%zu", r->pages);
	wl_add(res, "touches", "%llu", r->touches);
	wl_add(res, "checksum", "%016" PRIx64, r->checksum);
	if (!r->reason)
		return;
	wl_fail(res, r->reason);
	if (strcmp(r->reason, "page-content")) {
		wl_add(res, "version_sum", "%llu", r->version_sum);
		return;
	}
	wl_add(res, "bad_page", "%zu", r->err.page);
	wl_add(res, "bad_version", "%" PRIu32, r->err.version);
	wl_add(res, "bad_word", "%zu", r->err.word);
	wl_add(res, "expected", "%016" PRIx64, r->err.expected);
	wl_add(res, "got", "%016" PRIx64, r->err.got);
}
