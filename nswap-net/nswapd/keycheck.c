// SPDX-License-Identifier: GPL-2.0-only
#include "keycheck.h"

#include <stdbool.h>
#include <string.h>

#define KEYCHECK_MAX_VALUES	8	/* this few distinct values: weak */
#define KEYCHECK_MAX_PERIOD	16

/* Distinct values of key[i] - key[i - 1] (mod 256) if steps, else of key[i]. */
static unsigned int distinct(const uint8_t *key, size_t len, bool steps)
{
	bool seen[256] = { false };
	unsigned int n = 0;

	for (size_t i = steps ? 1 : 0; i < len; i++) {
		uint8_t v = steps ? (uint8_t)(key[i] - key[i - 1]) : key[i];

		if (!seen[v]) {
			seen[v] = true;
			n++;
		}
	}
	return n;
}

static bool periodic(const uint8_t *key, size_t len)
{
	for (size_t p = 1; p <= KEYCHECK_MAX_PERIOD && p < len; p++)
		if (!memcmp(key, key + p, len - p))
			return true;
	return false;
}

const char *keycheck_weakness(const uint8_t *key, size_t len)
{
	if (distinct(key, len, false) <= KEYCHECK_MAX_VALUES)
		return "its bytes take 8 or fewer distinct values";
	if (distinct(key, len, true) <= KEYCHECK_MAX_VALUES)
		return "the steps between neighbouring bytes take 8 or fewer distinct values";
	if (periodic(key, len))
		return "it repeats itself every 16 bytes or fewer";
	return NULL;
}
