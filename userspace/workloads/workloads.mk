# The benchmark workloads (WL1, WL2, WL4, Radix, IS, HPL driver) and their
# tests. Included from the top-level Makefile; uses only CC and build/.
#
#   make workloads        build/workloads/<name>, optimised, warnings errors
#   make workloads-test   ASan/UBSan builds in build/workloads-san/, then
#                         tests/workloads against both builds; the last
#                         line is "workloads: N passed, M failed"

WL_DIR := userspace/workloads
WL_PROGS := wl1 wl2 wl4 radix is
WL_SHARED := $(WL_DIR)/common.c $(WL_DIR)/pages.c $(WL_DIR)/bucket.c
WL_DEPS := $(WL_SHARED) $(wildcard $(WL_DIR)/*.h) $(WL_DIR)/workloads.mk
WL_WARN := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow \
	   -Wstrict-prototypes -Wmissing-prototypes -pthread
WL_CFLAGS := $(WL_WARN) -O2 -g
WL_SAN := $(WL_WARN) -O1 -g -fno-omit-frame-pointer \
	  -fsanitize=address,undefined -fno-sanitize-recover=all

.PHONY: workloads workloads-test

workloads: $(addprefix build/workloads/,$(WL_PROGS) hpl hpl-solve)

build/workloads/%: $(WL_DIR)/%.c $(WL_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(WL_CFLAGS) -o $@ $< $(WL_SHARED) -lm

build/workloads-san/%: $(WL_DIR)/%.c $(WL_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(WL_SAN) -o $@ $< $(WL_SHARED) -lm

# HPL's solve: ScaLAPACK's pdgesv under Open MPI (Debian's
# libscalapack-openmpi-dev, which make setup installs).
build/workloads/hpl-solve: $(WL_DIR)/hpl-solve.c $(WL_DIR)/workloads.mk
	@mkdir -p $(dir $@)
	mpicc $(WL_CFLAGS) -o $@ $< -lscalapack-openmpi -lm

build/workloads-san/hpl-solve: $(WL_DIR)/hpl-solve.c $(WL_DIR)/workloads.mk
	@mkdir -p $(dir $@)
	mpicc $(WL_SAN) -o $@ $< -lscalapack-openmpi -lm

build/workloads/hpl: $(WL_DIR)/hpl
	@mkdir -p $(dir $@)
	cp $< $@

workloads-test: workloads $(addprefix build/workloads-san/,$(WL_PROGS) hpl-solve)
	python3 -m pytest -p no:cacheprovider -q -rfE tests/workloads
