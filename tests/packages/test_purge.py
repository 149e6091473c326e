# SPDX-License-Identifier: GPL-2.0-only
"""What dpkg leaves of the packages, on the machine tests/vm/packaged-root
installed them on, natively: DKMS built the module for every kernel with
headers, and dpkg --purge takes every file away again, the module of
every kernel included. Natively, because DKMS's removal runs depmod for
each kernel: ten minutes and more under TCG (tests/vm/test_packages.py
uses the packages in a guest)."""
import glob
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "userspace", "pylib"))
from n2ldebs import PACKAGES, installed, kernels_with_headers  # noqa: E402


def run(cmd):
    return subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def packaged():
    missing = [pkg for pkg in PACKAGES if not installed(pkg)]
    if missing:
        pytest.fail(f"{missing} not installed: run under tests/vm/packaged-root")
    return kernels_with_headers()


def test_dkms_built_the_module_for_every_kernel(packaged):
    status = run("dkms status nswap2l").stdout
    assert packaged, "no kernel headers installed"
    for k in packaged:
        assert f", {k}, x86_64: installed" in status, status
        assert glob.glob(f"/lib/modules/{k}/updates/dkms/nswap2l.ko*"), k


def test_purge_takes_every_file_away(packaged):
    files = run(f"dpkg -L {' '.join(PACKAGES)}").stdout.split()
    owned = [f for f in files if os.path.isfile(f)]
    assert "/usr/sbin/n2lctl" in owned and "/usr/sbin/nswapd" in owned
    p = run(f"DEBIAN_FRONTEND=noninteractive dpkg --purge {' '.join(PACKAGES)}")
    assert p.returncode == 0, p.stdout + p.stderr
    assert not [pkg for pkg in PACKAGES if installed(pkg)]
    left = [f for f in owned if os.path.exists(f)]
    assert not left, left
    # What DKMS made, not dpkg: the built modules and its tree.
    assert not glob.glob("/lib/modules/*/updates/dkms/nswap2l.ko*")
    assert not glob.glob("/var/lib/dkms/nswap2l")
    for k in packaged:
        p = run(f"modinfo -k {k} -n nswap2l")
        assert p.returncode != 0, p.stdout
    # Purged, not just removed: the configuration too.
    assert not os.path.exists("/etc/nswapd"), os.listdir("/etc/nswapd")
