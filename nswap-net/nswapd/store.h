/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The page store: (client id, key, version) -> one 4 KiB page, in a hash
 * table keyed by (client id, key). A PUT from the client replaces every
 * version of its keys; a PEER_PUT adds the versions it carries, so that a
 * page moved here never destroys a newer page of the same key (the client
 * invalidates the old one). Each client keeps its pages in store order,
 * oldest first, which is the order in which pages are given up.
 *
 * Accounting is in pages: used = pages stored, free = capacity - used.
 */
#ifndef NSWAPD_STORE_H
#define NSWAPD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pool.h"

struct conn;
struct client;

struct entry {
	struct entry *hnext;		/* hash chain */
	struct entry *cprev, *cnext;	/* the client's pages, oldest first */
	struct client *client;
	uint64_t key;
	uint64_t seq;			/* store order */
	uint64_t move_id;		/* the batch moving it; 0: none */
	struct pool_chunk *chunk;
	uint32_t idx;
	uint32_t vers;
};

struct client {
	uint64_t id;
	struct client *prev, *next;
	struct entry *head, *tail;	/* oldest first */
	uint64_t held;			/* pages */
	uint64_t moving;		/* of them, in a batch being given up */
	/* Connection state, kept by the server. */
	unsigned int nconns;
	struct conn *conn;		/* newest connection, NULL if none */
	int64_t gone_since_ms;		/* no connection since (monotonic) */
	int64_t retry_at_ms;		/* no give-up batches before */
	uint32_t backoff_ms;
	unsigned int inflight;		/* batches */
	bool stuck_logged;
};

struct store {
	struct pool pool;
	struct entry **buckets;
	size_t nbuckets;		/* a power of two */
	struct client *clients;
	size_t nclients;
	uint64_t capacity;		/* pages */
	uint64_t used;			/* pages stored */
	uint64_t moving;		/* pages in batches being given up */
	uint64_t seq;
	struct entry *spare;		/* entry structs kept for reuse */
	size_t nspare;
};

enum { STORE_OK = 0, STORE_FULL = -1, STORE_NOMEM = -2 };

int store_init(struct store *st, const struct logger *log, uint32_t chunk_pages,
	       bool lock, bool require_lock);
void store_destroy(struct store *st);

static inline uint64_t store_free(const struct store *st)
{
	return st->capacity > st->used ? st->capacity - st->used : 0;
}

struct client *store_client(struct store *st, uint64_t id, bool create);
/* Drops the client's pages and the record itself. */
void store_client_remove(struct store *st, struct client *c);

struct entry *store_find(struct store *st, struct client *c, uint64_t key, uint32_t vers);

/* Pages key..key+n-1, version vers, all or nothing. */
int store_put(struct store *st, struct client *c, uint64_t key, uint32_t n,
	      uint32_t vers, const uint8_t *pages);
/* Copies n pages to dst if all are stored with version vers; else false. */
bool store_get(struct store *st, struct client *c, uint64_t key, uint32_t n,
	       uint32_t vers, uint8_t *dst);
/* kvs: n little-endian struct n2l_kv; returns pages dropped. */
uint32_t store_inval(struct store *st, struct client *c, const void *kvs, uint32_t n);
/* PEER_PUT: n (key, version) pairs and their pages, all or nothing. */
int store_put_versions(struct store *st, struct client *c, const void *kvs,
		       uint32_t n, const uint8_t *pages);
uint64_t store_free_all(struct store *st, struct client *c);
void store_drop(struct store *st, struct entry *e);

/* Give-up batches mark the pages they carry. */
void store_mark_moving(struct store *st, struct entry *e, uint64_t move_id);
void store_unmark_moving(struct store *st, struct entry *e);

static inline const uint8_t *entry_page(const struct entry *e)
{
	return pool_addr(e->chunk, e->idx);
}

#endif
