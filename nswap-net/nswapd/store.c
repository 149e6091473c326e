// SPDX-License-Identifier: GPL-2.0-only
#include "auth.h"
#include "store.h"

#include <stdlib.h>
#include <string.h>

#define STORE_MIN_BUCKETS	1024
#define STORE_MAX_SPARE		(2 * N2L_MAX_PAGES)

static inline size_t bucket_of(const struct store *st, const struct area *a, uint64_t key,
			       size_t nb)
{
	return (size_t)(siphash24_u64x2(&st->hkey, a->serial, key) & (nb - 1));
}

int store_init(struct store *st, const struct logger *log, uint32_t chunk_pages,
	       bool lock, bool require_lock)
{
	memset(st, 0, sizeof(*st));
	pool_init(&st->pool, log, chunk_pages, lock, require_lock);
	if (auth_random(&st->hkey, sizeof(st->hkey)))
		return -1;
	st->nbuckets = STORE_MIN_BUCKETS;
	st->buckets = calloc(st->nbuckets, sizeof(*st->buckets));
	return st->buckets ? 0 : -1;
}

void store_destroy(struct store *st)
{
	while (st->areas)
		store_area_remove(st, st->areas);
	pool_destroy(&st->pool);
	while (st->spare) {
		struct entry *e = st->spare;

		st->spare = e->hnext;
		free(e);
	}
	st->nspare = 0;
	free(st->buckets);
	free(st->abuckets);
	st->buckets = NULL;
	st->abuckets = NULL;
}

/* Room for id's pages: in the store, and in its quota. */
static uint64_t room_of(const struct store *st, const struct ident *id)
{
	uint64_t f = store_free(st), q = ident_quota_left(st, id);

	return q < f ? q : f;
}

uint64_t store_area_free(const struct store *st, const struct area *a)
{
	return a ? room_of(st, a->ident) : store_free(st);
}

/* Doubles the table; on allocation failure chains just get longer. */
static void maybe_grow(struct store *st)
{
	size_t nb = st->nbuckets * 2;
	struct entry **nbk;

	if (st->used < st->nbuckets || nb > ((size_t)1 << 40))
		return;
	nbk = calloc(nb, sizeof(*nbk));
	if (!nbk)
		return;
	for (size_t i = 0; i < st->nbuckets; i++) {
		struct entry *e = st->buckets[i], *n;

		for (; e; e = n) {
			size_t b = bucket_of(st, e->area, e->key, nb);

			n = e->hnext;
			e->hnext = nbk[b];
			nbk[b] = e;
		}
	}
	free(st->buckets);
	st->buckets = nbk;
	st->nbuckets = nb;
}

struct entry *store_find(struct store *st, struct area *a, uint64_t key, uint64_t vers)
{
	struct entry *e = st->buckets[bucket_of(st, a, key, st->nbuckets)];

	for (; e; e = e->hnext)
		if (e->key == key && e->vers == vers && e->area == a)
			return e;
	return NULL;
}

static void area_list_del(struct area *a, struct entry *e)
{
	if (e->aprev)
		e->aprev->anext = e->anext;
	else
		a->head = e->anext;
	if (e->anext)
		e->anext->aprev = e->aprev;
	else
		a->tail = e->aprev;
}

static void area_list_add_tail(struct area *a, struct entry *e)
{
	e->anext = NULL;
	e->aprev = a->tail;
	if (a->tail)
		a->tail->anext = e;
	else
		a->head = e;
	a->tail = e;
}

static void unclaimed_del(struct store *st, struct entry *e)
{
	if (e->uprev)
		e->uprev->unext = e->unext;
	else
		st->uhead = e->unext;
	if (e->unext)
		e->unext->uprev = e->uprev;
	else
		st->utail = e->uprev;
	e->uprev = e->unext = NULL;
	st->unclaimed--;
	e->area->unclaimed--;
}

static void unclaimed_add_tail(struct store *st, struct entry *e)
{
	e->unext = NULL;
	e->uprev = st->utail;
	if (st->utail)
		st->utail->unext = e;
	else
		st->uhead = e;
	st->utail = e;
	st->unclaimed++;
	e->area->unclaimed++;
}

/* An unclaimed page becomes the client's, and is charged to it. */
static void entry_claim(struct store *st, struct entry *e)
{
	if (e->claimed)
		return;
	unclaimed_del(st, e);
	e->claimed = true;
	ident_charge(st, e, e->area->ident);
}

void store_mark_moving(struct store *st, struct entry *e, uint64_t move_id)
{
	if (!e->move_id) {
		st->moving++;
		e->area->moving++;
	}
	e->move_id = move_id;
}

