// SPDX-License-Identifier: GPL-2.0-only
/*
 * random: candidates chosen uniformly at random, the policy that knows
 * nothing and so shows what knowing the swap-out order is worth. The
 * candidates are a dense array plus each slot's index in it, so that
 * adding, removing and drawing are all O(1).
 */
#include "n2l-policies.h"

#define RANDOM_NIL	U32_MAX		/* index of a slot not a candidate */

struct random_policy {
	struct n2l_prefetch base;
	u32 *members;		/* the candidates, in no order */
	u32 *index;		/* per slot: where in members, or RANDOM_NIL */
	u32 count;
};

static struct random_policy *to_random(struct n2l_prefetch *p)
{
	return container_of(p, struct random_policy, base);
}

static void random_destroy(struct n2l_prefetch *p)
{
	struct random_policy *r = to_random(p);

	n2l_free(r->members);
	n2l_free(r->index);
	n2l_free(r);
}

static struct n2l_prefetch *random_create(u32 nr_slots)
{
	struct random_policy *r = n2l_zalloc(sizeof(*r));
	u32 i;

	if (!r)
		return NULL;
	r->members = n2l_zalloc((size_t)nr_slots * sizeof(u32));
	r->index = n2l_zalloc((size_t)nr_slots * sizeof(u32));
	if (!r->members || !r->index) {
		random_destroy(&r->base);
		return NULL;
	}
	for (i = 0; i < nr_slots; i++)
		r->index[i] = RANDOM_NIL;
	return &r->base;
}

static void random_swap(struct random_policy *r, u32 i, u32 j)
{
	u32 a = r->members[i], b = r->members[j];

	r->members[i] = b;
	r->members[j] = a;
	r->index[b] = i;
	r->index[a] = j;
}

/* The last member takes the removed one's place. */
static void random_remove(struct random_policy *r, u32 s)
{
	u32 i = r->index[s];

	if (i == RANDOM_NIL)
		return;
	random_swap(r, i, --r->count);
	r->index[s] = RANDOM_NIL;
}

static void random_on_write(struct n2l_prefetch *p, n2l_slot_t slot,
			    enum n2l_medium m)
{
	struct random_policy *r = to_random(p);
	u32 s = from_slot(slot);

	if (m != N2L_NETRAM) {
		random_remove(r, s);
	} else if (r->index[s] == RANDOM_NIL) {
		r->index[s] = r->count;
		r->members[r->count++] = s;
	}
}

static void random_on_free(struct n2l_prefetch *p, n2l_slot_t slot)
{
	random_remove(to_random(p), from_slot(slot));
}

/* A partial Fisher-Yates shuffle: n distinct candidates, uniformly. */
static u32 random_select(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n)
{
	struct random_policy *r = to_random(p);
	u32 i;

	n = min(n, r->count);
	for (i = 0; i < n; i++) {
		random_swap(r, i, i + n2l_random_u32() % (r->count - i));
		victims[i] = to_slot(r->members[i]);
	}
	return n;
}

struct n2l_prefetch_type n2l_prefetch_random = {
	.base = {
		.name = "random",
		.version = { 1, 0, 0 },
		.kind = N2L_POLICY_PREFETCH,
		.owner = THIS_MODULE,
	},
	.create = random_create,
	.destroy = random_destroy,
	.on_write = random_on_write,
	.on_free = random_on_free,
	.select = random_select,
};
