// SPDX-License-Identifier: GPL-2.0-only
/* The page store: areas, versions, seals, unclaimed pages, reconciliation,
 * quotas, and exact accounting. */
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

static uint8_t *seals(unsigned int n, int seed)
{
	uint8_t *p = malloc((size_t)n * N2L_SEAL_LEN);

	for (size_t i = 0; i < (size_t)n * N2L_SEAL_LEN; i++)
		p[i] = (uint8_t)(seed * 13 + i);
	return p;
}

static uint8_t zseal[N2L_MAX_PAGES * N2L_SEAL_LEN];

/* The peer server whose PEER_PUTs the tests play. */
static const char peer_id[N2L_ID_LEN] = "srv";

static void kv(struct n2l_kv *k, uint64_t key, uint64_t vers)
{
	memset(k, 0, sizeof(*k));
	k->key = htole64(key);
	k->vers = htole64(vers);
}

static struct area *area_of(struct store *st, const char *identity, uint64_t device)
{
	char id[N2L_ID_LEN] = { 0 };

	memcpy(id, identity, strlen(identity));
	return store_area(st, id, device, true);
}

/* An area of the unnamed identity (an --insecure server's). */
static struct area *store_client(struct store *st, uint64_t device, bool create)
{
	return area_of(st, "", device);
}

static int put(struct store *st, struct area *a, uint64_t key, uint32_t n, uint64_t vers,
	       const uint8_t *pages)
{
	return store_put(st, a, key, n, vers, pages, zseal);
}

static bool get(struct store *st, struct area *a, uint64_t key, uint32_t n, uint64_t vers,
		uint8_t *out)
{
	static uint8_t sl[N2L_MAX_PAGES * N2L_SEAL_LEN];

	return store_get(st, a, key, n, vers, out, sl);
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
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(256, 1), *out = malloc(256 * N2L_PAGE_SIZE);

	CHECK_EQ(put(st, c, 100, 256, 7, a), STORE_OK);
	CHECK(get(st, c, 100, 256, 7, out));
	CHECK(!memcmp(a, out, 256 * N2L_PAGE_SIZE));
	CHECK(get(st, c, 150, 10, 7, out));
	CHECK(!memcmp(a + 50 * N2L_PAGE_SIZE, out, 10 * N2L_PAGE_SIZE));
	CHECK_EQ(c->held, 256);
	CHECK_EQ(st->used, 256);
	CHECK_EQ(store_free(st), 1000 - 256);
	CHECK_EQ(st->pool.used_slots, 256);
	free(a);
	free(out);
	rm(st);
}

TEST(store_same_version_replaces_needs_no_room)
{
	struct store *st = mk(10);
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(10, 1), *b = pages(10, 2), *out = malloc(10 * N2L_PAGE_SIZE);

	CHECK_EQ(put(st, c, 0, 10, 1, a), STORE_OK);
	CHECK_EQ(store_free(st), 0);
	CHECK_EQ(put(st, c, 0, 10, 1, b), STORE_OK);	/* same (key, vers) */
	CHECK_EQ(put(st, c, 0, 1, 2, b), STORE_FULL);	/* another version: a page more */
	CHECK_EQ(st->used, 10);
	CHECK(get(st, c, 0, 10, 1, out));
	CHECK(!memcmp(b, out, 10 * N2L_PAGE_SIZE));
	free(a);
	free(b);
	free(out);
	rm(st);
}

TEST(store_versions_live_side_by_side)
{
	struct store *st = mk(100);
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(2, 1), *b = pages(2, 2), *out = malloc(2 * N2L_PAGE_SIZE);
	uint8_t *sa = seals(2, 1), *sb = seals(2, 2), sout[2 * N2L_SEAL_LEN];
	struct n2l_kv k;

	CHECK_EQ(store_put(st, c, 5, 2, 20, a, sa), STORE_OK);
	CHECK_EQ(store_put(st, c, 5, 2, 19, b, sb), STORE_OK);	/* late, older */
	CHECK_EQ(c->held, 4);
	CHECK(store_get(st, c, 5, 2, 20, out, sout));
	CHECK(!memcmp(out, a, 2 * N2L_PAGE_SIZE) && !memcmp(sout, sa, sizeof(sout)));
	CHECK(store_get(st, c, 5, 2, 19, out, sout));
	CHECK(!memcmp(out, b, 2 * N2L_PAGE_SIZE) && !memcmp(sout, sb, sizeof(sout)));
	kv(&k, 5, 19);
	CHECK_EQ(store_inval(st, c, &k, 1), 1);
	CHECK(store_get(st, c, 5, 2, 20, out, sout));
	CHECK(!store_get(st, c, 5, 1, 19, out, sout));
	CHECK(store_get(st, c, 6, 1, 19, out, sout));
	CHECK(store_find(st, c, 5, N2L_VERS_MAX) == NULL);
	free(a);
	free(b);
	free(sa);
	free(sb);
	free(out);
	rm(st);
}

