// SPDX-License-Identifier: GPL-2.0-only
#include "pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void pool_init(struct pool *p, const struct logger *log, uint32_t chunk_pages,
	       bool lock, bool require_lock)
{
	memset(p, 0, sizeof(*p));
	p->log = log;
	p->chunk_pages = chunk_pages ? chunk_pages : POOL_CHUNK_PAGES;
	if (p->chunk_pages > 65536)
		p->chunk_pages = 65536;
	p->lock = lock;
	p->require_lock = require_lock;
}

static void list_del(struct pool *p, struct pool_chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		p->avail_head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		p->avail_tail = c->prev;
	c->prev = c->next = NULL;
	c->on_list = false;
}

static void list_add_head(struct pool *p, struct pool_chunk *c)
{
	c->prev = NULL;
	c->next = p->avail_head;
	if (p->avail_head)
		p->avail_head->prev = c;
	else
		p->avail_tail = c;
	p->avail_head = c;
	c->on_list = true;
}

static void list_add_tail(struct pool *p, struct pool_chunk *c)
{
	c->next = NULL;
	c->prev = p->avail_tail;
	if (p->avail_tail)
		p->avail_tail->next = c;
	else
		p->avail_head = c;
	p->avail_tail = c;
	c->on_list = true;
}

static void chunk_unmap(struct pool *p, struct pool_chunk *c)
{
	munmap(c->mem, (size_t)c->npages * POOL_PAGE);
	if (!c->locked)
		p->unlocked_chunks--;
	p->nchunks--;
	free(c);
}

static struct pool_chunk *chunk_map(struct pool *p)
{
	size_t bytes = (size_t)p->chunk_pages * POOL_PAGE;
	struct pool_chunk *c;
	void *mem;

	c = malloc(sizeof(*c) + p->chunk_pages * sizeof(uint16_t));
	if (!c)
		return NULL;
	mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		log_warn(p->log, "cannot map %zu bytes of page memory: %s",
			 bytes, strerror(errno));
		free(c);
		return NULL;
	}
	madvise(mem, bytes, MADV_DONTDUMP);
	madvise(mem, bytes, MADV_DONTFORK);
	c->locked = false;
	if (p->lock) {
		if (mlock(mem, bytes) == 0) {
			c->locked = true;
		} else if (p->require_lock) {
			log_warn(p->log, "cannot lock page memory (%s) and --require-mlock is set: refusing pages",
				 strerror(errno));
			munmap(mem, bytes);
			free(c);
			return NULL;
		} else if (!p->lock_warned) {
			p->lock_warned = true;
			log_warn(p->log, "cannot lock page memory (%s; raise LimitMEMLOCK/ulimit -l): pages may be swapped out",
				 strerror(errno));
		}
	}
	if (!c->locked)
		p->unlocked_chunks++;
	c->mem = mem;
	c->npages = c->nfree = p->chunk_pages;
	for (uint32_t i = 0; i < c->npages; i++)
		c->free_idx[i] = (uint16_t)(c->npages - 1 - i);
	c->prev = c->next = NULL;
	p->nchunks++;
	p->nempty++;
	p->free_slots += c->npages;
	list_add_tail(p, c);
	return c;
}

int pool_reserve(struct pool *p, size_t n)
{
	while (p->free_slots < n)
		if (!chunk_map(p))
			return -1;
	p->reserved = n;
	return 0;
}

int pool_prealloc(struct pool *p, size_t n)
{
	p->floor_slots = 0;
	while (p->free_slots + p->used_slots < n)
		if (!chunk_map(p))
			return -1;
	p->floor_slots = n;
	return 0;
}

void pool_take(struct pool *p, struct pool_chunk **chunk, uint32_t *idx)
{
	struct pool_chunk *c = p->avail_head;

	/* pool_reserve() made sure there is one */
	if (c->nfree == c->npages)
		p->nempty--;
	*idx = c->free_idx[--c->nfree];
	*chunk = c;
	p->free_slots--;
	p->used_slots++;
	if (p->reserved)
		p->reserved--;
	if (!c->nfree)
		list_del(p, c);
}

void pool_give(struct pool *p, struct pool_chunk *c, uint32_t idx)
{
	c->free_idx[c->nfree++] = (uint16_t)idx;
	p->free_slots++;
	p->used_slots--;
	if (!c->on_list)
		list_add_head(p, c);
	if (c->nfree == c->npages) {
		/* Empty: keep one spare chunk, give the others back. */
		list_del(p, c);
		if (p->nempty >= 1 && p->free_slots - c->npages >= p->reserved &&
		    p->free_slots + p->used_slots - c->npages >= p->floor_slots) {
			p->free_slots -= c->npages;
			chunk_unmap(p, c);
		} else {
			p->nempty++;
			list_add_tail(p, c);
		}
	}
}

void pool_destroy(struct pool *p)
{
	/* Only chunks with room are listed; the caller gave every slot back. */
	while (p->avail_head) {
		struct pool_chunk *c = p->avail_head;

		list_del(p, c);
		chunk_unmap(p, c);
	}
	p->free_slots = 0;
	p->nempty = 0;
}
