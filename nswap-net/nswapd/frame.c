// SPDX-License-Identifier: GPL-2.0-only
#include "frame.h"

#include <string.h>

void frame_decode(const struct n2l_hdr *w, struct frame_hdr *h)
{
	h->magic = le32toh(w->magic);
	h->version = w->version;
	h->opcode = w->opcode;
	h->flags = le16toh(w->flags);
	h->id = le64toh(w->id);
	h->key = le64toh(w->key);
	h->vers = le64toh(w->vers);
	h->count = le32toh(w->count);
	h->status = le32toh(w->status);
	h->free_pages = le32toh(w->free_pages);
	h->len = le32toh(w->len);
}

void frame_encode(const struct frame_hdr *h, struct n2l_hdr *w)
{
	w->magic = htole32(h->magic);
	w->version = h->version;
	w->opcode = h->opcode;
	w->flags = htole16(h->flags);
	w->id = htole64(h->id);
	w->key = htole64(h->key);
	w->vers = htole64(h->vers);
	w->count = htole32(h->count);
	w->status = htole32(h->status);
	w->free_pages = htole32(h->free_pages);
	w->len = htole32(h->len);
}

enum frame_err frame_check(const struct n2l_hdr *w, size_t *payload_len)
{
	struct frame_hdr h;
	long len;

	frame_decode(w, &h);
	if (h.magic != N2L_MAGIC)
		return FRAME_BAD_MAGIC;
	if (h.version != N2L_PROTO_VERSION)
		return FRAME_BAD_VERSION;
	len = n2l_payload_len(w);
	if (len < 0)
		return FRAME_BAD_HEADER;
	if ((unsigned long)len != h.len)
		return FRAME_BAD_LEN;
	if (!(h.flags & N2L_F_REPLY) &&
	    (h.opcode == N2L_OP_PUT || h.opcode == N2L_OP_GET) &&
	    h.key > UINT64_MAX - (h.count - 1))
		return FRAME_BAD_KEYS;
	*payload_len = (size_t)len;
	return FRAME_OK;
}

const char *frame_err_str(enum frame_err e)
{
	switch (e) {
	case FRAME_OK: return "ok";
	case FRAME_BAD_MAGIC: return "bad magic";
	case FRAME_BAD_VERSION: return "unsupported protocol version";
	case FRAME_BAD_HEADER: return "invalid header (opcode, flags, count, status or vers)";
	case FRAME_BAD_LEN: return "payload length does not match the header";
	case FRAME_BAD_KEYS: return "key range wraps around";
	}
	return "?";
}

const char *frame_op_name(unsigned int op)
{
	static const char *const names[] = {
		[N2L_OP_HELLO] = "HELLO", [N2L_OP_PUT] = "PUT", [N2L_OP_GET] = "GET",
		[N2L_OP_INVAL] = "INVAL", [N2L_OP_STATUS] = "STATUS",
		[N2L_OP_FREE_ALL] = "FREE_ALL", [N2L_OP_PEER_PUT] = "PEER_PUT",
		[N2L_OP_MOVED] = "MOVED", [N2L_OP_RETURN] = "RETURN",
		[N2L_OP_AUTH] = "AUTH", [N2L_OP_RETAIN_BEGIN] = "RETAIN_BEGIN",
		[N2L_OP_RETAIN] = "RETAIN", [N2L_OP_RETAIN_END] = "RETAIN_END",
	};

	if (op >= 1 && op <= N2L_OP_MAX)
		return names[op];
	return "unknown-op";
}

const char *frame_status_name(unsigned int st)
{
	static const char *const names[] = {
		"OK", "FULL", "STALE", "INVALID", "AUTH", "VERSION", "NOHELLO", "DRAINING",
	};

	if (st <= N2L_ST_MAX)
		return names[st];
	return "unknown-status";
}
