// SPDX-License-Identifier: GPL-2.0-only
/* SipHash-2-4 against the paper's vector; bound keys; tags; the area tag. */
#include <string.h>

#include "auth.h"
#include "siphash.h"
#include "store.h"
#include "unit.h"

TEST(siphash_paper_vector)
{
	struct siphash_key k;
	uint8_t key[16], msg[64];

	for (int i = 0; i < 16; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	memcpy(&k.k0, key, 8);
	memcpy(&k.k1, key + 8, 8);
	k.k0 = le64toh(k.k0);
	k.k1 = le64toh(k.k1);
	/* Appendix A of the paper: 15 bytes 00..0e */
	CHECK_EQ(siphash24(&k, msg, 15), 0xa129ca6149be45e5ULL);
	/* the reference implementation's vectors for lengths 0 and 8 */
	CHECK_EQ(siphash24(&k, msg, 0), 0x726fdb47dd0e0e31ULL);
	CHECK_EQ(siphash24(&k, msg, 8), 0x93f5f5799a932462ULL);
	{
		uint64_t a = 0x0706050403020100ULL, b = 0x0f0e0d0c0b0a0908ULL;

		CHECK_EQ(siphash24_u64x2(&k, a, b), siphash24(&k, msg, 16));
	}
}

/* The vector of tests/nswapd/integration/test_bound_keys.py (openssl's). */
TEST(bound_key_vector)
{
	static const char want[] =
		"5a431b8fcdcc9b641bbb3f4834d191e24d5876e51e7f1e823798078636f97a6e";
	uint8_t psk[N2L_PSK_LEN], out[N2L_MAC_LEN];
	char hex[2 * N2L_MAC_LEN + 1];

	for (int i = 0; i < N2L_PSK_LEN; i++)
		psk[i] = (uint8_t)(i + 1);
	auth_bound_key(psk, "10.1.0.5:7070", out);
	for (int i = 0; i < N2L_MAC_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", out[i]);
	CHECK(!strcmp(hex, want));
}

TEST(tags_sequence_and_verify)
{
	uint8_t key[32], data[100], tag[16], t2[16];
	struct tagger tx, rx;

	memset(key, 3, sizeof(key));
	memset(data, 9, sizeof(data));
	CHECK_EQ(tagger_init(&tx, key), 0);
	CHECK_EQ(tagger_init(&rx, key), 0);
	CHECK_EQ(tagger_tag(&tx, data, sizeof(data), tag), 0);
	CHECK(tagger_verify(&rx, data, sizeof(data), tag));
	CHECK(!tagger_verify(&rx, data, sizeof(data), tag));	/* replayed */
	CHECK_EQ(rx.seq, 1);
	CHECK_EQ(tagger_tag(&tx, data, sizeof(data), t2), 0);
	CHECK(memcmp(tag, t2, 16));	/* another sequence number */
	data[5] ^= 1;
	CHECK(!tagger_verify(&rx, data, sizeof(data), t2));	/* forged */
	data[5] ^= 1;
	CHECK(tagger_verify(&rx, data, sizeof(data), t2));
	tagger_free(&tx);
	tagger_free(&rx);
}

TEST(area_tag_is_short_and_stable)
{
	char id[N2L_ID_LEN] = "alice", t1[9], t2[9], t3[9];

	area_tag(id, 1, t1);
	area_tag(id, 1, t2);
	area_tag(id, 2, t3);
	CHECK(strlen(t1) == 8 && !strcmp(t1, t2) && strcmp(t1, t3));
}