void store_unmark_moving(struct store *st, struct entry *e)
{
	if (e->move_id) {
		st->moving--;
		e->area->moving--;
		e->move_id = 0;
	}
}

void store_drop(struct store *st, struct entry *e)
{
	struct area *a = e->area;
	struct entry **pp = &st->buckets[bucket_of(st, a, e->key, st->nbuckets)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	store_unmark_moving(st, e);
	if (!e->claimed)
		unclaimed_del(st, e);
	area_list_del(a, e);
	a->held--;
	e->payer->held--;
	ident_maybe_free(st, e->payer);
	st->used--;
	pool_give(&st->pool, e->chunk, e->idx);
	if (st->nspare < STORE_MAX_SPARE) {
		e->hnext = st->spare;
		st->spare = e;
		st->nspare++;
	} else {
		free(e);
	}
}

/* A new entry from the reserved structs and pool pages, charged to payer. */
static struct entry *entry_new(struct store *st, struct area *a, struct ident *payer,
			       uint64_t key, uint64_t vers, const uint8_t *page,
			       const uint8_t *seal)
{
	struct entry *e = st->spare;
	size_t b;

	st->spare = e->hnext;
	st->nspare--;
	memset(e, 0, sizeof(*e));
	e->area = a;
	e->key = key;
	e->vers = vers;
	e->seq = ++st->seq;
	e->claimed = true;
	e->mark = a->mark;
	memcpy(e->seal, seal, N2L_SEAL_LEN);
	pool_take(&st->pool, &e->chunk, &e->idx);
	memcpy(pool_addr(e->chunk, e->idx), page, N2L_PAGE_SIZE);
	b = bucket_of(st, a, key, st->nbuckets);
	e->hnext = st->buckets[b];
	st->buckets[b] = e;
	area_list_add_tail(a, e);
	a->held++;
	ident_charge(st, e, payer);
	st->used++;
	return e;
}

/* New contents for e: a new write, so it is young again and not moving. */
static void entry_rewrite(struct store *st, struct entry *e, const uint8_t *page,
			  const uint8_t *seal)
{
	struct area *a = e->area;

	store_unmark_moving(st, e);
	e->seq = ++st->seq;
	memcpy(pool_addr(e->chunk, e->idx), page, N2L_PAGE_SIZE);
	memcpy(e->seal, seal, N2L_SEAL_LEN);
	area_list_del(a, e);
	area_list_add_tail(a, e);
}

/*
 * Reserve room for `fresh` new pages charged to payer within capacity and
 * quota: pool slots and entry structs, so that what follows cannot fail
 * half-way.
 */
static int room_for(struct store *st, const struct ident *payer, uint64_t fresh)
{
	if (fresh > room_of(st, payer))
		return STORE_FULL;
	if (pool_reserve(&st->pool, fresh))
		return STORE_NOMEM;
	while (st->nspare < fresh) {
		struct entry *e = malloc(sizeof(*e));

		if (!e)
			return STORE_NOMEM;
		e->hnext = st->spare;
		st->spare = e;
		st->nspare++;
	}
	return STORE_OK;
}

int store_put(struct store *st, struct area *a, uint64_t key, uint32_t n,
	      uint64_t vers, const uint8_t *pages, const uint8_t *seals)
{
	uint64_t fresh = 0;
	int rc;

	for (uint32_t i = 0; i < n; i++)
		if (!store_find(st, a, key + i, vers))
			fresh++;
	rc = room_for(st, a->ident, fresh);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *page = pages + (size_t)i * N2L_PAGE_SIZE;
		const uint8_t *seal = seals + (size_t)i * N2L_SEAL_LEN;
		struct entry *e = store_find(st, a, key + i, vers);

		if (!e) {
			entry_new(st, a, a->ident, key + i, vers, page, seal);
			continue;
		}
		entry_claim(st, e);
		entry_rewrite(st, e, page, seal);
		e->mark = a->mark;
	}
	maybe_grow(st);
	return STORE_OK;
}

bool store_get(struct store *st, struct area *a, uint64_t key, uint32_t n,
	       uint64_t vers, uint8_t *pages, uint8_t *seals)
{
	struct entry *ents[N2L_MAX_PAGES];

	if (n > N2L_MAX_PAGES)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		ents[i] = store_find(st, a, key + i, vers);
		if (!ents[i])
			return false;
	}
	for (uint32_t i = 0; i < n; i++) {
		memcpy(pages + (size_t)i * N2L_PAGE_SIZE, entry_page(ents[i]), N2L_PAGE_SIZE);
		memcpy(seals + (size_t)i * N2L_SEAL_LEN, ents[i]->seal, N2L_SEAL_LEN);
	}
	return true;
}