TEST(store_full_is_all_or_nothing)
{
	struct store *st = mk(10);
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(8, 1), *out = malloc(8 * N2L_PAGE_SIZE);

	CHECK_EQ(put(st, c, 0, 8, 1, a), STORE_OK);
	/* keys 5..12 vers 1: 5,6,7 replace, 8..12 new = 5 > 2 free */
	CHECK_EQ(put(st, c, 5, 8, 1, a), STORE_FULL);
	CHECK_EQ(st->used, 8);
	CHECK(get(st, c, 5, 3, 1, out));	/* untouched */
	CHECK(!get(st, c, 8, 1, 1, out));
	/* keys 6..9: 2 new = 2 free */
	CHECK_EQ(put(st, c, 6, 4, 1, a), STORE_OK);
	CHECK_EQ(st->used, 10);
	CHECK_EQ(store_free(st), 0);
	/* another area: nothing fits */
	CHECK_EQ(put(st, store_client(st, 2, true), 0, 1, 1, a), STORE_FULL);
	free(a);
	free(out);
	rm(st);
}

TEST(store_get_stale_on_any_mismatch)
{
	struct store *st = mk(100);
	struct area *c = store_client(st, 1, true), *d = store_client(st, 2, true);
	uint8_t *a = pages(4, 1), *out = malloc(5 * N2L_PAGE_SIZE);

	put(st, c, 10, 4, 5, a);
	CHECK(!get(st, c, 10, 4, 6, out));
	CHECK(!get(st, c, 10, 5, 5, out));	/* key 14 missing */
	CHECK(!get(st, c, 9, 2, 5, out));
	CHECK(!get(st, d, 10, 1, 5, out));	/* other area */
	put(st, c, 12, 1, 6, a);
	CHECK(get(st, c, 10, 4, 5, out));	/* version 6 of key 12 is another page */
	CHECK(!get(st, c, 11, 2, 6, out));
	CHECK(get(st, c, 12, 1, 6, out));
	free(a);
	free(out);
	rm(st);
}

TEST(store_inval_by_version)
{
	struct store *st = mk(100);
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(4, 1), *out = malloc(N2L_PAGE_SIZE);
	struct n2l_kv kvs[4];

	put(st, c, 0, 4, 5, a);
	kv(&kvs[0], 0, 5);
	kv(&kvs[1], 1, 4);	/* wrong version: kept */
	kv(&kvs[2], 99, 5);	/* unknown: ignored */
	kv(&kvs[3], 0, 5);	/* twice */
	CHECK_EQ(store_inval(st, c, kvs, 4), 1);
	CHECK(!get(st, c, 0, 1, 5, out));
	CHECK(get(st, c, 1, 1, 5, out));
	CHECK_EQ(c->held, 3);
	CHECK_EQ(store_free(st), 97);
	free(a);
	free(out);
	rm(st);
}

TEST(store_free_all_and_pool_release)
{
	struct store *st = mk(100000);
	struct area *c = store_client(st, 1, true), *d = store_client(st, 2, true);
	uint8_t *a = pages(256, 1);

	for (int i = 0; i < 40; i++)
		CHECK_EQ(put(st, c, (uint64_t)i * 256, 256, 1, a), STORE_OK);
	put(st, d, 0, 10, 1, a);
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
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(256, 2);

	CHECK_EQ(pool_prealloc(&st->pool, 160), 0);
	CHECK_EQ(st->pool.nchunks, 10);		/* 16 pages a chunk */
	for (int i = 0; i < 4; i++)
		CHECK_EQ(put(st, c, (uint64_t)i * 256, 256, 1, a), STORE_OK);
	CHECK(st->pool.nchunks >= 64);
	CHECK_EQ(store_free_all(st, c), 4 * 256);
	/* Empty chunks went back, but never below the preallocated floor. */
	CHECK_EQ(st->pool.nchunks, 10);
	CHECK_EQ(st->pool.free_slots, 160);
	free(a);
	rm(st);
}

