// SPDX-License-Identifier: GPL-2.0-only
/* Frame validation for every opcode, in both directions. */
#include <string.h>

#include "frame.h"
#include "unit.h"

static struct n2l_hdr mk(unsigned int op, unsigned int count, int reply, unsigned long len)
{
	struct frame_hdr h = {
		.magic = N2L_MAGIC, .version = N2L_PROTO_VERSION, .opcode = (uint8_t)op,
		.flags = reply ? N2L_F_REPLY : 0, .id = 5, .key = 10, .count = count,
		.vers = 3, .len = (uint32_t)len,
	};
	struct n2l_hdr w;

	frame_encode(&h, &w);
	return w;
}

static int check(struct n2l_hdr w, size_t *len)
{
	size_t l = 0;
	int rc = frame_check(&w, &l);

	if (len)
		*len = l;
	return rc;
}

/* The payload of a valid request / OK reply of each opcode with count n. */
static size_t req_len(unsigned int op, unsigned int n)
{
	switch (op) {
	case N2L_OP_HELLO: return sizeof(struct n2l_hello);
	case N2L_OP_AUTH: return sizeof(struct n2l_auth);
	case N2L_OP_PUT: return N2L_PAGE_BYTES(n);
	case N2L_OP_INVAL: case N2L_OP_RETAIN: return N2L_KV_BYTES(n);
	case N2L_OP_PEER_PUT: return sizeof(struct n2l_peer) + N2L_KV_BYTES(n) + N2L_PAGE_BYTES(n);
	case N2L_OP_MOVED: return N2L_KV_BYTES(n) + sizeof(struct n2l_addr);
	case N2L_OP_RETURN: return N2L_KV_BYTES(n) + N2L_PAGE_BYTES(n);
	default: return 0;
	}
}

static size_t reply_len(unsigned int op, unsigned int n)
{
	switch (op) {
	case N2L_OP_HELLO: return sizeof(struct n2l_hello_reply);
	case N2L_OP_AUTH: case N2L_OP_STATUS: return sizeof(struct n2l_info);
	case N2L_OP_GET: return N2L_PAGE_BYTES(n);
	case N2L_OP_RETAIN: return (n + 7) / 8;
	case N2L_OP_RETAIN_END: return sizeof(struct n2l_retained);
	default: return 0;
	}
}

static int needs_count(unsigned int op)
{
	return n2l_op_counts(op);
}

TEST(frame_valid_every_opcode)
{
	for (unsigned int op = 1; op <= N2L_OP_MAX; op++) {
		unsigned int n = needs_count(op) ? 3 : 0;
		size_t len;

		CHECK_EQ(check(mk(op, n, 0, (unsigned int)req_len(op, n)), &len), FRAME_OK);
		CHECK_EQ(len, req_len(op, n));
		CHECK_EQ(check(mk(op, n, 1, (unsigned int)reply_len(op, n)), &len), FRAME_OK);
		CHECK_EQ(len, reply_len(op, n));
		if (needs_count(op)) {	/* the largest frames */
			unsigned int m = n2l_max_count(op);

			CHECK_EQ(check(mk(op, m, 0, req_len(op, m)), &len), FRAME_OK);
			CHECK(len <= N2L_MAX_PAYLOAD);
			CHECK_EQ(check(mk(op, m, 1, reply_len(op, m)), &len), FRAME_OK);
			CHECK(len <= N2L_MAX_PAYLOAD);
		}
	}
	CHECK_EQ(req_len(N2L_OP_PEER_PUT, N2L_MAX_PAGES), N2L_MAX_PAYLOAD);
}

TEST(frame_wrong_magic_and_version)
{
	for (unsigned int op = 1; op <= N2L_OP_MAX; op++) {
		struct n2l_hdr w = mk(op, 1, 0, (unsigned int)req_len(op, 1));

		w.magic = htole32(N2L_MAGIC ^ 1);
		CHECK_EQ(check(w, NULL), FRAME_BAD_MAGIC);
		w = mk(op, 1, 0, (unsigned int)req_len(op, 1));
		w.version = N2L_PROTO_VERSION - 1;	/* the version before */
		CHECK_EQ(check(w, NULL), FRAME_BAD_VERSION);
		w.version = N2L_PROTO_VERSION + 1;
		CHECK_EQ(check(w, NULL), FRAME_BAD_VERSION);
		w.version = 0;
		CHECK_EQ(check(w, NULL), FRAME_BAD_VERSION);
	}
}

TEST(frame_unknown_opcode)
{
	static const unsigned int bad[] = { 0, N2L_OP_MAX + 1, 100, 255 };

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(check(mk(bad[i], 0, 0, 0), NULL), FRAME_BAD_HEADER);
		CHECK_EQ(check(mk(bad[i], 1, 1, 0), NULL), FRAME_BAD_HEADER);
	}
}

TEST(frame_count_limits)
{
	for (unsigned int op = 1; op <= N2L_OP_MAX; op++) {
		unsigned int m = n2l_max_count(op) + 1;

		/* more than the opcode's maximum: always invalid, whatever len says */
		CHECK_EQ(check(mk(op, m, 0, req_len(op, m)), NULL), FRAME_BAD_HEADER);
		CHECK_EQ(check(mk(op, 0xffffffffU, 0, 0), NULL), FRAME_BAD_HEADER);
		/* zero where pages or entries are needed */
		if (needs_count(op)) {
			CHECK_EQ(check(mk(op, 0, 0, (unsigned int)req_len(op, 0)), NULL), FRAME_BAD_HEADER);
			CHECK_EQ(check(mk(op, 0, 1, 0), NULL), FRAME_BAD_HEADER);
		} else {
			CHECK_EQ(check(mk(op, 0, 0, (unsigned int)req_len(op, 0)), NULL), FRAME_OK);
			/* a count where none belongs */
			CHECK_EQ(check(mk(op, 1, 0, (unsigned int)req_len(op, 0)), NULL), FRAME_BAD_HEADER);
		}
	}
}

