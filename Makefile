# SPDX-License-Identifier: GPL-2.0-only
#
# make            module and userspace tools
# make media      the test-only n2lmedia target (emulated media timing), every kernel
# make check      every test: lint, unit tests, VM tests (prints a summary)
# make deb        Debian packages in build/deb/ (nswap2l-dkms, nswapd, nswap2l-tools)
# make demo       a device with emulated Flash and disk, swapped onto in a VM
# make bench-overhead   nswap2l against dm-linear on null_blk, and where the difference goes (results/)
# make bench-netram     Network RAM against swap over NBD and NVMe/TCP (results/)
# make bench-meta       what the metadata device costs: swap, fsync on ext4 (results/)
# make bench            the workloads on every configuration, quick (results/)
# make bench-full       the same, the whole matrix at full size (results/)
# make bench-sweep      when prefetching to Flash pays: link delay x Flash latency (results/)
# make bench-prefetch   whether and when prefetching pays: none, lrs, mrs, auto, paired, with CIs (results/)
# make bench-crypto     what Network RAM's security costs a page on this CPU, natively (results/)
# make bench-security   what psk: and encrypt: cost the client, instructions a page, servers elsewhere (results/)
#
# The module is built for KVER (userspace/kver: default the newest 6.1,
# Debian 12's kernel, with headers installed), not for the running kernel.

KVER ?= $(shell userspace/kver)
KDIR ?= /lib/modules/$(KVER)/build
export KVER

CC ?= gcc
UCFLAGS := -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter \
	   -fsanitize=address,undefined -fno-sanitize-recover=all -pthread
