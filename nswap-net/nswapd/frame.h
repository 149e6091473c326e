/* SPDX-License-Identifier: GPL-2.0-only */
/* Frame headers: validation, decoding to host order, building replies. */
#ifndef NSWAPD_FRAME_H
#define NSWAPD_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "../n2l-proto.h"

#define N2L_HDR_LEN	((size_t)sizeof(struct n2l_hdr))
#define N2L_MAX_FRAME	(N2L_HDR_LEN + N2L_MAX_PAYLOAD + N2L_TAG_LEN)
/* The largest payload before authentication: HELLO, AUTH and their replies. */
#define N2L_PREAUTH_PAYLOAD	sizeof(struct n2l_hello)
#define N2L_PREAUTH_FRAME	(N2L_HDR_LEN + N2L_PREAUTH_PAYLOAD)

/* A header in host byte order. */
struct frame_hdr {
	uint32_t magic;
	uint8_t version, opcode;
	uint16_t flags;
	uint64_t id, key, vers;
	uint32_t count, status, free_pages, len;
};

enum frame_err {
	FRAME_OK = 0,
	FRAME_BAD_MAGIC,	/* not a frame at all: no reply */
	FRAME_BAD_VERSION,	/* another protocol version */
	FRAME_BAD_HEADER,	/* n2l_payload_len() says no */
	FRAME_BAD_LEN,		/* len is not what the header implies */
	FRAME_BAD_KEYS,		/* key + count wraps around */
};

/* Checks the wire header; *payload_len gets the exact payload length. */
enum frame_err frame_check(const struct n2l_hdr *wire, size_t *payload_len);
void frame_decode(const struct n2l_hdr *wire, struct frame_hdr *h);
void frame_encode(const struct frame_hdr *h, struct n2l_hdr *wire);
const char *frame_err_str(enum frame_err e);
const char *frame_op_name(unsigned int op);
const char *frame_status_name(unsigned int st);

#endif
