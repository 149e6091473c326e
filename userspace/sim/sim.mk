# n2l-sim, the trace-replay simulator of the prefetch policies, and its
# tests. Included from the top-level Makefile; uses CC, PORTABLE_INC and
# PORTABLE_SRC (the policies build from the module's own source files).
#
#   make sim         build/n2l-sim, optimised, warnings are errors
#   make sim-test    ASan/UBSan builds of n2l-sim and of the C tests in
#                    build/sim-san/, then tests/sim against them; the last
#                    line is "sim: N passed, M failed"

SIM_DIR := userspace/sim
SIM_SRC := $(filter-out $(SIM_DIR)/main.c,$(wildcard $(SIM_DIR)/*.c))
SIM_POLICY_SRC := $(filter policies/%.c userspace/lib/%.c,$(PORTABLE_SRC))
SIM_HDR := $(wildcard $(SIM_DIR)/*.h policies/*.h dm-nswap2l/n2l-types.h \
	   userspace/include/*.h)
SIM_DEPS := $(SIM_DIR)/main.c $(SIM_SRC) $(SIM_POLICY_SRC) $(SIM_HDR) \
	    $(SIM_DIR)/sim.mk
SIM_INC := -I$(SIM_DIR) $(PORTABLE_INC)
SIM_WARN := -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	    -Wno-unused-parameter -Wshadow -Wstrict-prototypes \
	    -Wmissing-prototypes -pthread
SIM_CFLAGS := $(SIM_WARN) -O2 -g
SIM_SAN := $(SIM_WARN) -O1 -g -fno-omit-frame-pointer \
	   -fsanitize=address,undefined -fno-sanitize-recover=all
SIM_TEST_SRC := $(wildcard tests/sim/*.c) tests/unit/unit-main.c
SIM_TEST_DEPS := $(SIM_TEST_SRC) tests/unit/unit.h $(SIM_DEPS)

.PHONY: sim sim-test

sim: build/n2l-sim

build/n2l-sim: $(SIM_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) $(SIM_INC) -o $@ $(SIM_DIR)/main.c $(SIM_SRC) \
		$(SIM_POLICY_SRC)

build/sim-san/n2l-sim: $(SIM_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_SAN) $(SIM_INC) -o $@ $(SIM_DIR)/main.c $(SIM_SRC) \
		$(SIM_POLICY_SRC)

build/sim-san/sim-unit: $(SIM_TEST_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_SAN) $(SIM_INC) -Itests/unit -o $@ $(SIM_TEST_SRC) \
		$(SIM_SRC) $(SIM_POLICY_SRC)

sim-test: build/n2l-sim build/sim-san/n2l-sim build/sim-san/sim-unit
	tests/sim/run build
