// SPDX-License-Identifier: GPL-2.0-only
/* Runs every TEST(); prints "unit: N tests, M failing" and exits 1 on failure. */
#include <string.h>

#include "unit.h"

extern const struct unit_test __start_nswapd_tests[], __stop_nswapd_tests[];

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	for (const struct unit_test *t = __start_nswapd_tests; t < __stop_nswapd_tests; t++) {
		int f = 0;

		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		t->fn(&f);
		printf("%s %s\n", f ? "FAIL" : "PASS", t->name);
		if (f)
			failed++;
		else
			passed++;
	}
	printf("unit: %d tests, %d failing\n", passed + failed, failed);
	return failed ? 1 : 0;
}
