/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Page memory: 4 KiB slots in mmap'ed chunks that are mlock'ed (and kept
 * out of core dumps and children). A chunk is unmapped once it is empty
 * and another empty chunk is already kept; allocation fills the most-used
 * chunks first so that the others can empty out.
 */
#ifndef NSWAPD_POOL_H
#define NSWAPD_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"

#define POOL_PAGE	4096U
#define POOL_CHUNK_PAGES	512U	/* 2 MiB */

struct pool_chunk {
	uint8_t *mem;
	uint32_t npages, nfree;
	struct pool_chunk *prev, *next;	/* on the pool's list of chunks with room */
	bool on_list;
	bool locked;
	uint16_t free_idx[];		/* a stack of nfree free slot numbers */
};

struct pool {
	const struct logger *log;
	uint32_t chunk_pages;
	bool lock;		/* try to mlock chunks */
	bool require_lock;	/* a chunk that cannot be locked is not used */
	bool lock_warned;
	struct pool_chunk *avail_head, *avail_tail;	/* chunks with free slots */
	size_t nchunks, nempty;
	size_t free_slots;	/* free slots in mapped chunks */
	size_t reserved;	/* of them, promised by pool_reserve() */
	size_t floor_slots;	/* never unmap below this many (pool_prealloc) */
	size_t used_slots;
	size_t unlocked_chunks;
};

void pool_init(struct pool *p, const struct logger *log, uint32_t chunk_pages,
	       bool lock, bool require_lock);
void pool_destroy(struct pool *p);
/* Make sure n slots can be taken without failing; 0 or -1. */
int pool_reserve(struct pool *p, size_t n);
/* Map n slots now and keep at least that many mapped; 0 or -1. */
int pool_prealloc(struct pool *p, size_t n);
/* Take a slot; only after pool_reserve() said yes. */
void pool_take(struct pool *p, struct pool_chunk **chunk, uint32_t *idx);
void pool_give(struct pool *p, struct pool_chunk *chunk, uint32_t idx);

static inline uint8_t *pool_addr(const struct pool_chunk *c, uint32_t idx)
{
	return c->mem + (size_t)idx * POOL_PAGE;
}

#endif
