# SPDX-License-Identifier: GPL-2.0-only
#
# The kernel client's frame checks (nswap-net/kclient/parse.c), built for
# userspace and fuzzed with libFuzzer. make fuzz-client runs it for
# FUZZ_SECONDS (default 300); fuzz-client-test, a stage of make check,
# replays the seed corpus and fuzzes for FUZZ_CLIENT_TEST_SECONDS (30).
FUZZ_CLIENT_CORPUS := nswap-net/fuzz/client-corpus
FUZZ_CLIENT_TEST_SECONDS ?= 30

.PHONY: fuzz-client fuzz-client-test
fuzz-client fuzz-client-test: SHELL := /bin/bash

build/fuzz-client: nswap-net/fuzz/fuzz-client.c nswap-net/kclient/parse.c \
		   nswap-net/kclient/parse.h nswap-net/n2l-proto.h nswap-net/fuzz/fuzz-client.mk
	@mkdir -p build
	@command -v $(FUZZ_CC) >/dev/null || { echo "$(FUZZ_CC) not found: apt-get install -y clang" >&2; exit 1; }
	$(FUZZ_CC) -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -O1 -g \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-Inswap-net -Inswap-net/kclient -o $@ nswap-net/fuzz/fuzz-client.c \
		nswap-net/kclient/parse.c

fuzz-client: build/fuzz-client
	@mkdir -p build/fuzz-client.new
	build/fuzz-client -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-max_len=16384 -artifact_prefix=build/fuzz-client- \
		build/fuzz-client.new $(FUZZ_CLIENT_CORPUS)

fuzz-client-test: build/fuzz-client
	@mkdir -p build/fuzz-client.new
	@build/fuzz-client -max_total_time=$(FUZZ_CLIENT_TEST_SECONDS) -max_len=16384 \
		-artifact_prefix=build/fuzz-client- build/fuzz-client.new \
		$(FUZZ_CLIENT_CORPUS) >build/fuzz-client.log 2>&1; \
	rc=$$?; tail -3 build/fuzz-client.log; \
	if [ $$rc = 0 ]; then echo "fuzz-client: 1 passed, 0 failed"; \
	else cat build/fuzz-client.log; echo "fuzz-client: 0 passed, 1 failed"; fi; \
	exit $$rc
