# nswapd, the Network RAM page server: build, tests, fuzzing.
# Included from the top-level Makefile; uses only CC and build/.
#
#   make nswapd        build/nswapd (optimised, warnings are errors)
#   make nswapd-test   unit + integration tests under ASan/UBSan
#   make fuzz-nswapd   libFuzzer over the frame state machine, FUZZ_SECONDS (300)

NSWAPD_DIR := nswap-net/nswapd
NSWAPD_SRC := $(wildcard $(NSWAPD_DIR)/*.c)
NSWAPD_LIB_SRC := $(filter-out $(NSWAPD_DIR)/main.c,$(NSWAPD_SRC))
NSWAPD_HDR := $(wildcard $(NSWAPD_DIR)/*.h) nswap-net/n2l-proto.h
NSWAPD_WARN := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow \
	       -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes
NSWAPD_CFLAGS := $(NSWAPD_WARN) -O2 -g -D_FORTIFY_SOURCE=2 -fstack-protector-strong
NSWAPD_SAN := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	      -fno-sanitize-recover=all
NSWAPD_TEST_SRC := $(wildcard tests/nswapd/unit/*.c)
FUZZ_SECONDS ?= 300
FUZZ_CC ?= clang
NSWAPD_FUZZ_CORPUS := nswap-net/fuzz/corpus

.PHONY: nswapd nswapd-test fuzz-nswapd fuzz-nswapd-merge
fuzz-nswapd: SHELL := /bin/bash

nswapd: build/nswapd

# CPPFLAGS, CFLAGS and LDFLAGS, if set, come after ours: the Debian package
# (packaging/debian/rules) builds with dpkg-buildflags' hardening flags.
build/nswapd: $(NSWAPD_SRC) $(NSWAPD_HDR) nswap-net/nswapd.mk
	@mkdir -p build
	$(CC) $(NSWAPD_CFLAGS) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(NSWAPD_SRC) -lcrypto

build/nswapd-asan: $(NSWAPD_SRC) $(NSWAPD_HDR) nswap-net/nswapd.mk
	@mkdir -p build
	$(CC) $(NSWAPD_WARN) $(NSWAPD_SAN) -o $@ $(NSWAPD_SRC) -lcrypto

build/nswapd-unit: $(NSWAPD_LIB_SRC) $(NSWAPD_TEST_SRC) $(NSWAPD_HDR) \
		   $(wildcard tests/nswapd/unit/*.h) nswap-net/nswapd.mk
	@mkdir -p build
	$(CC) $(NSWAPD_WARN) -Wno-missing-prototypes $(NSWAPD_SAN) -I$(NSWAPD_DIR) \
		-o $@ $(NSWAPD_TEST_SRC) $(NSWAPD_LIB_SRC) -lcrypto

nswapd-test: build/nswapd build/nswapd-asan build/nswapd-unit
	tests/nswapd/run

build/fuzz-nswapd: $(NSWAPD_LIB_SRC) nswap-net/fuzz/fuzz-frames.c $(NSWAPD_HDR) nswap-net/nswapd.mk
	@mkdir -p build
	@command -v $(FUZZ_CC) >/dev/null || { echo "$(FUZZ_CC) not found: apt-get install -y clang" >&2; exit 1; }
	$(FUZZ_CC) $(NSWAPD_WARN) -Wno-missing-prototypes -O1 -g \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-I$(NSWAPD_DIR) -o $@ nswap-net/fuzz/fuzz-frames.c $(NSWAPD_LIB_SRC) -lcrypto

# New inputs go to build/fuzz-nswapd.new; the committed corpus is the seed
# set (nswap-net/fuzz/gen-corpus.py writes it) plus what fuzz-nswapd-merge
# folded in: the inputs of up to 4 KiB that reach new coverage (the larger
# ones would weigh megabytes in git).
fuzz-nswapd: build/fuzz-nswapd
	@mkdir -p build/fuzz-nswapd.new
	build/fuzz-nswapd -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-max_len=65536 -rss_limit_mb=4096 -timeout=25 \
		-artifact_prefix=build/fuzz-nswapd- \
		build/fuzz-nswapd.new $(NSWAPD_FUZZ_CORPUS) 2>&1 | tee build/fuzz-nswapd.log \
		| grep -vE '^#[0-9]+.*(NEW|REDUCE|pulse)'; \
	rc=$${PIPESTATUS[0]}; \
	echo "final: $$(grep -E '^#[0-9]+' build/fuzz-nswapd.log | tail -1)"; \
	exit $$rc

fuzz-nswapd-merge: build/fuzz-nswapd
	build/fuzz-nswapd -merge=1 -max_len=4096 -rss_limit_mb=4096 \
		$(NSWAPD_FUZZ_CORPUS) build/fuzz-nswapd.new
