// SPDX-License-Identifier: GPL-2.0-only
/* The page store: semantics and exact accounting. */
#include <stdlib.h>
#include <string.h>

#include "../../../nswap-net/n2l-proto.h"
#include "store.h"
#include "unit.h"

static struct logger quiet = { .level = LOG_ERROR };

static uint8_t *pages(unsigned int n, int seed)
{
	uint8_t *p = malloc((size_t)n * N2L_PAGE_SIZE);

	for (size_t i = 0; i < (size_t)n * N2L_PAGE_SIZE; i++)
		p[i] = (uint8_t)(seed * 31 + i / N2L_PAGE_SIZE * 7 + i);
	return p;
}

static void kv(struct n2l_kv *k, uint64_t key, uint32_t vers)
{
	memset(k, 0, sizeof(*k));
	k->key = htole64(key);
	k->vers = htole32(vers);
}

static struct store *mk(uint64_t capacity)
{
	struct store *st = malloc(sizeof(*st));

	store_init(st, &quiet, 16, false, false);
	st->capacity = capacity;
	return st;
}

static void rm(struct store *st)
{
	store_destroy(st);
	free(st);
}

TEST(store_put_get_roundtrip)
{
	struct store *st = mk(1000);
	struct client *c = store_client(st, 1, true);
	uint8_t *a = pages(256, 1), *out = malloc(256 * N2L_PAGE_SIZE);

	CHECK_EQ(store_put(st, c, 100, 256, 7, a), STORE_OK);
	CHECK(store_get(st, c, 100, 256, 7, out));
	CHECK(!memcmp(a, out, 256 * N2L_PAGE_SIZE));
	CHECK(store_get(st, c, 150, 10, 7, out));
	CHECK(!memcmp(a + 50 * N2L_PAGE_SIZE, out, 10 * N2L_PAGE_SIZE));
	CHECK_EQ(c->held, 256);
	CHECK_EQ(st->used, 256);
	CHECK_EQ(store_free(st), 1000 - 256);
	CHECK_EQ(st->pool.used_slots, 256);
	free(a);
	free(out);
	rm(st);
}

TEST(store_replace_needs_no_room)
{
	struct store *st = mk(10);
	struct client *c = store_client(st, 1, true);
	uint8_t *a = pages(10, 1), *b = pages(10, 2), *out = malloc(10 * N2L_PAGE_SIZE);

	CHECK_EQ(store_put(st, c, 0, 10, 1, a), STORE_OK);
	CHECK_EQ(store_free(st), 0);
	CHECK_EQ(store_put(st, c, 0, 10, 2, b), STORE_OK);
	CHECK_EQ(st->used, 10);
	CHECK(!store_get(st, c, 0, 1, 1, out));
	CHECK(store_get(st, c, 0, 10, 2, out));
	CHECK(!memcmp(b, out, 10 * N2L_PAGE_SIZE));
	free(a);
	free(b);
	free(out);
	rm(st);
}

TEST(store_full_is_all_or_nothing)
{
	struct store *st = mk(10);
	struct client *c = store_client(st, 1, true);
	uint8_t *a = pages(8, 1), *out = malloc(8 * N2L_PAGE_SIZE);

	CHECK_EQ(store_put(st, c, 0, 8, 1, a), STORE_OK);
	/* keys 5..12: 5,6,7 replace, 8..12 new = 5 > 2 free */
	CHECK_EQ(store_put(st, c, 5, 8, 2, a), STORE_FULL);
	CHECK_EQ(st->used, 8);
	CHECK(store_get(st, c, 5, 3, 1, out));	/* untouched */
	CHECK(!store_get(st, c, 8, 1, 2, out));
	/* keys 6..9: 2 new = 2 free */
	CHECK_EQ(store_put(st, c, 6, 4, 3, a), STORE_OK);
	CHECK_EQ(st->used, 10);
	CHECK_EQ(store_free(st), 0);
	/* another client: nothing fits */
	CHECK_EQ(store_put(st, store_client(st, 2, true), 0, 1, 1, a), STORE_FULL);
	free(a);
	free(out);
	rm(st);
}

