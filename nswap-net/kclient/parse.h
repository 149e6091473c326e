/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the client believes of a frame from a server, decided before a byte
 * of its payload is used: plain C over the wire structures of n2l-proto.h,
 * so that it builds into the module and into a userspace fuzzer alike
 * (make fuzz-client). Each check returns NULL when all is well, or why it
 * is not, for the protocol error message.
 */
#ifndef N2L_PARSE_H
#define N2L_PARSE_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
#endif

#include "n2l-proto.h"

/* A copy on a server, in host byte order: slot and version. */
struct n2l_copy {
	u64 key;
	u64 vers;
};

struct n2l_info_host {
	u64 epoch;
	u64 capacity;
	u64 free;
	u64 held;
	u32 state;
};

/* A frame header from a server: *@len is its exact payload length. */
const char *n2l_check_hdr(const struct n2l_hdr *h, u32 *len);
/* Whether a reply answers the request of this opcode, key, count, vers. */
const char *n2l_check_reply(const struct n2l_hdr *h, u8 op, u64 key,
			    u32 count, u64 vers);
/* A request from the server: only MOVED and RETURN, never to a client. */
const char *n2l_check_srvop(const struct n2l_hdr *h);
/* @n entries into @out; keys must be below @nr_keys. */
const char *n2l_parse_copies(const struct n2l_kv *kvs, u32 n, u64 nr_keys,
			     struct n2l_copy *out);
/* A NUL-terminated, non-empty address into @out (N2L_ADDR_LEN bytes). */
const char *n2l_parse_addr_field(const struct n2l_addr *a, char *out);
const char *n2l_parse_info(const struct n2l_info *wire,
			   struct n2l_info_host *out);
/* Bit @i of a RETAIN reply: entry @i is missing. */
static inline bool n2l_retain_missing(const u8 *bitmap, u32 i)
{
	return bitmap[i / 8] & (1U << (i % 8));
}

#endif /* N2L_PARSE_H */