TEST(store_peer_put_unclaimed)
{
	struct store *st = mk(10);
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(3, 1), *b = pages(3, 2), *out = malloc(N2L_PAGE_SIZE);
	uint8_t *sb = seals(3, 2), sout[N2L_SEAL_LEN], bm[1];
	struct n2l_kv kvs[3];

	put(st, c, 0, 1, 9, a);
	kv(&kvs[0], 0, 9);	/* claimed: never replaced */
	kv(&kvs[1], 1, 3);
	kv(&kvs[2], 1, 3);	/* listed twice: counts once */
	CHECK_EQ(store_peer_put(st, c, peer_id, kvs, 3, b, sb, 100), STORE_OK);
	CHECK_EQ(c->held, 2);
	CHECK_EQ(c->unclaimed, 1);
	CHECK_EQ(st->unclaimed, 1);
	CHECK(get(st, c, 0, 1, 9, out) && !memcmp(out, a, N2L_PAGE_SIZE));
	CHECK(store_get(st, c, 1, 1, 3, out, sout) && !memcmp(out, b + 2 * N2L_PAGE_SIZE, N2L_PAGE_SIZE));
	CHECK(!memcmp(sout, sb + 2 * N2L_SEAL_LEN, N2L_SEAL_LEN));
	/* an unclaimed page is replaced by the next PEER_PUT, and expires */
	CHECK_EQ(store_peer_put(st, c, peer_id, &kvs[1], 1, b, sb, 200), STORE_OK);
	CHECK_EQ(store_expire_unclaimed(st, 250, 100), 0);
	CHECK_EQ(store_expire_unclaimed(st, 300, 100), 1);
	CHECK_EQ(c->held, 1);
	/* RETAIN claims */
	CHECK_EQ(store_peer_put(st, c, peer_id, &kvs[1], 1, b, sb, 400), STORE_OK);
	store_retain(st, c, &kvs[1], 1, bm);
	CHECK_EQ(bm[0], 0);
	CHECK_EQ(c->unclaimed, 0);
	CHECK_EQ(store_expire_unclaimed(st, 100000, 100), 0);
	CHECK_EQ(c->held, 2);
	/* all or nothing */
	st->capacity = 2;
	kv(&kvs[0], 5, 1);
	CHECK_EQ(store_peer_put(st, c, peer_id, kvs, 1, b, sb, 0), STORE_FULL);
	CHECK_EQ(c->held, 2);
	/* shrinking drops unclaimed first, oldest first */
	st->capacity = 10;
	kv(&kvs[0], 6, 1);
	kv(&kvs[1], 7, 1);
	CHECK_EQ(store_peer_put(st, c, peer_id, kvs, 2, b, sb, 0), STORE_OK);
	CHECK_EQ(store_drop_unclaimed(st, 1), 1);
	CHECK(!store_find(st, c, 6, 1) && store_find(st, c, 7, 1));
	CHECK_EQ(store_drop_unclaimed(st, 5), 1);
	CHECK_EQ(c->held, 2);
	CHECK_EQ(st->unclaimed, 0);
	free(a);
	free(b);
	free(sb);
	free(out);
	rm(st);
}

