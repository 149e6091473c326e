/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The page store. Pages live in *areas*: an area is (authenticated
 * identity, device id of HELLO), never anything a client names for
 * another identity. Within an area a page is (key, vers): several versions
 * of a key may be stored at once, and only the same (key, vers) is ever
 * replaced. Pages are *claimed* (the client's own) or *unclaimed* (a
 * peer's PEER_PUT, a second copy until the client RETAINs it); unclaimed
 * pages expire on their own and are the first to go when the server must
 * shrink.
 *
 * Both hash tables (pages by (area, key), areas by (identity, device))
 * are keyed with SipHash-2-4 under a random key, so that nobody can
 * choose keys that share a bucket. Each area keeps its pages in store
 * order, oldest first, which is the order in which pages are given up.
 * Identities are held to an optional quota for the pages charged to them
 * (ident.c): their areas' claimed pages, and the unclaimed pages they
 * sent as a peer.
 *
 * Accounting is in pages: used = pages stored, free = capacity - used.
 */
#ifndef NSWAPD_STORE_H
#define NSWAPD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../n2l-proto.h"
#include "pool.h"
#include "siphash.h"

struct conn;
struct area;

struct entry {
	struct entry *hnext;		/* hash chain */
	struct entry *aprev, *anext;	/* the area's pages, oldest first */
	struct entry *uprev, *unext;	/* unclaimed pages, oldest first */
	struct area *area;
	struct ident *payer;		/* area->ident, or unclaimed: the peer's */
	uint64_t key, vers;
	uint64_t seq;			/* store order */
	uint64_t move_id;		/* the batch moving it; 0: none */
	uint64_t mark;			/* reconciliation mark (area->mark) */
	int64_t arrived_ms;		/* unclaimed: when it came */
	struct pool_chunk *chunk;
	uint32_t idx;
	bool claimed;
	uint8_t seal[N2L_SEAL_LEN];
};

/* An identity: the pages charged to it, against the quota. */
struct ident {
	char name[N2L_ID_LEN];
	uint64_t held;			/* pages charged */
	unsigned int nareas;
	struct ident *prev, *next;
};

struct area {
	char identity[N2L_ID_LEN];
	uint64_t device;
	char tag[9];			/* for the logs: never the identity or device */
	uint64_t serial;		/* hashes its pages */
	struct ident *ident;
	struct area *hnext;		/* hash chain */
	struct area *prev, *next;	/* every area */
	struct entry *head, *tail;	/* oldest first */
	uint64_t held;			/* pages, claimed or not */
	uint64_t unclaimed;		/* of them, unclaimed */
	uint64_t moving;		/* of them, in a batch being given up */
	/* Reconciliation: generation g of the client, mark of ours. */
	uint64_t gen, mark;
	bool reconciling;
	/* Connection state, kept by the server. */
	unsigned int nconns;
	struct conn *conn;		/* newest connection, NULL if none */
	int64_t gone_since_ms;		/* no connection since (monotonic) */
	int64_t retry_at_ms;		/* no give-up batches before */
	uint32_t backoff_ms;
	unsigned int inflight;		/* batches */
	bool stuck_logged;
	/* A MOVED to this peer was refused: RETURN instead until then. */
	char refused_peer[N2L_ADDR_LEN];
	int64_t refused_until_ms;
	uint32_t refused_backoff_ms;
};

struct store {
	struct pool pool;
	struct siphash_key hkey;
	struct entry **buckets;
	size_t nbuckets;		/* a power of two */
	struct area **abuckets;
	size_t nabuckets;		/* a power of two */
	struct area *areas;		/* every area */
	size_t nareas;
	uint64_t area_serial;
	struct ident *idents;
	struct entry *uhead, *utail;	/* unclaimed pages, oldest first */
	uint64_t unclaimed;
	uint64_t capacity;		/* pages */
	uint64_t quota;			/* pages per identity; 0: none */
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

/* What area a (its identity) may still store: room and quota. */
uint64_t store_area_free(const struct store *st, const struct area *a);

/* ident.c: identities and what is charged to them */
/* The identity's record, made if there is none (NULL: out of memory). */
struct ident *ident_get(struct store *st, const char name[N2L_ID_LEN]);
/* Frees the record if no area and no page refers to it. */
void ident_maybe_free(struct store *st, struct ident *id);
/* Pages that may still be charged to id (UINT64_MAX: no quota). */
uint64_t ident_quota_left(const struct store *st, const struct ident *id);
/* Charges e to another identity, without a quota check: only new pages need room. */
void ident_charge(struct store *st, struct entry *e, struct ident *to);

/* area.c: areas and identities */
struct area *store_area(struct store *st, const char identity[N2L_ID_LEN],
			uint64_t device, bool create);
/* Drops the area's pages and the record itself. */
void store_area_remove(struct store *st, struct area *a);
/* Removes it if nothing refers to it (no pages, connections, batches). */
bool store_area_maybe_remove(struct store *st, struct area *a);
/* "0123abcd" of (identity, device), for the logs. */
void area_tag(const char identity[N2L_ID_LEN], uint64_t device, char tag[9]);

struct entry *store_find(struct store *st, struct area *a, uint64_t key, uint64_t vers);

/* PUT: pages key..key+n-1 of version vers, claimed, all or nothing. */
int store_put(struct store *st, struct area *a, uint64_t key, uint32_t n,
	      uint64_t vers, const uint8_t *pages, const uint8_t *seals);
/* Copies n pages and seals if all are stored with version vers; else false. */
bool store_get(struct store *st, struct area *a, uint64_t key, uint32_t n,
	       uint64_t vers, uint8_t *pages, uint8_t *seals);
/* kvs: n little-endian struct n2l_kv; returns pages dropped. */
uint32_t store_inval(struct store *st, struct area *a, const void *kvs, uint32_t n);
/*
 * PEER_PUT from peer identity payer: unclaimed pages charged to it, never
 * replacing a claimed one; all or nothing.
 */
int store_peer_put(struct store *st, struct area *a, const char payer[N2L_ID_LEN],
		   const void *kvs, uint32_t n, const uint8_t *pages,
		   const uint8_t *seals, int64_t now_ms);
uint64_t store_free_all(struct store *st, struct area *a);
/* Drops the claimed pages only (a client gone too long). */
uint64_t store_drop_claimed(struct store *st, struct area *a);
void store_drop(struct store *st, struct entry *e);

/* Reconciliation (RETAIN_BEGIN, RETAIN, RETAIN_END). */
void store_retain_begin(struct store *st, struct area *a, uint64_t gen);
/* bitmap: (n + 7) / 8 bytes, bit i set if entry i is not stored. */
void store_retain(struct store *st, struct area *a, const void *kvs, uint32_t n,
		  uint8_t *bitmap);
/* Drops the claimed pages not marked in gen if gen is current. */
uint64_t store_retain_end(struct store *st, struct area *a, uint64_t gen);

/* Unclaimed pages: expiry, and the first to go when shrinking. */
uint64_t store_expire_unclaimed(struct store *st, int64_t now_ms, int64_t ttl_ms);
uint64_t store_drop_unclaimed(struct store *st, uint64_t n);

/* Give-up batches mark the pages they carry. */
void store_mark_moving(struct store *st, struct entry *e, uint64_t move_id);
void store_unmark_moving(struct store *st, struct entry *e);

static inline const uint8_t *entry_page(const struct entry *e)
{
	return pool_addr(e->chunk, e->idx);
}

#endif