static void get_kv(const void *kvs, uint32_t i, uint64_t *key, uint64_t *vers)
{
	struct n2l_kv kv;

	memcpy(&kv, (const uint8_t *)kvs + (size_t)i * sizeof(kv), sizeof(kv));
	*key = le64toh(kv.key);
	*vers = le64toh(kv.vers);
}

uint32_t store_inval(struct store *st, struct area *a, const void *kvs, uint32_t n)
{
	uint32_t dropped = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t key, vers;
		struct entry *e;

		get_kv(kvs, i, &key, &vers);
		e = store_find(st, a, key, vers);
		if (e) {
			store_drop(st, e);
			dropped++;
		}
	}
	return dropped;
}

int store_peer_put(struct store *st, struct area *a, const char payer_name[N2L_ID_LEN],
		   const void *kvs, uint32_t n, const uint8_t *pages,
		   const uint8_t *seals, int64_t now_ms)
{
	struct ident *payer = ident_get(st, payer_name);
	uint64_t fresh = 0;
	int rc;

	if (!payer)
		return STORE_NOMEM;

	/* A pair listed twice counts once: the second finds the first. */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t key, vers, k2, v2;
		bool dup = false;

		get_kv(kvs, i, &key, &vers);
		if (store_find(st, a, key, vers))
			continue;
		for (uint32_t j = 0; j < i && !dup; j++) {
			get_kv(kvs, j, &k2, &v2);
			dup = k2 == key && v2 == vers;
		}
		if (!dup)
			fresh++;
	}
	rc = room_for(st, payer, fresh);
	if (rc) {
		ident_maybe_free(st, payer);
		return rc;
	}
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *page = pages + (size_t)i * N2L_PAGE_SIZE;
		const uint8_t *seal = seals + (size_t)i * N2L_SEAL_LEN;
		uint64_t key, vers;
		struct entry *e;

		get_kv(kvs, i, &key, &vers);
		e = store_find(st, a, key, vers);
		if (e && e->claimed)
			continue;	/* the client's own page stays */
		if (e) {
			unclaimed_del(st, e);
			entry_rewrite(st, e, page, seal);
			ident_charge(st, e, payer);	/* the last sender's copy */
		} else {
			e = entry_new(st, a, payer, key, vers, page, seal);
			e->claimed = false;
		}
		e->arrived_ms = now_ms;
		unclaimed_add_tail(st, e);
	}
	ident_maybe_free(st, payer);	/* every page was the client's already */
	maybe_grow(st);
	return STORE_OK;
}

uint64_t store_free_all(struct store *st, struct area *a)
{
	uint64_t n = 0;

	while (a->head) {
		store_drop(st, a->head);
		n++;
	}
	return n;
}

uint64_t store_drop_claimed(struct store *st, struct area *a)
{
	struct entry *e, *next;
	uint64_t n = 0;

	for (e = a->head; e; e = next) {
		next = e->anext;
		if (e->claimed) {
			store_drop(st, e);
			n++;
		}
	}
	return n;
}

void store_retain_begin(struct store *st, struct area *a, uint64_t gen)
{
	a->gen = gen;
	a->mark++;
	a->reconciling = true;
}

void store_retain(struct store *st, struct area *a, const void *kvs, uint32_t n,
		  uint8_t *bitmap)
{
	memset(bitmap, 0, (n + 7) / 8);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t key, vers;
		struct entry *e;

		get_kv(kvs, i, &key, &vers);
		e = store_find(st, a, key, vers);
		if (!e) {
			bitmap[i / 8] |= (uint8_t)(1U << (i % 8));
			continue;
		}
		entry_claim(st, e);
		e->mark = a->mark;
	}
}

uint64_t store_retain_end(struct store *st, struct area *a, uint64_t gen)
{
	struct entry *e, *next;
	uint64_t n = 0;

	if (!a->reconciling || gen != a->gen)
		return 0;
	a->reconciling = false;
	for (e = a->head; e; e = next) {
		next = e->anext;
		if (e->claimed && e->mark != a->mark) {
			store_drop(st, e);
			n++;
		}
	}
	return n;
}

static void drop_unclaimed_head(struct store *st)
{
	store_drop(st, st->uhead);
}

uint64_t store_expire_unclaimed(struct store *st, int64_t now_ms, int64_t ttl_ms)
{
	uint64_t n = 0;

	while (st->uhead && now_ms - st->uhead->arrived_ms >= ttl_ms) {
		drop_unclaimed_head(st);
		n++;
	}
	return n;
}

uint64_t store_drop_unclaimed(struct store *st, uint64_t want)
{
	uint64_t n = 0;

	while (st->uhead && n < want) {
		drop_unclaimed_head(st);
		n++;
	}
	return n;
}
