/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * 2012): a keyed hash, so that the hash tables' bucket of a key cannot be
 * chosen by whoever picks the key without knowing the server's random key.
 */
#ifndef NSWAPD_SIPHASH_H
#define NSWAPD_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

struct siphash_key {
	uint64_t k0, k1;
};

uint64_t siphash24(const struct siphash_key *key, const void *data, size_t len);
/* The hash of two 64-bit words (16 bytes, little-endian). */
uint64_t siphash24_u64x2(const struct siphash_key *key, uint64_t a, uint64_t b);

#endif