PORTABLE_INC := -Iuserspace/include -Ipolicies -Idm-nswap2l
PORTABLE_SRC := dm-nswap2l/slotmap.c dm-nswap2l/runalloc.c $(wildcard policies/*.c) \
		userspace/lib/n2l-compat-user.c
PORTABLE_HDR := $(wildcard dm-nswap2l/*.h policies/*.h userspace/include/*.h)
TOOLS := build/tools/n2l-pattern build/tools/n2l-race build/tools/n2l-cryptobench

.PHONY: all setup module modules media tools unit lint vm-test check deb demo bench-overhead bench-netram bench-meta \
	bench bench-full bench-sweep bench-prefetch bench-crypto bench-security bench-unit tools-unit packages-test chaos-long clean

all: module tools

# Each kernel's module in a tree of its own: build/kmod/$(KVER)/nswap2l.ko,
# what the build printed in build/kmod/$(KVER).log. With C=2 (make check's
# build), sparse checks every file as it builds, and tests/lint --from-build
# reads the log instead of building everything again.
KTREE := build/kmod/$(KVER)
# $(call kbuild,KDIR,TREE): Kbuild builds TREE, its output kept in TREE.log;
# a recipe line calling it starts with +, as one naming $(MAKE) need not,
# so that the sub-make shares the jobserver.
kbuild = $(MAKE) -C $(1) M=$(CURDIR)/$(2) W=1 modules >$(2).log 2>&1 || \
	{ cat $(2).log; exit 1; }; cat $(2).log
module:
	userspace/kmod-tree $(KTREE)
	+$(call kbuild,$(KDIR),$(KTREE))

# The module for every installed kernel (userspace/kver --all).
modules:
	for v in $$(userspace/kver --all); do $(MAKE) --no-print-directory module KVER=$$v || exit 1; done

# The test-only n2lmedia target, which gives a memory device the timing of
# Flash or a disk (userspace/media/dm-n2lmedia.c), for every installed
# kernel: build/kmod-media/<version>/dm-n2lmedia.ko. A test and benchmark
# tool: neither the top-level Kbuild nor the DKMS package has it.
media:
	+for v in $$(userspace/kver --all); do \
		mkdir -p build/kmod-media/$$v && \
		cp -u --preserve=timestamps userspace/media/Kbuild userspace/media/*.c \
			build/kmod-media/$$v/ && \
		{ $(call kbuild,/lib/modules/$$v/build,build/kmod-media/$$v); } || exit 1; \
	done

tools: $(TOOLS)

build/tools/%: userspace/tools/%.c
	@mkdir -p $(dir $@)
	$(CC) $(UCFLAGS) -O2 -o $@ $<

# A benchmark: built as nswapd is (nswap-net/nswapd.mk), optimised and not
# instrumented, so that what it times is OpenSSL's work, not the
# sanitizers'; tests/bench/test_crypto.py builds it under them.
build/tools/n2l-cryptobench: userspace/bench/crypto/n2l-cryptobench.c nswap-net/n2l-proto.h
	@mkdir -p $(dir $@)
	$(CC) $(NSWAPD_CFLAGS) -Inswap-net -o $@ $< -lcrypto

build/unit: $(wildcard tests/unit/*.c tests/unit/*.h) $(PORTABLE_SRC) $(PORTABLE_HDR)
	@mkdir -p build
	$(CC) $(UCFLAGS) $(PORTABLE_INC) -o $@ $(wildcard tests/unit/*.c) $(PORTABLE_SRC)

unit: build/unit
	./build/unit

lint:
	tests/lint

vm-test: modules media tools nswapd sim workloads deb
	tests/vm/run

# CI's chaos test at 2 GiB through Network RAM (tests/vm/chaos-long):
# figures under results/chaos-long-<date>/.
chaos-long: setup
	$(MAKE) --no-print-directory modules media tools nswapd
	tests/vm/chaos-long

# The packages, from a copy of the sources in build/deb/, lintian-checked
# (packaging/build-deb); tests/vm/packaged-root installs them for
# tests/vm/test_packages.py and for packages-test.
deb:
	packaging/build-deb

# What dpkg -i and dpkg --purge leave on this machine, checked natively in
# a mount namespace of overlays (the machine stays as it was).
packages-test: deb
	tests/vm/packaged-root build/packages-host -- \
		python3 -m pytest -p no:cacheprovider -q -rfE tests/packages

# Installs what is missing (apt, pip); quick when nothing is.
setup:
	userspace/setup

check: setup
	tests/check

demo: setup
	$(MAKE) --no-print-directory module tools nswapd
	userspace/demo/demo

bench-overhead: setup
	$(MAKE) --no-print-directory module tools
	userspace/bench/overhead --profile

bench-netram: setup
	$(MAKE) --no-print-directory module nswapd
	userspace/bench/netram

bench-meta: setup
	$(MAKE) --no-print-directory module tools workloads
	userspace/bench/meta

bench: setup
	$(MAKE) --no-print-directory module media nswapd workloads
	userspace/bench/run quick

bench-full: setup
	$(MAKE) --no-print-directory module media nswapd workloads
	userspace/bench/run full

bench-sweep: setup
	$(MAKE) --no-print-directory module media nswapd workloads
	userspace/bench/run sweep

bench-prefetch: setup
	$(MAKE) --no-print-directory module media nswapd workloads
	userspace/bench/run prefetch

# What psk: (a ChaCha20-Poly1305 tag on every frame) and encrypt: (AES-256-GCM
# on every page) cost a 4 KiB page in CPU time on this machine, natively:
# results/netram/crypto-native.{json,md}. Needs only a C compiler and
# libssl-dev (make setup installs them), no VM.
bench-crypto: build/tools/n2l-cryptobench
	python3 userspace/bench/crypto.py

# The same in the client's kernel path: instructions a 4 KiB page for plain,
# psk:, encrypt: and both, instruction-counted, with the page servers in a
# second guest (userspace/bench/security-cost); and the kernel's ciphers
# alone (tcrypt). results/netram/security-cost.{json,md}.
bench-security: setup
	$(MAKE) --no-print-directory module nswapd
	userspace/bench/security-cost

# The runner's parsing and report, on the host
bench-unit:
	python3 -m pytest -p no:cacheprovider -q -rfE tests/bench

# n2lctl's tab parser, the boot-time units and the VM harness's verdict
# on emulator faults (no VM).
tools-unit:
	python3 -m pytest -p no:cacheprovider -q -rfE tests/tools

clean:
	rm -rf build

# nswapd, the Network RAM page server, and its tests and fuzzing
include nswap-net/nswapd.mk
# the kernel client's frame checks, fuzzed in userspace
include nswap-net/fuzz/fuzz-client.mk

# The benchmark workloads (WL1, WL2, WL4, Radix, IS, HPL driver) and their tests
-include userspace/workloads/workloads.mk

# n2l-sim, the trace-replay simulator of the prefetch policies, and its tests
include userspace/sim/sim.mk
