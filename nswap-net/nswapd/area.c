// SPDX-License-Identifier: GPL-2.0-only
/*
 * Areas, in a hash table keyed by SipHash of (identity, device), each of
 * an identity (ident.c). An area lives while it has pages, connections or
 * give-up batches.
 */
#include "auth.h"
#include "store.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#define AREA_MIN_BUCKETS	64

void area_tag(const char identity[N2L_ID_LEN], uint64_t device, char tag[9])
{
	uint8_t buf[N2L_ID_LEN + 8];
	uint64_t dev = htole64(device);

	memcpy(buf, identity, N2L_ID_LEN);
	memcpy(buf + N2L_ID_LEN, &dev, 8);
	auth_short_hash(buf, sizeof(buf), tag);
}

static size_t area_bucket(const struct store *st, const char identity[N2L_ID_LEN],
			  uint64_t device, size_t nb)
{
	uint8_t buf[N2L_ID_LEN + 8];
	uint64_t dev = htole64(device);

	memcpy(buf, identity, N2L_ID_LEN);
	memcpy(buf + N2L_ID_LEN, &dev, 8);
	return (size_t)(siphash24(&st->hkey, buf, sizeof(buf)) & (nb - 1));
}

/* Doubles the area table; on allocation failure chains just get longer. */
static void areas_grow(struct store *st)
{
	size_t nb = st->nabuckets ? st->nabuckets * 2 : AREA_MIN_BUCKETS;
	struct area **nbk;

	if (st->nabuckets && st->nareas < st->nabuckets)
		return;
	nbk = calloc(nb, sizeof(*nbk));
	if (!nbk)
		return;
	for (struct area *a = st->areas; a; a = a->next) {
		size_t b = area_bucket(st, a->identity, a->device, nb);

		a->hnext = nbk[b];
		nbk[b] = a;
	}
	free(st->abuckets);
	st->abuckets = nbk;
	st->nabuckets = nb;
}

struct area *store_area(struct store *st, const char identity[N2L_ID_LEN],
			uint64_t device, bool create)
{
	struct area *a;
	size_t b;

	if (st->nabuckets) {
		b = area_bucket(st, identity, device, st->nabuckets);
		for (a = st->abuckets[b]; a; a = a->hnext)
			if (a->device == device && !memcmp(a->identity, identity, N2L_ID_LEN))
				return a;
	}
	if (!create)
		return NULL;
	areas_grow(st);
	if (!st->nabuckets)
		return NULL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->ident = ident_get(st, identity);
	if (!a->ident) {
		free(a);
		return NULL;
	}
	a->ident->nareas++;
	memcpy(a->identity, identity, N2L_ID_LEN);
	a->device = device;
	a->serial = ++st->area_serial;
	a->mark = 1;
	area_tag(identity, device, a->tag);
	b = area_bucket(st, identity, device, st->nabuckets);
	a->hnext = st->abuckets[b];
	st->abuckets[b] = a;
	a->next = st->areas;
	if (st->areas)
		st->areas->prev = a;
	st->areas = a;
	st->nareas++;
	return a;
}

void store_area_remove(struct store *st, struct area *a)
{
	struct area **pp = &st->abuckets[area_bucket(st, a->identity, a->device, st->nabuckets)];

	store_free_all(st, a);
	while (*pp != a)
		pp = &(*pp)->hnext;
	*pp = a->hnext;
	if (a->prev)
		a->prev->next = a->next;
	else
		st->areas = a->next;
	if (a->next)
		a->next->prev = a->prev;
	st->nareas--;
	a->ident->nareas--;
	ident_maybe_free(st, a->ident);
	free(a);
}

bool store_area_maybe_remove(struct store *st, struct area *a)
{
	if (a->held || a->nconns || a->inflight)
		return false;
	store_area_remove(st, a);
	return true;
}
