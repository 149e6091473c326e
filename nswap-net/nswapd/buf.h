/* SPDX-License-Identifier: GPL-2.0-only */
/* A byte queue: data lives in [head, tail) of one growable allocation. */
#ifndef NSWAPD_BUF_H
#define NSWAPD_BUF_H

#include <stddef.h>
#include <stdint.h>

struct buf {
	uint8_t *p;
	size_t head, tail, cap;
};

static inline size_t buf_len(const struct buf *b)
{
	return b->tail - b->head;
}

static inline uint8_t *buf_data(const struct buf *b)
{
	return b->p + b->head;
}

/* Room for n more bytes at the tail (compacting or growing); NULL if none. */
uint8_t *buf_space(struct buf *b, size_t n);
/* Frees the allocation when empty and bigger than keep. */
void buf_trim(struct buf *b, size_t keep);
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);

#endif
