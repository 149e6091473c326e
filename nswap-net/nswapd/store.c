// SPDX-License-Identifier: GPL-2.0-only
#include "store.h"
#include "../n2l-proto.h"

#include <stdlib.h>
#include <string.h>

#define STORE_MIN_BUCKETS	1024
#define STORE_MAX_SPARE		(2 * N2L_MAX_PAGES)

static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static inline size_t bucket_of(const struct store *st, uint64_t client_id, uint64_t key)
{
	return (size_t)(mix64(key ^ mix64(client_id)) & (st->nbuckets - 1));
}

int store_init(struct store *st, const struct logger *log, uint32_t chunk_pages,
	       bool lock, bool require_lock)
{
	memset(st, 0, sizeof(*st));
	pool_init(&st->pool, log, chunk_pages, lock, require_lock);
	st->nbuckets = STORE_MIN_BUCKETS;
	st->buckets = calloc(st->nbuckets, sizeof(*st->buckets));
	return st->buckets ? 0 : -1;
}

void store_destroy(struct store *st)
{
	while (st->clients)
		store_client_remove(st, st->clients);
	pool_destroy(&st->pool);
	while (st->spare) {
		struct entry *e = st->spare;

		st->spare = e->hnext;
		free(e);
	}
	st->nspare = 0;
	free(st->buckets);
	st->buckets = NULL;
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
			size_t b = (size_t)(mix64(e->key ^ mix64(e->client->id)) & (nb - 1));

			n = e->hnext;
			e->hnext = nbk[b];
			nbk[b] = e;
		}
	}
	free(st->buckets);
	st->buckets = nbk;
	st->nbuckets = nb;
}

struct client *store_client(struct store *st, uint64_t id, bool create)
{
	struct client *c;

	for (c = st->clients; c; c = c->next)
		if (c->id == id)
			return c;
	if (!create)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->id = id;
	c->next = st->clients;
	if (st->clients)
		st->clients->prev = c;
	st->clients = c;
	st->nclients++;
	return c;
}

void store_client_remove(struct store *st, struct client *c)
{
	store_free_all(st, c);
	if (c->prev)
		c->prev->next = c->next;
	else
		st->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	st->nclients--;
	free(c);
}

static struct entry *find_key(struct store *st, struct client *c, uint64_t key)
{
	struct entry *e = st->buckets[bucket_of(st, c->id, key)];

	for (; e; e = e->hnext)
		if (e->key == key && e->client == c)
			return e;
	return NULL;
}

struct entry *store_find(struct store *st, struct client *c, uint64_t key, uint32_t vers)
{
	struct entry *e = st->buckets[bucket_of(st, c->id, key)];

	for (; e; e = e->hnext)
		if (e->key == key && e->vers == vers && e->client == c)
			return e;
	return NULL;
}

static void client_list_del(struct client *c, struct entry *e)
{
	if (e->cprev)
		e->cprev->cnext = e->cnext;
	else
		c->head = e->cnext;
	if (e->cnext)
		e->cnext->cprev = e->cprev;
	else
		c->tail = e->cprev;
}

static void client_list_add_tail(struct client *c, struct entry *e)
{
	e->cnext = NULL;
	e->cprev = c->tail;
	if (c->tail)
		c->tail->cnext = e;
	else
		c->head = e;
	c->tail = e;
}

void store_mark_moving(struct store *st, struct entry *e, uint64_t move_id)
{
	if (!e->move_id) {
		st->moving++;
		e->client->moving++;
	}
	e->move_id = move_id;
}

void store_unmark_moving(struct store *st, struct entry *e)
{
	if (e->move_id) {
		st->moving--;
		e->client->moving--;
		e->move_id = 0;
	}
}

