// SPDX-License-Identifier: GPL-2.0-only
#include "buf.h"

#include <stdlib.h>
#include <string.h>

uint8_t *buf_space(struct buf *b, size_t n)
{
	size_t len = buf_len(b), want;
	uint8_t *np;

	if (b->p && b->cap - b->tail >= n)
		return b->p + b->tail;
	if (b->head && b->cap - len >= n) {
		memmove(b->p, b->p + b->head, len);
		b->head = 0;
		b->tail = len;
		return b->p + b->tail;
	}
	want = b->cap ? b->cap : 4096;
	while (want - len < n) {
		if (want > SIZE_MAX / 2)
			return NULL;
		want *= 2;
	}
	np = malloc(want);
	if (!np)
		return NULL;
	if (len)
		memcpy(np, b->p + b->head, len);
	free(b->p);
	b->p = np;
	b->cap = want;
	b->head = 0;
	b->tail = len;
	return b->p + b->tail;
}

void buf_consume(struct buf *b, size_t n)
{
	b->head += n;
	if (b->head == b->tail)
		b->head = b->tail = 0;
}

void buf_trim(struct buf *b, size_t keep)
{
	if (buf_len(b) == 0 && b->cap > keep)
		buf_free(b);
}

void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->head = b->tail = b->cap = 0;
}