TEST(store_get_stale_on_any_mismatch)
{
	struct store *st = mk(100);
	struct client *c = store_client(st, 1, true), *d = store_client(st, 2, true);
	uint8_t *a = pages(4, 1), *out = malloc(5 * N2L_PAGE_SIZE);

	store_put(st, c, 10, 4, 5, a);
	CHECK(!store_get(st, c, 10, 4, 6, out));
	CHECK(!store_get(st, c, 10, 5, 5, out));	/* key 14 missing */
	CHECK(!store_get(st, c, 9, 2, 5, out));
	CHECK(!store_get(st, d, 10, 1, 5, out));	/* other client */
	store_put(st, c, 12, 1, 6, a);
	CHECK(!store_get(st, c, 10, 4, 5, out));
	CHECK(store_get(st, c, 10, 2, 5, out));
	CHECK(store_get(st, c, 12, 1, 6, out));
	free(a);
	free(out);
	rm(st);
}

TEST(store_inval_by_version)
{
	struct store *st = mk(100);
	struct client *c = store_client(st, 1, true);
	uint8_t *a = pages(4, 1), *out = malloc(N2L_PAGE_SIZE);
	struct n2l_kv kvs[4];

	store_put(st, c, 0, 4, 5, a);
	kv(&kvs[0], 0, 5);
	kv(&kvs[1], 1, 4);	/* wrong version: kept */
	kv(&kvs[2], 99, 5);	/* unknown: ignored */
	kv(&kvs[3], 0, 5);	/* twice */
	CHECK_EQ(store_inval(st, c, kvs, 4), 1);
	CHECK(!store_get(st, c, 0, 1, 5, out));
	CHECK(store_get(st, c, 1, 1, 5, out));
	CHECK_EQ(c->held, 3);
	CHECK_EQ(store_free(st), 97);
	free(a);
	free(out);
	rm(st);
}

TEST(store_free_all_and_pool_release)
{
	struct store *st = mk(100000);
	struct client *c = store_client(st, 1, true), *d = store_client(st, 2, true);
	uint8_t *a = pages(256, 1);

	for (int i = 0; i < 40; i++)
		CHECK_EQ(store_put(st, c, (uint64_t)i * 256, 256, 1, a), STORE_OK);
	store_put(st, d, 0, 10, 1, a);
	CHECK_EQ(st->used, 40 * 256 + 10);
	CHECK(st->nbuckets >= st->used);
	CHECK(st->pool.nchunks >= (40 * 256 + 10) / 16);
	CHECK_EQ(store_free_all(st, c), 40 * 256);
	CHECK_EQ(c->held, 0);
	CHECK_EQ(st->used, 10);
	CHECK_EQ(st->pool.used_slots, 10);
	CHECK(st->pool.nchunks <= 2);	/* empty chunks went back */
	CHECK_EQ(d->held, 10);
	free(a);
	rm(st);
}

TEST(store_prealloc_keeps_its_floor_mapped)
{
	struct store *st = mk(100000);
	struct client *c = store_client(st, 1, true);
	uint8_t *a = pages(256, 2);

	CHECK_EQ(pool_prealloc(&st->pool, 160), 0);
	CHECK_EQ(st->pool.nchunks, 10);		/* 16 pages a chunk */
	for (int i = 0; i < 4; i++)
		CHECK_EQ(store_put(st, c, (uint64_t)i * 256, 256, 1, a), STORE_OK);
	CHECK(st->pool.nchunks >= 64);
	CHECK_EQ(store_free_all(st, c), 4 * 256);
	/* Empty chunks went back, but never below the preallocated floor. */
	CHECK_EQ(st->pool.nchunks, 10);
	CHECK_EQ(st->pool.free_slots, 160);
	free(a);
	rm(st);
}

