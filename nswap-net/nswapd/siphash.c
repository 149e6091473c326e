// SPDX-License-Identifier: GPL-2.0-only
/*
 * SipHash-2-4 as the paper describes it: the state v0..v3 starts as the
 * key xor "somepseudorandomlygeneratedbytes"; every 8-byte little-endian
 * word m of the message is absorbed by v3 ^= m, two SipRounds, v0 ^= m;
 * the last word holds the remaining bytes and, in its top byte, the
 * message length mod 256; then v2 ^= 0xff and four SipRounds, and the
 * result is v0 ^ v1 ^ v2 ^ v3.
 */
#include "siphash.h"

#include <string.h>

static inline uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

struct sip_state {
	uint64_t v0, v1, v2, v3;
};

static inline void sip_round(struct sip_state *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = rotl(s->v2, 32);
}

static inline void sip_absorb(struct sip_state *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	sip_round(s);
	s->v0 ^= m;
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void sip_init(struct sip_state *s, const struct siphash_key *key)
{
	s->v0 = key->k0 ^ 0x736f6d6570736575ULL;
	s->v1 = key->k1 ^ 0x646f72616e646f6dULL;
	s->v2 = key->k0 ^ 0x6c7967656e657261ULL;
	s->v3 = key->k1 ^ 0x7465646279746573ULL;
}

static uint64_t sip_final(struct sip_state *s)
{
	s->v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

uint64_t siphash24(const struct siphash_key *key, const void *data, size_t len)
{
	const uint8_t *p = data;
	struct sip_state s;
	uint8_t last[8] = { 0 };
	size_t i;

	sip_init(&s, key);
	for (i = 0; i + 8 <= len; i += 8)
		sip_absorb(&s, load_le64(p + i));
	memcpy(last, p + i, len - i);
	last[7] = (uint8_t)len;
	sip_absorb(&s, load_le64(last));
	return sip_final(&s);
}

uint64_t siphash24_u64x2(const struct siphash_key *key, uint64_t a, uint64_t b)
{
	struct sip_state s;

	sip_init(&s, key);
	sip_absorb(&s, a);
	sip_absorb(&s, b);
	sip_absorb(&s, (uint64_t)16 << 56);
	return sip_final(&s);
}
