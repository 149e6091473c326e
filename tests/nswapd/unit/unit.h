/* SPDX-License-Identifier: GPL-2.0-only */
/* A minimal test harness: TEST(name) { ... CHECK(cond); ... } */
#ifndef NSWAPD_UNIT_H
#define NSWAPD_UNIT_H

#include <stdio.h>

struct unit_test {
	const char *name;
	void (*fn)(int *failed);
};

#define TEST(name) \
	static void test_##name(int *failed_); \
	static const struct unit_test ut_##name \
		__attribute__((used, section("nswapd_tests"), aligned(sizeof(void *)))) = \
		{ #name, test_##name }; \
	static void test_##name(int *failed_)

#define CHECK(cond) do { \
	if (!(cond)) { \
		printf("  %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		(*failed_)++; \
	} \
} while (0)

#define CHECK_EQ(a, b) do { \
	unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
	if (a_ != b_) { \
		printf("  %s:%d: %s == %llu, want %s == %llu\n", __FILE__, __LINE__, \
		       #a, a_, #b, b_); \
		(*failed_)++; \
	} \
} while (0)

#endif