TEST(store_peer_put_keeps_other_versions)
{
	struct store *st = mk(10);
	struct client *c = store_client(st, 1, true);
	uint8_t *a = pages(3, 1), *b = pages(3, 2), *out = malloc(N2L_PAGE_SIZE);
	struct n2l_kv kvs[3];

	store_put(st, c, 0, 1, 9, a);
	kv(&kvs[0], 0, 3);
	kv(&kvs[1], 1, 3);
	kv(&kvs[2], 1, 3);	/* listed twice: counts once */
	CHECK_EQ(store_put_versions(st, c, kvs, 3, b), STORE_OK);
	CHECK_EQ(c->held, 3);
	CHECK(store_get(st, c, 0, 1, 9, out) && !memcmp(out, a, N2L_PAGE_SIZE));
	CHECK(store_get(st, c, 0, 1, 3, out) && !memcmp(out, b, N2L_PAGE_SIZE));
	/* the client's write replaces every version */
	CHECK_EQ(store_put(st, c, 0, 1, 10, a), STORE_OK);
	CHECK_EQ(c->held, 2);
	CHECK(!store_get(st, c, 0, 1, 3, out));
	CHECK(!store_get(st, c, 0, 1, 9, out));
	/* all or nothing */
	st->capacity = 2;
	kv(&kvs[0], 5, 1);
	CHECK_EQ(store_put_versions(st, c, kvs, 1, b), STORE_FULL);
	CHECK_EQ(c->held, 2);
	free(a);
	free(b);
	free(out);
	rm(st);
}

TEST(store_capacity_accounting)
{
	struct store *st = mk(5);
	struct client *c = store_client(st, 1, true);
	uint8_t *a = pages(5, 1);

	store_put(st, c, 0, 5, 1, a);
	st->capacity = 3;	/* shrunk below used */
	CHECK_EQ(store_free(st), 0);
	CHECK_EQ(store_put(st, c, 10, 1, 1, a), STORE_FULL);
	CHECK_EQ(store_put(st, c, 0, 1, 2, a), STORE_OK);	/* replace still fine */
	st->capacity = 8;
	CHECK_EQ(store_free(st), 3);
	free(a);
	rm(st);
}

TEST(store_moving_marks_and_age_order)
{
	struct store *st = mk(100);
	struct client *c = store_client(st, 1, true);
	uint8_t *a = pages(4, 1);
	struct entry *e;

	store_put(st, c, 0, 4, 1, a);
	CHECK_EQ(c->head->key, 0);
	e = store_find(st, c, 1, 1);
	store_mark_moving(st, e, 7);
	store_mark_moving(st, e, 7);
	CHECK_EQ(st->moving, 1);
	CHECK_EQ(c->moving, 1);
	store_put(st, c, 1, 1, 2, a);	/* rewritten: young, not moving */
	CHECK_EQ(st->moving, 0);
	CHECK_EQ(e->move_id, 0);
	CHECK_EQ(c->tail->key, 1);
	store_mark_moving(st, store_find(st, c, 2, 1), 8);
	store_drop(st, store_find(st, c, 2, 1));
	CHECK_EQ(st->moving, 0);
	CHECK_EQ(c->moving, 0);
	CHECK_EQ(st->used, 3);
	free(a);
	rm(st);
}

TEST(store_many_keys_hash)
{
	struct store *st = mk(1 << 20);
	struct client *c = store_client(st, 42, true);
	uint8_t *a = pages(1, 3), *out = malloc(N2L_PAGE_SIZE);
	int bad = 0;

	for (uint64_t k = 0; k < 20000; k++)
		store_put(st, c, k * 7919, 1, (uint32_t)k, a);
	for (uint64_t k = 0; k < 20000; k++)
		bad += !store_get(st, c, k * 7919, 1, (uint32_t)k, out);
	CHECK_EQ(bad, 0);
	CHECK(st->nbuckets >= 16384);
	free(a);
	free(out);
	rm(st);
}
