# SPDX-License-Identifier: GPL-2.0-only
import os
import sys

# the benchmark's modules, and the library they share (userspace/pylib)
for _lib in ("pylib", "bench"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "userspace", _lib))
