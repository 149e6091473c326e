// SPDX-License-Identifier: GPL-2.0-only
/*
 * The weak-key rule: the shared vectors (which the Python rule must agree
 * with word for word) and keys from getrandom, which must pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "keycheck.h"
#include "unit.h"

/* tests/nswapd/run runs us from the top of the tree. */
#define VECTORS "tests/nswapd/keycheck-vectors.txt"

static int unhex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned int v;

		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (uint8_t)v;
	}
	return 0;
}

TEST(keycheck_shared_vectors)
{
	FILE *f = fopen(VECTORS, "re");
	char line[256];
	int n = 0, weak = 0;

	CHECK(f);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		uint8_t key[N2L_PSK_LEN];
		const char *got, *want;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = 0;
		CHECK(strlen(line) > 2 * N2L_PSK_LEN + 1 && line[2 * N2L_PSK_LEN] == ' ');
		CHECK_EQ(unhex(line, key, sizeof(key)), 0);
		want = line + 2 * N2L_PSK_LEN + 1;
		got = keycheck_weakness(key, sizeof(key));
		if (strcmp(got ? got : "strong", want)) {
			printf("  %.16s...: got '%s', want '%s'\n", line, got ? got : "strong", want);
			CHECK(0);
		}
		n++;
		weak += got != NULL;
	}
	fclose(f);
	CHECK(n >= 15);
	CHECK(weak >= 10);
}

TEST(keycheck_weak_keys_in_code)
{
	uint8_t key[N2L_PSK_LEN];

	memset(key, 0, sizeof(key));
	CHECK(keycheck_weakness(key, sizeof(key)));
	memset(key, 0xff, sizeof(key));
	CHECK(keycheck_weakness(key, sizeof(key)));
	for (unsigned int i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)i;
	CHECK(keycheck_weakness(key, sizeof(key)));
	auth_random(key, 16);
	memcpy(key + 16, key, 16);
	CHECK(keycheck_weakness(key, sizeof(key)));
}

/* Each is refused with probability below 2^-106: none of 100000 may be. */
TEST(keycheck_random_keys_pass)
{
	uint8_t key[N2L_PSK_LEN];
	unsigned int refused = 0;

	for (int i = 0; i < 100000; i++) {
		CHECK_EQ(auth_random(key, sizeof(key)), 0);
		refused += keycheck_weakness(key, sizeof(key)) != NULL;
	}
	CHECK_EQ(refused, 0);
}
