// SPDX-License-Identifier: GPL-2.0-only
/*
 * Numbers as the kernel prints them (%u, %d of non-negative values,
 * seconds with a fraction): digits only, no sign, no blanks, no base
 * prefix, nothing left over, and never past @max. Used for trace fields
 * and command line values alike, so both reject the same garbage.
 */
#include <errno.h>

#include "sim.h"

#define NS_PER_SEC	1000000000ULL
#define NS_DIGITS	9

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool all_digits(const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (!is_digit(s[i]))
			return false;
	return len > 0;
}

int sim_parse_u64(const char *s, size_t len, u64 max, u64 *out)
{
	u64 v = 0, d;
	size_t i;

	if (!all_digits(s, len))
		return -EINVAL;
	for (i = 0; i < len; i++) {
		d = (u64)(s[i] - '0');
		if (d > max || v > (max - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int sim_parse_u32(const char *s, size_t len, u32 *out)
{
	u64 v;
	int r = sim_parse_u64(s, len, U32_MAX, &v);

	if (!r)
		*out = (u32)v;
	return r;
}

/* The fraction's digits, as nanoseconds; digits past the ninth dropped. */
static int parse_fraction(const char *s, size_t len, u64 *ns)
{
	size_t keep = min_t(size_t, len, NS_DIGITS);

	if (!all_digits(s, len))
		return -EINVAL;
	sim_parse_u64(s, keep, UINT64_MAX, ns);	/* 9 digits cannot overflow */
	for (; keep < NS_DIGITS; keep++)
		*ns *= 10;
	return 0;
}

int sim_parse_time(const char *s, size_t len, u64 *ns)
{
	const char *dot = memchr(s, '.', len);
	size_t ilen = dot ? (size_t)(dot - s) : len;
	u64 sec, frac = 0;
	int r;

	r = sim_parse_u64(s, ilen, (UINT64_MAX - NS_PER_SEC) / NS_PER_SEC, &sec);
	if (!r && dot)
		r = parse_fraction(dot + 1, len - ilen - 1, &frac);
	if (!r)
		*ns = sec * NS_PER_SEC + frac;
	return r;
}

/* "<major>:<minor>", as TP_printk's "dev=%d:%d" prints a dev_t. */
int sim_parse_dev(const char *s, size_t len, struct sim_dev *dev)
{
	const char *colon = memchr(s, ':', len);
	size_t mlen = colon ? (size_t)(colon - s) : 0;

	if (!colon || sim_parse_u32(s, mlen, &dev->major))
		return -EINVAL;
	return sim_parse_u32(colon + 1, len - mlen - 1, &dev->minor);
}
