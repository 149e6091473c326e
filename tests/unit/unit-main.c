// SPDX-License-Identifier: GPL-2.0-only
#include <string.h>
#include "unit.h"

struct unit_test *unit_tests;
int unit_failed_checks;

/* Runs every test, or those whose name contains argv[1]. */
int main(int argc, char **argv)
{
	struct unit_test *t;
	int passed = 0, failed = 0, before;

	for (t = unit_tests; t; t = t->next) {
		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		before = unit_failed_checks;
		t->fn();
		if (unit_failed_checks == before) {
			passed++;
			printf("PASS %s\n", t->name);
		} else {
			failed++;
			printf("FAIL %s\n", t->name);
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
