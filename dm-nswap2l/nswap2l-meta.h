/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The metadata device's format (version 2): where the slot map of a
 * device with the metadata:<dev> feature survives reboots and crashes.
 * Everything is little-endian, in 4 KiB blocks:
 *
 *   block 0, 1       superblock copies
 *   2 .. 2+M-1       map area 0: M map blocks
 *   2+M .. 2+2M-1    map area 1
 *   2+2M, 2+2M+1     the Network RAM block of area 0, of area 1
 *
 * A commit of generation G writes the map into area G % 2 (only the
 * blocks changed since that area was last written) and its Network RAM
 * block, flushes, then writes
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
 * its volatile flags (SME_PERSISTENT, slotmap.h).
 *
 * The Network RAM block names what a Network RAM entry's group means: the
 * servers (by address) at each index of the device, each group's members,
 * and the version from which a loaded device hands out new ones (above
 * every version a write may have used before the commit that follows).
 * A load adds the servers back at their indices, with the groups and the
 * device id (the UUID's first 8 bytes) the servers know the device by;
 * reconciling with each server then finds which copies it still holds.
 *
 * Version 1 (no Network RAM block) is read too: its Network RAM slots are
 * lost at load; a device with room for the two blocks is rewritten in
 * version 2 by the load's commit, one without stays in version 1.
 */
#ifndef N2L_META_H
#define N2L_META_H

#include <linux/crc32c.h>
#include <linux/kernel.h>
#include <linux/types.h>

#define N2L_META_MAGIC		0x314154454d4c324eULL	/* "N2LMETA1" */
#define N2L_META_VERSION	2
#define N2L_META_V1		1	/* without the Network RAM blocks */
#define N2L_META_BLOCK		4096
#define N2L_META_CSUM_SEED	0x6e326c6dU
#define N2L_META_SB_BLOCKS	2
#define N2L_META_ENTRIES	510	/* map entries per map block */
#define N2L_META_SERVERS	64	/* server indices of a device */
#define N2L_META_GROUPS		256	/* replica groups (SME_GROUPS) */
#define N2L_META_REPLICAS	3	/* members a group has at most */
#define N2L_META_NO_SERVER	0xff	/* a group's unused member */

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

/* A server's address: an AF_INET or AF_INET6 socket address, or none. */
struct n2l_meta_server {
	__le16 family;		/* 0: no server at this index */
	__be16 port;
	u8 addr[16];		/* IPv4 in the first 4 bytes */
} __packed;

struct n2l_meta_netram_block {
	__le32 csum;
	__le32 servers;		/* N2L_META_SERVERS */
	__le64 gen;		/* of the commit that wrote it */
	__le64 vers_floor;	/* a loaded device's first version */
	__le64 reserved;
	u8 groups[N2L_META_GROUPS][N2L_META_REPLICAS];	/* sorted members */
	struct n2l_meta_server server[N2L_META_SERVERS];
} __packed;

static inline u32 n2l_meta_map_blocks(u32 nr_slots)
{
	return DIV_ROUND_UP(nr_slots, N2L_META_ENTRIES);
}

/* Blocks a metadata device of format @version needs for @nr_slots. */
static inline u64 n2l_meta_blocks(u32 nr_slots, u32 version)
{
	return N2L_META_SB_BLOCKS + 2ULL * n2l_meta_map_blocks(nr_slots) +
	       (version > N2L_META_V1 ? 2 : 0);
}

/*
 * A block's checksum: the kernel's crc32c(~0, ...) of the block from the
 * byte after the checksum on, XORed with N2L_META_CSUM_SEED.
 */
static inline u32 n2l_meta_csum(const void *block)
{
	return crc32c(~0U, block + sizeof(__le32),
		      N2L_META_BLOCK - sizeof(__le32)) ^ N2L_META_CSUM_SEED;
}

struct n2l_store;

/* nswap2l-meta-netram.c */
u64 n2l_meta_netram_fill(struct n2l_store *s, struct n2l_meta_netram_block *nb,
			 u64 gen, struct n2l_meta_server *cache);
void n2l_meta_netram_committed(struct n2l_store *s, u64 floor);
int n2l_meta_netram_load(struct n2l_store *s,
			 const struct n2l_meta_netram_block *nb, u64 gen,
			 struct n2l_meta_server *cache, char **error);
int n2l_meta_netram_reattach(struct n2l_store *s,
			     const struct n2l_meta_server *cache);

#endif /* N2L_META_H */
