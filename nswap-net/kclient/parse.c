// SPDX-License-Identifier: GPL-2.0-only
/*
 * Checks of frames from servers (see parse.h). Nothing here trusts a
 * field it has not checked, and nothing depends on the kernel but the
 * byte order helpers, which userspace gets from n2l-proto.h.
 */
#ifdef __KERNEL__
#include <linux/string.h>
#else
#include <string.h>
#endif
#include "parse.h"

#define le16(x)	n2l_le16_to_cpu(x)
#define le32(x)	n2l_le32_to_cpu(x)
#define le64(x)	n2l_le64_to_cpu(x)

const char *n2l_check_hdr(const struct n2l_hdr *h, u32 *len)
{
	long want;

	if (le32(h->magic) != N2L_MAGIC)
		return "bad magic";
	if (h->version != N2L_PROTO_VERSION)
		return "unsupported protocol version";
	want = n2l_payload_len(h);
	if (want < 0)
		return "malformed header";
	if ((unsigned long)want != le32(h->len))
		return "payload length does not match the header";
	*len = (u32)want;
	return NULL;
}

const char *n2l_check_reply(const struct n2l_hdr *h, u8 op, u64 key,
			    u32 count, u64 vers)
{
	if (h->opcode != op || le64(h->key) != key ||
	    le32(h->count) != count || le64(h->vers) != vers)
		return "reply does not match its request";
	return NULL;
}

const char *n2l_check_srvop(const struct n2l_hdr *h)
{
	if (h->opcode != N2L_OP_MOVED && h->opcode != N2L_OP_RETURN)
		return "unexpected request from server";
	if (le64(h->key) || le64(h->vers))
		return "request from server with key or version set";
	return NULL;
}

const char *n2l_parse_copies(const struct n2l_kv *kvs, u32 n, u64 nr_keys,
			     struct n2l_copy *out)
{
	u32 i;

	for (i = 0; i < n; i++) {
		out[i].key = le64(kvs[i].key);
		out[i].vers = le64(kvs[i].vers);
		if (out[i].key >= nr_keys)
			return "page of a slot the device does not have";
		if (!out[i].vers || out[i].vers > N2L_VERS_MAX)
			return "page of an impossible version";
	}
	return NULL;
}

const char *n2l_parse_addr_field(const struct n2l_addr *a, char *out)
{
	size_t n = strnlen(a->addr, N2L_ADDR_LEN);
	size_t i;

	if (!n || n == N2L_ADDR_LEN)
		return "address not NUL-terminated";
	for (i = n; i < N2L_ADDR_LEN; i++)
		if (a->addr[i])
			return "address padding not zero";
	memcpy(out, a->addr, n + 1);
	return NULL;
}

const char *n2l_parse_info(const struct n2l_info *wire,
			   struct n2l_info_host *out)
{
	out->epoch = le64(wire->epoch);
	out->capacity = le64(wire->capacity_pages);
	out->free = le64(wire->free_pages);
	out->held = le64(wire->held_pages);
	out->state = le32(wire->state);
	if (!out->epoch)
		return "server without an epoch";
	if (out->state > N2L_SERVER_DRAINING || wire->reserved)
		return "malformed server information";
	return NULL;
}
