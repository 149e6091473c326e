// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the kernel client's checks of what a server sends
 * (nswap-net/kclient/parse.c, built here unchanged), driven the way
 * recv.c drives them. The input is a stream of frames from a server:
 *
 *   byte 0..7   the device's number of slots (nr_keys), little-endian
 *   then        frames: a 48-byte header, then as many payload bytes as
 *               the header passed n2l_check_hdr() with
 *
 * Every header is checked first; a header the checks refuse ends the
 * stream, as it ends the connection. A reply is matched against a fixed
 * table of requests in flight (every opcode a client sends); its info or
 * RETAIN bitmap is parsed as recv.c would. A request from the server
 * must be MOVED or RETURN; its copies and address are parsed.
 *
 * Beyond memory errors (ASan, UBSan), what each accepted frame implies is
 * asserted: the payload length the client then reads is the length the
 * protocol gives for that opcode and count, never above N2L_MAX_PAYLOAD;
 * every accepted copy names a slot of the device and a possible version;
 * an accepted address is a NUL-terminated string within its field.
 */
#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

struct inflight {
	u8 op;
	u64 key;
	u32 count;
	u64 vers;
};

/* One request of each kind the client sends, as recv.c would hold them. */
static const struct inflight requests[] = {
	{ N2L_OP_HELLO, 0, 0, 0 },	{ N2L_OP_AUTH, 0, 0, 0 },
	{ N2L_OP_PUT, 5, 3, 9 },	{ N2L_OP_GET, 5, 3, 9 },
	{ N2L_OP_INVAL, 0, 17, 0 },	{ N2L_OP_STATUS, 0, 0, 0 },
	{ N2L_OP_FREE_ALL, 0, 0, 0 },	{ N2L_OP_RETAIN_BEGIN, 4, 0, 0 },
	{ N2L_OP_RETAIN, 0, 100, 0 },	{ N2L_OP_RETAIN_END, 4, 0, 0 },
};

static void reply(const struct n2l_hdr *h, const u8 *payload, u32 len)
{
	struct n2l_info_host info;
	size_t i;
	u32 k, missing = 0;

	for (i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
		const struct inflight *r = &requests[i];

		if (n2l_check_reply(h, r->op, r->key, r->count, r->vers))
			continue;
		assert(h->opcode == r->op);
		if (n2l_le32_to_cpu(h->status) != N2L_ST_OK)
			assert(len == 0);
		else if (r->op == N2L_OP_STATUS || r->op == N2L_OP_AUTH)
			n2l_parse_info((const struct n2l_info *)payload, &info);
		else if (r->op == N2L_OP_HELLO)
			n2l_parse_info((const struct n2l_info *)
				       (payload + sizeof(struct n2l_challenge)), &info);
		else if (r->op == N2L_OP_GET)
			assert(len == N2L_PAGE_BYTES(r->count));
		else if (r->op == N2L_OP_RETAIN) {
			assert(len == (r->count + 7) / 8);
			for (k = 0; k < r->count; k++)
				missing += n2l_retain_missing(payload, k);
			assert(missing <= r->count);
		}
		return;
	}
}

static void srvop(const struct n2l_hdr *h, const u8 *payload, u32 len,
		  u64 nr_keys)
{
	static struct n2l_copy copies[N2L_MAX_PAGES];
	u32 count = n2l_le32_to_cpu(h->count), i;
	char addr[N2L_ADDR_LEN];

	if (n2l_check_srvop(h))
		return;
	assert(count >= 1 && count <= N2L_MAX_PAGES);
	assert(len >= N2L_KV_BYTES(count));
	if (n2l_parse_copies((const struct n2l_kv *)payload, count, nr_keys, copies))
		return;
	for (i = 0; i < count; i++)
		assert(copies[i].key < nr_keys && copies[i].vers &&
		       copies[i].vers <= N2L_VERS_MAX);
	if (h->opcode == N2L_OP_MOVED) {
		assert(len == N2L_KV_BYTES(count) + N2L_ADDR_LEN);
		if (!n2l_parse_addr_field((const struct n2l_addr *)
					  (payload + N2L_KV_BYTES(count)), addr))
			assert(strnlen(addr, N2L_ADDR_LEN) < N2L_ADDR_LEN);
	} else {
		assert(len == N2L_KV_BYTES(count) + N2L_PAGE_BYTES(count));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	u64 nr_keys = 0;
	u8 *payload;
	struct n2l_hdr h;
	u32 len;

	if (size < sizeof(nr_keys))
		return 0;
	memcpy(&nr_keys, data, sizeof(nr_keys));
	nr_keys = n2l_le64_to_cpu(nr_keys);
	data += sizeof(nr_keys);
	size -= sizeof(nr_keys);

	while (size >= sizeof(h)) {
		memcpy(&h, data, sizeof(h));
		data += sizeof(h);
		size -= sizeof(h);
		if (n2l_check_hdr(&h, &len))
			return 0;	/* the connection ends */
		assert(len <= N2L_MAX_PAYLOAD && len == n2l_le32_to_cpu(h.len));
		if (size < len)
			return 0;	/* truncated: the read would wait */
		/* A copy of its exact length, so ASan sees any overread. */
		payload = malloc(len ? len : 1);
		assert(payload);
		memcpy(payload, data, len);
		data += len;
		size -= len;
		if (n2l_le16_to_cpu(h.flags) & N2L_F_REPLY)
			reply(&h, payload, len);
		else
			srvop(&h, payload, len, nr_keys);
		free(payload);
	}
	return 0;
}