TEST(store_reconciliation_generations)
{
	struct store *st = mk(100);
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(8, 1), bm[2];
	struct n2l_kv kvs[10];

	put(st, c, 0, 8, 1, a);			/* keys 0..7 */
	kv(&kvs[0], 50, 1);
	store_peer_put(st, c, peer_id, kvs, 1, a, zseal, 0);
	store_retain_begin(st, c, 7);
	kv(&kvs[0], 0, 1);
	kv(&kvs[1], 1, 1);
	kv(&kvs[2], 99, 1);	/* missing */
	kv(&kvs[3], 2, 2);	/* wrong version: missing */
	kv(&kvs[4], 3, 1);
	kv(&kvs[5], 4, 1);
	kv(&kvs[6], 5, 1);
	kv(&kvs[7], 6, 1);
	kv(&kvs[8], 77, 7);	/* missing: bit 8, in the second byte */
	store_retain(st, c, kvs, 9, bm);
	CHECK_EQ(bm[0], 0x0c);
	CHECK_EQ(bm[1], 0x01);
	put(st, c, 20, 1, 1, a);		/* after BEGIN: marked */
	CHECK_EQ(store_retain_end(st, c, 6), 0);	/* not current */
	CHECK_EQ(c->held, 10);
	CHECK_EQ(store_retain_end(st, c, 7), 2);	/* keys 2 and 7 */
	CHECK(!store_find(st, c, 2, 1) && !store_find(st, c, 7, 1));
	CHECK(store_find(st, c, 20, 1) && store_find(st, c, 50, 1));	/* unclaimed stays */
	CHECK_EQ(store_retain_end(st, c, 7), 0);	/* over */
	/* a new BEGIN makes the old generation stale */
	store_retain_begin(st, c, 8);
	store_retain_begin(st, c, 9);
	CHECK_EQ(store_retain_end(st, c, 8), 0);
	CHECK_EQ(store_retain_end(st, c, 9), 7);	/* nothing retained in 9 */
	CHECK_EQ(c->held, 1);
	CHECK_EQ(c->unclaimed, 1);
	free(a);
	rm(st);
}

TEST(store_areas_by_identity_and_quota)
{
	struct store *st = mk(1000);
	struct area *a1 = area_of(st, "alice", 1), *a2 = area_of(st, "alice", 2);
	struct area *b1 = area_of(st, "bob", 1);
	uint8_t *pg = pages(8, 1), *out = malloc(8 * N2L_PAGE_SIZE);

	CHECK(a1 != a2 && a1 != b1 && a1->ident == a2->ident && a1->ident != b1->ident);
	CHECK(area_of(st, "alice", 1) == a1);
	CHECK(strlen(a1->tag) == 8 && strcmp(a1->tag, b1->tag));
	st->quota = 10;
	CHECK_EQ(put(st, a1, 0, 8, 1, pg), STORE_OK);
	CHECK_EQ(store_area_free(st, a2), 2);
	CHECK_EQ(put(st, a2, 0, 3, 1, pg), STORE_FULL);
	CHECK_EQ(put(st, a2, 0, 2, 1, pg), STORE_OK);
	CHECK_EQ(put(st, b1, 0, 8, 1, pg), STORE_OK);
	CHECK(!get(st, b1, 0, 8, 7, out));
	CHECK_EQ(a1->ident->held, 10);
	CHECK_EQ(store_free_all(st, a1), 8);
	CHECK_EQ(a2->ident->held, 2);
	CHECK(store_area_maybe_remove(st, a1));
	CHECK(!store_area_maybe_remove(st, a2));
	CHECK_EQ(st->nareas, 2);
	free(pg);
	free(out);
	rm(st);
}

static unsigned int nidents(const struct store *st)
{
	unsigned int n = 0;

	for (const struct ident *id = st->idents; id; id = id->next)
		n++;
	return n;
}

