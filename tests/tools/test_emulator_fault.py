# SPDX-License-Identifier: GPL-2.0-only
"""userspace/vm/emulator-fault: tells a guest the emulator broke (reserved
RFLAGS bits in a register dump) from one whose software failed."""
import os
import subprocess

import pytest

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "userspace", "vm", "emulator-fault")

# From the console of a 6.12 guest under QEMU 7.2's TCG (build/vm/k12-1).
EMULATOR = """\
[  982.919382] WARNING: CPU: 1 PID: 2212 at arch/x86/kernel/traps.c:1120 exc_debug_kernel+0xca/0x160
[  982.943622] RIP: 0010:exc_debug_kernel+0xca/0x160
[  982.943987] RSP: 0000:fffffe753dc6cf28 EFLAGS: 3cb00002
[  982.945418] RIP: 0010:kmem_cache_alloc_node_noprof+0x74/0x330
[  982.945567] RSP: 0018:ff8e09b00151f970 EFLAGS: 3cb40782
"""

# An oops and a sysrq dump: every flag an x86 CPU can hold, none reserved.
SOFTWARE = """\
[  855.084326] RSP: 0018:ff55ba0ac1427a70 EFLAGS: 00000046
[ 1953.789979] RSP: 002b:00007ffca57eb5f8 EFLAGS: 00000202 ORIG_RAX: 0000000000000095
[   12.000000] RSP: 0018:ff55ba0ac1427a70 EFLAGS: 003f7fd7
"""


def verdict(tmp_path, text):
    log = tmp_path / "console.log"
    log.write_text(text)
    return subprocess.run([TOOL, str(log)], capture_output=True, text=True)


def test_reserved_rflags_bits_are_the_emulators_fault(tmp_path):
    r = verdict(tmp_path, SOFTWARE + EMULATOR)
    assert r.returncode == 0
    assert "EFLAGS: 3cb00002" in r.stdout


@pytest.mark.parametrize("text", [SOFTWARE, ""])
def test_a_guests_own_failure_is_not(tmp_path, text):
    r = verdict(tmp_path, text)
    assert r.returncode == 1 and r.stdout == ""


def test_no_console_is_no_verdict(tmp_path):
    r = subprocess.run([TOOL, str(tmp_path / "missing.log")], capture_output=True)
    assert r.returncode == 1
