/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Keys too weak to use: a placeholder left in a file, a key typed by
 * hand, a pattern. A key is refused if its bytes, or the steps between
 * neighbouring bytes (mod 256), take 8 or fewer distinct values, or if it
 * repeats itself every 16 bytes or fewer. A 32-byte key from /dev/urandom
 * is refused with a probability below 2^-106.6: its 31 steps are uniform
 * and independent, and take 8 or fewer values with probability
 * sum(k <= 8) C(256, k) k! S(31, k) / 256^31 = 2^-106.65 (S: Stirling
 * numbers of the second kind); its bytes, 2^-111.6; a period, 2^-128.
 * The rule finds patterns, not words: a passphrase may pass.
 *
 * userspace/pylib/n2lkeys.py has the same rule, with the same reasons
 * word for word; tests/nswapd/keycheck-vectors.txt holds both to it.
 */
#ifndef NSWAPD_KEYCHECK_H
#define NSWAPD_KEYCHECK_H

#include <stddef.h>
#include <stdint.h>

/* What an error message tells the user to run instead. */
#define KEYCHECK_MAKE_ONE "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'"

/* Why the key is too weak to use, or NULL if it is not. */
const char *keycheck_weakness(const uint8_t *key, size_t len);

#endif
