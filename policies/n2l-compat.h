/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The few kernel facilities that the kernel-independent parts of nswap2l
 * (slot map, allocators, policies, registry) use, so that the same source
 * files build into the module and into userspace unit tests and the trace
 * simulator. In the kernel this is a set of includes; in userspace,
 * userspace/include/n2l-compat-user.h reimplements them with the same
 * names and semantics.
 */
#ifndef N2L_COMPAT_H
#define N2L_COMPAT_H

#ifdef __KERNEL__

#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/list.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/types.h>

#define n2l_zalloc(size)	kvzalloc((size), GFP_KERNEL)
#define n2l_free(p)		kvfree(p)

#define n2l_random_u32()	get_random_u32()

#define N2L_DEFINE_LOCK(name)	DEFINE_SPINLOCK(name)
#define n2l_lock(l)		spin_lock(l)
#define n2l_unlock(l)		spin_unlock(l)

#else

#include "n2l-compat-user.h"

#endif /* __KERNEL__ */

#define n2l_bitmap_bytes(nbits)	(BITS_TO_LONGS(nbits) * sizeof(unsigned long))

#endif /* N2L_COMPAT_H */
