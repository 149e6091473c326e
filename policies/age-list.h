/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The candidates of the lrs and mrs prefetch policies, in the order of
 * their last swap-out to Network RAM: a doubly linked list threaded
 * through two arrays indexed by slot, so that every event is O(1) and the
 * memory is 8 bytes per slot of the device, whatever happens. The two
 * policies differ only in which end they select from.
 */
#ifndef N2L_AGE_LIST_H
#define N2L_AGE_LIST_H

#include "n2l-policy.h"

struct age_policy {
	struct n2l_prefetch base;
	u32 *prev, *next;	/* nr_slots + 1 entries; the last is the head */
	u32 head;		/* == nr_slots */
	u32 count;
};

/* For a policy that embeds the list: 0 or -ENOMEM; exit copes with a failed init. */
int age_list_init(struct age_policy *a, u32 nr_slots);
void age_list_exit(struct age_policy *a);

struct n2l_prefetch *age_policy_create(u32 nr_slots);
void age_policy_destroy(struct n2l_prefetch *p);
void age_policy_on_write(struct n2l_prefetch *p, n2l_slot_t slot,
			 enum n2l_medium m);
void age_policy_on_free(struct n2l_prefetch *p, n2l_slot_t slot);
/* Up to @n candidates from the oldest or from the newest end. */
u32 age_policy_select(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n,
		      bool oldest_first);

#endif /* N2L_AGE_LIST_H */
