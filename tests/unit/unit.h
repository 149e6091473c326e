/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A very small unit test harness: TEST() registers a function, CHECK()
 * records a failure with its location and goes on, and main() prints
 * "<N> passed, <M> failed" and exits non-zero when anything failed.
 */
#ifndef N2L_UNIT_H
#define N2L_UNIT_H

#include <stdio.h>
#include <stdlib.h>

struct unit_test {
	const char *name;
	void (*fn)(void);
	struct unit_test *next;
};

extern struct unit_test *unit_tests;
extern int unit_failed_checks;

#define TEST(name)							\
	static void name(void);						\
	static struct unit_test unit_##name = { #name, name, NULL };	\
	__attribute__((constructor)) static void register_##name(void)	\
	{								\
		unit_##name.next = unit_tests;				\
		unit_tests = &unit_##name;				\
	}								\
	static void name(void)

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n",	\
				__FILE__, __LINE__, #cond);		\
			unit_failed_checks++;				\
		}							\
	} while (0)

#define CHECK_EQ(a, b)							\
	do {								\
		long long _a = (long long)(a), _b = (long long)(b);	\
		if (_a != _b) {						\
			fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n", \
				__FILE__, __LINE__, #a, _a, #b, _b);	\
			unit_failed_checks++;				\
		}							\
	} while (0)

#endif
