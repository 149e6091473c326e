// SPDX-License-Identifier: GPL-2.0-only
/* The state behind n2l-compat-user.h's get_random_u32() stand-in. */
#include "n2l-compat-user.h"

u64 n2l_random_state = 0x9e3779b97f4a7c15ULL;
