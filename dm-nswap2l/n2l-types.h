/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Index types. A slot is a 4 KiB unit of the virtual device; a block is a
 * slot-sized unit on one medium. They are different number spaces, so they
 * are different __bitwise types and sparse refuses to mix them, the way
 * dm-cache keeps origin and cache blocks apart.
 */
#ifndef N2L_TYPES_H
#define N2L_TYPES_H

#include "n2l-compat.h"

typedef u32 __bitwise n2l_slot_t;
typedef u32 __bitwise n2l_blk_t;

static inline n2l_slot_t to_slot(u32 s)
{
	return (__force n2l_slot_t)s;
}

static inline u32 from_slot(n2l_slot_t s)
{
	return (__force u32)s;
}

static inline n2l_blk_t to_blk(u32 b)
{
	return (__force n2l_blk_t)b;
}

static inline u32 from_blk(n2l_blk_t b)
{
	return (__force u32)b;
}

/*
 * Media, fastest first. The numeric values are stored in the slot map and
 * index every per-medium array; N2L_NONE marks a slot that holds no data.
 */
enum n2l_medium {
	N2L_NONE = 0,
	N2L_NETRAM = 1,
	N2L_FLASH = 2,
	N2L_DISK = 3,
};

#define N2L_NR_MEDIA	4	/* array size, N2L_NONE included */
#define N2L_SLOT_SECTORS 8
#define N2L_SLOT_SHIFT	3	/* log2(N2L_SLOT_SECTORS) */

static inline const char *n2l_medium_name(enum n2l_medium m)
{
	static const char * const names[N2L_NR_MEDIA] = {
		"none", "netram", "flash", "disk"
	};

	return (unsigned int)m < N2L_NR_MEDIA ? names[m] : "?";
}

#define for_each_medium(m) \
	for ((m) = N2L_NETRAM; (m) <= N2L_DISK; (m)++)

#endif /* N2L_TYPES_H */
