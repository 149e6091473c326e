/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The metadata device's format (version 1): where the slot map of a
 * device with the metadata:<dev> feature survives reboots and crashes.
 * Everything is little-endian, in 4 KiB blocks:
 *
 *   block 0, 1       superblock copies
 *   2 .. 2+M-1       map area 0: M map blocks
 *   2+M .. 2+2M-1    map area 1
 *
 * A commit of generation G writes the map into area G % 2 (only the
 * blocks changed since that area was last written), flushes, then writes
 * the superblock of G into block G % 2 with FUA. The committed map is the
 * valid superblock of the highest generation and its area: a crash
 * before the superblock's write leaves G - 1 and its area, untouched by
 * the commit of G. Each block's checksum is the kernel's crc32c(~0, ...)
 * (CRC-32C without its final inversion) of the block from the byte after
 * the checksum on, XORed with N2L_META_CSUM_SEED.
 *
 * Formatting a zeroed device commits the empty map twice: generation 1
 * (block 1, area 1) and generation 2 (block 0, area 0), every map block
 * of both areas written; loading a map commits it once, whole, into the
 * other area. So every map block of the committed area has been written.
 *
 * A map entry is the slot's medium (bits 0..1: enum n2l_medium), its
 * lost flag (bit 4, SME_LOST << 2, with no medium and no location) and
 * its location (bits 8..63: a block of Flash or disk, below 2^32; for
 * Network RAM the replica group and version), the in-memory entry less
 * its volatile flags (SME_PERSISTENT, slotmap.h). A slot on Network RAM
 * is lost when the map is loaded: its copies are not looked for yet.
 */
#ifndef N2L_META_H
#define N2L_META_H

#include <linux/kernel.h>
#include <linux/types.h>

#define N2L_META_MAGIC		0x314154454d4c324eULL	/* "N2LMETA1" */
#define N2L_META_VERSION	1
#define N2L_META_BLOCK		4096
#define N2L_META_CSUM_SEED	0x6e326c6dU
#define N2L_META_SB_BLOCKS	2
#define N2L_META_ENTRIES	510	/* map entries per map block */

/* Superblock flags */
#define N2L_META_CLEAN		0x1	/* written as the device closed */

struct n2l_meta_sb {
	__le32 csum;
	__le32 version;
	__le64 magic;
	u8 uuid[16];
	__le64 gen;
	__le32 nr_slots;
	__le32 map_blocks;	/* per area */
	__le32 flash_blocks;	/* of the media the map was written for */
	__le32 disk_blocks;
	__le32 flags;
	__le32 entries;		/* N2L_META_ENTRIES */
	__le64 commits;		/* since the format, this one included */
} __packed;

struct n2l_meta_map_block {
	__le32 csum;
	__le32 index;		/* within its area */
	__le64 gen;		/* of the commit that wrote it */
	__le64 entries[N2L_META_ENTRIES];
} __packed;

static inline u32 n2l_meta_map_blocks(u32 nr_slots)
{
	return DIV_ROUND_UP(nr_slots, N2L_META_ENTRIES);
}

/* Blocks a metadata device needs for @nr_slots. */
static inline u64 n2l_meta_blocks(u32 nr_slots)
{
	return N2L_META_SB_BLOCKS + 2ULL * n2l_meta_map_blocks(nr_slots);
}

#endif /* N2L_META_H */
