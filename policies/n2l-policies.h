/* SPDX-License-Identifier: GPL-2.0-only */
/* The policies built into nswap2l.ko (and into the userspace tools). */
#ifndef N2L_POLICIES_H
#define N2L_POLICIES_H

#include "n2l-policy.h"

extern struct n2l_placement_type n2l_placement_netram_first;
extern struct n2l_prefetch_type n2l_prefetch_none;
extern struct n2l_prefetch_type n2l_prefetch_rr;
extern struct n2l_prefetch_type n2l_prefetch_random;
extern struct n2l_prefetch_type n2l_prefetch_lrs;
extern struct n2l_prefetch_type n2l_prefetch_mrs;
extern struct n2l_prefetch_type n2l_prefetch_auto;

int n2l_builtin_policies_register(void);
void n2l_builtin_policies_unregister(void);

#endif /* N2L_POLICIES_H */
