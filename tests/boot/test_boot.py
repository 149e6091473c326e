# SPDX-License-Identifier: GPL-2.0-only
"""Boot-time setup, in a guest booted with systemd as init (boot-vm): the
device of /etc/nswap2ltab comes up after the network and its Flash, is
swapped on with its priority and carries a verified workload, udev's
probes stay off its slots, and at shutdown swap goes off before the device
goes, and the device before the network (its page servers).

Runs on the host: one boot serves every test here.
"""
import json
import os
import re
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "build", "vm", "boot")
KERNEL_PROBLEM = re.compile(r"BUG:|WARNING:|Oops|Kernel panic|Call Trace")


@pytest.fixture(scope="module")
def boot():
    p = subprocess.run([os.path.join(HERE, "boot-vm"), OUT], capture_output=True, text=True)
    with open(os.path.join(OUT, "console.log"), errors="replace") as f:
        console = f.read()
    found = {}
    for m in re.finditer(r"N2L-BOOT (\w+) (.*)$", console, re.M):
        found[m.group(1)] = json.loads(m.group(2))
    if "done" not in found:
        pytest.fail(f"the guest never finished boot-check (boot-vm: {p.returncode}"
                    f" {p.stdout}{p.stderr}); console:\n{console[-6000:]}")
    return console, found


def at(console, pattern):
    """Where pattern first appears on the console."""
    m = re.search(pattern, console, re.M)
    assert m, f"'{pattern}' is not on the console"
    return m.start()


def test_the_tab_device_is_swapped_on_at_boot_with_its_priority(boot):
    _, found = boot
    units = {u["Id"]: u for u in found["units"]}
    for unit in ("nswap2l@boot0.service", "dev-mapper-boot0.swap"):
        assert units[unit]["ActiveState"] == "active", units
    dm = found["dm"]
    assert dm.startswith("/dev/dm-"), dm
    [swap] = [s for s in found["swaps"] if s[0] == dm]
    assert swap[4] == "7", swap


def test_a_verified_workload_swaps_to_network_ram_and_flash(boot):
    _, found = boot
    assert found["workload"] == {"rc": 0, "failures": []}
    st = found["status"]
    # Two 48 MB workers under a 48 MB limit swap out thousands of pages:
    # a handful (mkswap's header) means they ran without swap, killed and
    # restarted by the OOM killer.
    assert st["netram"]["writes"] > 1000, st
    assert st["prefetched"] > 0 and st["flash"]["held"] > 0, st
    assert st["lost"] == 0 and st["failed_reads"] == 0, st


def test_udev_probes_stay_off_the_slots(boot):
    """A change event reads the slots of an nswap2l device made without the
    NSWAP2L- uuid (blkid, in 60-persistent-storage-dm.rules); the tab's
    device, made by n2lctl, is left alone."""
    _, found = boot
    assert found["udev"]["DM_UUID"] == "NSWAP2L-boot0"
    assert found["udev"]["DM_NOSCAN"] == "1"
    assert found["udev"]["ID_FS_TYPE"] is None
    assert found["probe_reads"]["control"] > 0, found["probe_reads"]
    assert found["probe_reads"]["tab"] == 0, found["probe_reads"]


def test_shutdown_takes_swap_off_before_the_device_and_the_device_before_the_network(boot):
    console, _ = boot
    swap_off = at(console, r"Deactivated swap .*dev-mapper-boot0\.swap")
    device_gone = at(console, r"Stopped .*nswap2l@boot0\.service")
    servers_gone = min(at(console, rf"Stopped .*n2l-boot-server@{port}\.service")
                       for port in (7070, 7071))
    assert swap_off < device_gone < servers_gone
    at(console, r"reboot: Power down")
    failed = re.findall(r"FAILED.*(?:nswap2l|boot0|n2l-boot).*", console)
    assert not failed, failed


def test_no_kernel_problem_from_boot_to_power_off(boot):
    console, _ = boot
    problems = [ln for ln in console.splitlines() if KERNEL_PROBLEM.search(ln)]
    assert not problems, problems
