# SPDX-License-Identifier: GPL-2.0-only
#
# make            module and userspace tools
# make check      every test: lint, unit tests, VM tests (prints a summary)
# make demo       a device with emulated Flash and disk, swapped onto in a VM
# make bench-overhead   nswap2l against dm-linear on null_blk (results/)
#
# The module is built for KVER, the newest kernel whose headers are
# installed (Debian's linux-headers-amd64), not for the running kernel.

KVER ?= $(shell ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -1 | cut -d/ -f4)
KDIR ?= /lib/modules/$(KVER)/build
export KVER

CC ?= gcc
UCFLAGS := -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter \
	   -fsanitize=address,undefined -fno-sanitize-recover=all -pthread
PORTABLE_INC := -Iuserspace/include -Ipolicies -Idm-nswap2l
PORTABLE_SRC := dm-nswap2l/slotmap.c dm-nswap2l/runalloc.c $(wildcard policies/*.c)
PORTABLE_HDR := $(wildcard dm-nswap2l/*.h policies/*.h userspace/include/*.h)
TOOLS := build/tools/n2l-pattern build/tools/n2l-race

.PHONY: all setup module tools unit lint vm-test check demo bench-overhead clean

all: module tools

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) W=1 modules

tools: $(TOOLS)

build/tools/%: userspace/tools/%.c
	@mkdir -p $(dir $@)
	$(CC) $(UCFLAGS) -O2 -o $@ $<

build/unit: $(wildcard tests/unit/*.c tests/unit/*.h) $(PORTABLE_SRC) $(PORTABLE_HDR)
	@mkdir -p build
	$(CC) $(UCFLAGS) $(PORTABLE_INC) -o $@ $(wildcard tests/unit/*.c) $(PORTABLE_SRC)

unit: build/unit
	./build/unit

lint:
	tests/lint

vm-test: module tools
	tests/vm/run

# Installs what is missing (apt, pip); quick when nothing is.
setup:
	userspace/setup

check: setup
	tests/check

demo: setup
	$(MAKE) --no-print-directory module tools
	userspace/demo/demo

bench-overhead: setup
	$(MAKE) --no-print-directory module tools
	userspace/bench/overhead

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf build