void store_drop(struct store *st, struct entry *e)
{
	struct entry **pp = &st->buckets[bucket_of(st, e->client->id, e->key)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	store_unmark_moving(st, e);
	client_list_del(e->client, e);
	e->client->held--;
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

/* A new entry from the reserved structs and pool pages. */
static struct entry *entry_new(struct store *st, struct client *c, uint64_t key,
			       uint32_t vers, const uint8_t *page)
{
	struct entry *e = st->spare;
	size_t b;

	st->spare = e->hnext;
	st->nspare--;
	e->client = c;
	e->key = key;
	e->vers = vers;
	e->move_id = 0;
	e->seq = ++st->seq;
	pool_take(&st->pool, &e->chunk, &e->idx);
	memcpy(pool_addr(e->chunk, e->idx), page, N2L_PAGE_SIZE);
	b = bucket_of(st, c->id, key);
	e->hnext = st->buckets[b];
	st->buckets[b] = e;
	client_list_add_tail(c, e);
	c->held++;
	st->used++;
	return e;
}

/* New contents for e: a new write, so it is young again and not moving. */
static void entry_rewrite(struct store *st, struct entry *e, uint32_t vers,
			  const uint8_t *page)
{
	struct client *c = e->client;

	store_unmark_moving(st, e);
	e->vers = vers;
	e->seq = ++st->seq;
	memcpy(pool_addr(e->chunk, e->idx), page, N2L_PAGE_SIZE);
	client_list_del(c, e);
	client_list_add_tail(c, e);
}

/*
 * Reserve room for `fresh` new pages within capacity: pool slots and entry
 * structs, so that what follows cannot fail half-way.
 */
static int room_for(struct store *st, uint64_t fresh)
{
	if (fresh > store_free(st))
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

int store_put(struct store *st, struct client *c, uint64_t key, uint32_t n,
	      uint32_t vers, const uint8_t *pages)
{
	uint64_t fresh = 0;
	int rc;

	for (uint32_t i = 0; i < n; i++)
		if (!find_key(st, c, key + i))
			fresh++;
	rc = room_for(st, fresh);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *page = pages + (size_t)i * N2L_PAGE_SIZE;
		struct entry *e = find_key(st, c, key + i), *o, *next;

		if (!e) {
			entry_new(st, c, key + i, vers, page);
			continue;
		}
		/* The client's write supersedes every version of the key. */
		for (o = e->hnext; o; o = next) {
			next = o->hnext;
			if (o->key == key + i && o->client == c)
				store_drop(st, o);
		}
		entry_rewrite(st, e, vers, page);
	}
	maybe_grow(st);
	return STORE_OK;
}

bool store_get(struct store *st, struct client *c, uint64_t key, uint32_t n,
	       uint32_t vers, uint8_t *dst)
{
	struct entry *ents[N2L_MAX_PAGES];

	if (n > N2L_MAX_PAGES)
		return false;
	for (uint32_t i = 0; i < n; i++) {
		ents[i] = store_find(st, c, key + i, vers);
		if (!ents[i])
			return false;
	}
	for (uint32_t i = 0; i < n; i++)
		memcpy(dst + (size_t)i * N2L_PAGE_SIZE, entry_page(ents[i]), N2L_PAGE_SIZE);
	return true;
}

uint32_t store_inval(struct store *st, struct client *c, const void *kvs, uint32_t n)
{
	const uint8_t *p = kvs;
	uint32_t dropped = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct n2l_kv kv;
		struct entry *e;

		memcpy(&kv, p + (size_t)i * sizeof(kv), sizeof(kv));
		e = store_find(st, c, le64toh(kv.key), le32toh(kv.vers));
		if (e) {
			store_drop(st, e);
			dropped++;
		}
	}
	return dropped;
}

int store_put_versions(struct store *st, struct client *c, const void *kvs,
		       uint32_t n, const uint8_t *pages)
{
	const uint8_t *p = kvs;
	uint64_t fresh = 0;
	int rc;

	/* A pair listed twice counts once: the second finds the first. */
	for (uint32_t i = 0; i < n; i++) {
		struct n2l_kv kv;
		bool dup = false;

		memcpy(&kv, p + (size_t)i * sizeof(kv), sizeof(kv));
		if (store_find(st, c, le64toh(kv.key), le32toh(kv.vers)))
			continue;
		for (uint32_t j = 0; j < i && !dup; j++)
			dup = !memcmp(p + (size_t)j * sizeof(kv), &kv, 12);
		if (!dup)
			fresh++;
	}
	rc = room_for(st, fresh);
	if (rc)
		return rc;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *page = pages + (size_t)i * N2L_PAGE_SIZE;
		struct n2l_kv kv;
		struct entry *e;

		memcpy(&kv, p + (size_t)i * sizeof(kv), sizeof(kv));
		e = store_find(st, c, le64toh(kv.key), le32toh(kv.vers));
		if (e)
			entry_rewrite(st, e, e->vers, page);
		else
			entry_new(st, c, le64toh(kv.key), le32toh(kv.vers), page);
	}
	maybe_grow(st);
	return STORE_OK;
}

uint64_t store_free_all(struct store *st, struct client *c)
{
	uint64_t n = 0;

	while (c->head) {
		store_drop(st, c->head);
		n++;
	}
	return n;
}
