// SPDX-License-Identifier: GPL-2.0-only
/* The swap-out order of Network RAM slots, for lrs and mrs (age-list.h). */
#include "age-list.h"

#define AGE_NIL	U32_MAX		/* prev[] of a slot not in the list */

static struct age_policy *to_age(struct n2l_prefetch *p)
{
	return container_of(p, struct age_policy, base);
}

int age_list_init(struct age_policy *a, u32 nr_slots)
{
	size_t bytes = ((size_t)nr_slots + 1) * sizeof(u32);
	u32 i;

	a->prev = n2l_zalloc(bytes);
	a->next = n2l_zalloc(bytes);
	if (!a->prev || !a->next)
		return -ENOMEM;
	for (i = 0; i < nr_slots; i++)
		a->prev[i] = AGE_NIL;
	a->head = nr_slots;
	a->prev[a->head] = a->head;
	a->next[a->head] = a->head;
	return 0;
}

void age_list_exit(struct age_policy *a)
{
	n2l_free(a->prev);
	n2l_free(a->next);
}

struct n2l_prefetch *age_policy_create(u32 nr_slots)
{
	struct age_policy *a = n2l_zalloc(sizeof(*a));

	if (!a)
		return NULL;
	if (age_list_init(a, nr_slots)) {
		age_policy_destroy(&a->base);
		return NULL;
	}
	return &a->base;
}

void age_policy_destroy(struct n2l_prefetch *p)
{
	struct age_policy *a = to_age(p);

	age_list_exit(a);
	n2l_free(a);
}

static void age_unlink(struct age_policy *a, u32 s)
{
	if (a->prev[s] == AGE_NIL)
		return;
	a->next[a->prev[s]] = a->next[s];
	a->prev[a->next[s]] = a->prev[s];
	a->prev[s] = AGE_NIL;
	a->count--;
}

/* The newest end is just before the head. */
static void age_append(struct age_policy *a, u32 s)
{
	u32 last = a->prev[a->head];

	a->prev[s] = last;
	a->next[s] = a->head;
	a->next[last] = s;
	a->prev[a->head] = s;
	a->count++;
}

void age_policy_on_write(struct n2l_prefetch *p, n2l_slot_t slot,
			 enum n2l_medium m)
{
	struct age_policy *a = to_age(p);
	u32 s = from_slot(slot);

	age_unlink(a, s);
	if (m == N2L_NETRAM)
		age_append(a, s);
}

void age_policy_on_free(struct n2l_prefetch *p, n2l_slot_t slot)
{
	age_unlink(to_age(p), from_slot(slot));
}

u32 age_policy_select(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n,
		      bool oldest_first)
{
	struct age_policy *a = to_age(p);
	u32 got = 0, s;

	s = oldest_first ? a->next[a->head] : a->prev[a->head];
	while (s != a->head && got < n) {
		victims[got++] = to_slot(s);
		s = oldest_first ? a->next[s] : a->prev[s];
	}
	return got;
}