TEST(frame_bad_flags_status_vers)
{
	for (unsigned int op = 1; op <= N2L_OP_MAX; op++) {
		unsigned int n = needs_count(op) ? 1 : 0;
		struct n2l_hdr w = mk(op, n, 0, req_len(op, n));

		CHECK_EQ(check(w, NULL), FRAME_OK);
		w.flags = htole16(0x0002);
		CHECK_EQ(check(w, NULL), FRAME_BAD_HEADER);
		w.flags = htole16(0x8001);
		CHECK_EQ(check(w, NULL), FRAME_BAD_HEADER);
		/* requests carry no status and no free_pages */
		w = mk(op, n, 0, req_len(op, n));
		w.status = htole32(1);
		CHECK_EQ(check(w, NULL), FRAME_BAD_HEADER);
		w = mk(op, n, 0, req_len(op, n));
		w.free_pages = htole32(5);
		CHECK_EQ(check(w, NULL), FRAME_BAD_HEADER);
		/* versions have 48 bits */
		w = mk(op, n, 0, req_len(op, n));
		w.vers = htole64(N2L_VERS_MAX);
		CHECK_EQ(check(w, NULL), FRAME_OK);
		w.vers = htole64(N2L_VERS_MAX + 1);
		CHECK_EQ(check(w, NULL), FRAME_BAD_HEADER);
	}
}

TEST(frame_wrong_len)
{
	for (unsigned int op = 1; op <= N2L_OP_MAX; op++) {
		unsigned int n = needs_count(op) ? 2 : 0;
		unsigned int l = (unsigned int)req_len(op, n), r = (unsigned int)reply_len(op, n);

		if (op == N2L_OP_PUT)	/* pages without their seals */
			CHECK_EQ(check(mk(op, n, 0, (size_t)n * N2L_PAGE_SIZE), NULL), FRAME_BAD_LEN);

		CHECK_EQ(check(mk(op, n, 0, l + 1), NULL), FRAME_BAD_LEN);
		if (l)
			CHECK_EQ(check(mk(op, n, 0, l - 1), NULL), FRAME_BAD_LEN);
		CHECK_EQ(check(mk(op, n, 0, 0xffffffffU), NULL), FRAME_BAD_LEN);
		CHECK_EQ(check(mk(op, n, 1, r + 4096), NULL), FRAME_BAD_LEN);
	}
}

TEST(frame_error_replies_have_no_payload)
{
	for (unsigned int op = 1; op <= N2L_OP_MAX; op++) {
		struct n2l_hdr w = mk(op, needs_count(op) ? 1 : 0, 1, 0);
		size_t len = 1;

		for (unsigned int st = 1; st <= N2L_ST_MAX; st++) {
			w.status = htole32(st);
			CHECK_EQ(check(w, &len), FRAME_OK);
			CHECK_EQ(len, 0);
		}
		w.status = htole32(N2L_ST_MAX + 1);
		CHECK_EQ(check(w, NULL), FRAME_BAD_HEADER);
		w.status = htole32(N2L_ST_STALE);
		w.len = htole32(4096);
		CHECK_EQ(check(w, NULL), FRAME_BAD_LEN);
	}
}

TEST(frame_key_range_wraps)
{
	struct n2l_hdr w = mk(N2L_OP_GET, 2, 0, 0);

	w.key = htole64(UINT64_MAX);
	CHECK_EQ(check(w, NULL), FRAME_BAD_KEYS);
	w = mk(N2L_OP_GET, 1, 0, 0);
	w.key = htole64(UINT64_MAX);
	CHECK_EQ(check(w, NULL), FRAME_OK);
	w = mk(N2L_OP_PUT, 256, 0, N2L_PAGE_BYTES(256));
	w.key = htole64(UINT64_MAX - 254);
	CHECK_EQ(check(w, NULL), FRAME_BAD_KEYS);
	w.key = htole64(UINT64_MAX - 255);
	CHECK_EQ(check(w, NULL), FRAME_OK);
}

TEST(frame_encode_decode_roundtrip)
{
	struct frame_hdr h = {
		.magic = N2L_MAGIC, .version = 2, .opcode = 3, .flags = 1,
		.id = 0x0102030405060708ULL, .key = 0x1112131415161718ULL,
		.vers = 0x313233343536ULL, .count = 0x21222324, .status = 2,
		.free_pages = 0x41424344, .len = 0x51525354,
	}, d;
	struct n2l_hdr w;
	uint8_t raw[48];

	frame_encode(&h, &w);
	memcpy(raw, &w, 48);
	CHECK(raw[0] == 0x4e && raw[1] == 0x32 && raw[2] == 0x4c && raw[3] == 0x50);	/* "N2LP" */
	CHECK(raw[8] == 0x08 && raw[15] == 0x01);	/* little-endian id */
	CHECK(raw[24] == 0x36 && raw[29] == 0x31 && raw[31] == 0);	/* 64-bit vers */
	CHECK(raw[32] == 0x24 && raw[44] == 0x54);	/* count, then len last */
	frame_decode(&w, &d);
	CHECK(!memcmp(&h, &d, sizeof(h)));
}