/* A peer pays for its unclaimed pages until their client claims them. */
TEST(store_unclaimed_pages_charged_to_their_peer)
{
	static const char peer2[N2L_ID_LEN] = "srv2";
	struct store *st = mk(1000);
	struct area *a1 = area_of(st, "alice", 1), *a2 = area_of(st, "alice", 2);
	uint8_t *pg = pages(10, 1), bm[2];
	struct n2l_kv kvs[10];
	struct entry *e;

	st->quota = 10;
	for (int i = 0; i < 10; i++)
		kv(&kvs[i], i, 1);
	CHECK_EQ(store_peer_put(st, a2, peer_id, kvs, 9, pg, zseal, 0), STORE_OK);
	CHECK_EQ(a2->held, 9);
	CHECK_EQ(a2->ident->held, 0);
	CHECK_EQ(store_area_free(st, a1), 10);
	CHECK_EQ(nidents(st), 2);
	/* the peer's quota, not alice's */
	CHECK_EQ(store_peer_put(st, a1, peer_id, kvs, 2, pg, zseal, 0), STORE_FULL);
	CHECK_EQ(store_peer_put(st, a1, peer_id, kvs, 1, pg, zseal, 0), STORE_OK);
	CHECK_EQ(put(st, a1, 100, 10, 1, pg), STORE_OK);
	CHECK_EQ(store_area_free(st, a1), 0);
	/* claimed: alice's now, over her quota; the peer has room again */
	store_retain(st, a2, kvs, 3, bm);
	CHECK_EQ(bm[0], 0);
	CHECK_EQ(a1->ident->held, 13);
	e = store_find(st, a2, 0, 1);
	CHECK(e && e->claimed && e->payer == a2->ident);
	e = store_find(st, a2, 3, 1);
	CHECK(e && !e->claimed && e->payer != a2->ident && e->payer->held == 7);
	CHECK_EQ(put(st, a1, 200, 1, 1, pg), STORE_FULL);
	CHECK_EQ(store_peer_put(st, a1, peer_id, &kvs[5], 3, pg, zseal, 0), STORE_OK);
	/* sent again by another peer: that one pays */
	CHECK_EQ(store_peer_put(st, a2, peer2, &kvs[3], 1, pg, zseal, 5), STORE_OK);
	CHECK(e->payer->held == 1 && store_find(st, a1, 0, 1)->payer->held == 9);
	CHECK_EQ(nidents(st), 3);
	/* expired or dropped: a peer with nothing charged is forgotten */
	CHECK_EQ(store_expire_unclaimed(st, 10, 1), 10);
	CHECK_EQ(a1->held, 10);
	CHECK_EQ(a2->held, 3);
	CHECK_EQ(nidents(st), 1);
	CHECK_EQ(a1->ident->held, 13);
	free(pg);
	rm(st);
}

TEST(store_many_areas_hash)
{
	struct store *st = mk(1000);

	for (uint64_t d = 0; d < 2000; d++)
		CHECK(area_of(st, d & 1 ? "x" : "y", d) != NULL);
	CHECK_EQ(st->nareas, 2000);
	CHECK(st->nabuckets >= 2000);
	for (uint64_t d = 0; d < 2000; d++)
		CHECK_EQ(area_of(st, d & 1 ? "x" : "y", d)->device, d);
	CHECK_EQ(st->nareas, 2000);
	rm(st);
}

TEST(store_capacity_accounting)
{
	struct store *st = mk(5);
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(5, 1);

	put(st, c, 0, 5, 1, a);
	st->capacity = 3;	/* shrunk below used */
	CHECK_EQ(store_free(st), 0);
	CHECK_EQ(put(st, c, 10, 1, 1, a), STORE_FULL);
	CHECK_EQ(put(st, c, 0, 1, 1, a), STORE_OK);	/* replace still fine */
	CHECK_EQ(put(st, c, 0, 1, 2, a), STORE_FULL);	/* a new version is not */
	st->capacity = 8;
	CHECK_EQ(store_free(st), 3);
	free(a);
	rm(st);
}

TEST(store_moving_marks_and_age_order)
{
	struct store *st = mk(100);
	struct area *c = store_client(st, 1, true);
	uint8_t *a = pages(4, 1);
	struct entry *e;

	put(st, c, 0, 4, 1, a);
	CHECK_EQ(c->head->key, 0);
	e = store_find(st, c, 1, 1);
	store_mark_moving(st, e, 7);
	store_mark_moving(st, e, 7);
	CHECK_EQ(st->moving, 1);
	CHECK_EQ(c->moving, 1);
	put(st, c, 1, 1, 1, a);	/* rewritten: young, not moving */
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
	struct area *c = store_client(st, 42, true);
	uint8_t *a = pages(1, 3), *out = malloc(N2L_PAGE_SIZE);
	int bad = 0;

	for (uint64_t k = 0; k < 20000; k++)
		put(st, c, k * 7919, 1, k, a);
	for (uint64_t k = 0; k < 20000; k++)
		bad += !get(st, c, k * 7919, 1, k, out);
	CHECK_EQ(bad, 0);
	CHECK(st->nbuckets >= 16384);
	free(a);
	free(out);
	rm(st);
}
