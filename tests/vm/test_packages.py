"""The Debian packages (make deb) as a machine gets them: installed with
dpkg -i, which has DKMS build the module for every kernel with headers,
before this guest boots on that machine (tests/vm/packaged-root); a swap
device made, swapped on and removed with installed files alone (n2lctl,
nswapd, the module from /lib/modules). What dpkg --purge leaves is
tests/packages' to check, natively: DKMS's removal runs depmod for every
kernel, ten minutes and more under TCG."""
import os

import pytest

import n2l
from n2l import sh
from n2ldebs import PACKAGES, installed, kernels_with_headers
from test_io import swap_workload


def unload(module):
    if os.path.exists(f"/sys/module/{module}"):
        sh(f"rmmod {module}")


@pytest.fixture
def packages():
    """The installed packages, with the module the other tests load
    (n2l.MODULE) in place again after the test. dpkg, DKMS and depmod
    write to /usr, /etc and /var: virtme-ng lays overlays over them whose
    upper half is in the guest's memory."""
    missing = [pkg for pkg in PACKAGES if not installed(pkg)]
    assert not missing, (f"{missing} not installed: this test runs on the machine "
                         "tests/vm/packaged-root installs them on")
    for d in ("/usr", "/etc", "/var"):
        assert os.access(d, os.W_OK), f"{d} is read-only in the guest"
    # The man-db trigger would index every manual page again (virtme-ng
    # puts an empty tmpfs on /var/cache): minutes under TCG, for nothing.
    if os.path.exists("/var/lib/man-db/auto-update"):
        os.unlink("/var/lib/man-db/auto-update")
    unload("nswap2l")   # the tree's, loaded for the session by conftest
    yield
    try:
        unload("nswap2l")   # the one DKMS built
    finally:
        n2l.load_modules()


def test_install_build_swap_remove(packages, lab):
    kver = os.uname().release
    status = sh("dkms status nswap2l")
    for k in kernels_with_headers():
        assert f", {k}, x86_64: installed" in status, status

    # The module modprobe finds is the one DKMS installed, and loads.
    path = sh("modinfo -n nswap2l").strip()
    # .ko.xz where the kernel's own modules are compressed (6.12)
    assert path.startswith(f"/lib/modules/{kver}/updates/dkms/nswap2l.ko"), path
    # srcversion is not in /sys/module on every kernel (6.12 lacks it):
    # what modprobe would insert is the proof.
    assert f"insmod {path}" in sh("modprobe --show-depends nswap2l")
    sh("modprobe nswap2l")

    # nswapd as its unit runs it: the user the package made, CAP_IPC_LOCK
    # alone, the installed configuration; on a link of its own, without
    # keys (the test's client has none).
    unit = open("/lib/systemd/system/nswapd.service").read()
    assert "User=nswapd" in unit and "AmbientCapabilities=CAP_IPC_LOCK" in unit
    sh("getent passwd nswapd")
    link = n2l.Link(1)
    srv = n2l.Process(link, [
        "setpriv", "--reuid=nswapd", "--regid=nswapd", "--clear-groups",
        "--inh-caps=+ipc_lock", "--ambient-caps=+ipc_lock",
        "/usr/sbin/nswapd", "--config", "/etc/nswapd/nswapd.conf",
        "--listen", f"{link.addr}:7070", "--insecure", "--require-mlock",
        "--min-mb", "32", "--max-mb", "32", "--reserve-mb", "0"],
        7070, "server-packaged.log")
    lab.servers.append(srv)

    # The device as /etc/nswap2ltab and the installed generator's units
    # make it at boot (tests/boot boots one with systemd): n2lctl tab
    # start creates it (with the udev rule's uuid) and runs mkswap, the
    # swap unit swaps on, n2lctl tab stop swaps off and removes it.
    flash = lab.flash(32)
    with open("/etc/nswap2ltab", "w") as f:
        f.write(f"n2l-pkg flash={flash.path} {srv.name} - size=96M,swap,pri=5\n")
    units = "/tmp/n2l/generated"
    sh(f"rm -rf {units}; mkdir -p {units}")
    sh(f"/lib/systemd/system-generators/nswap2l-generator {units}")
    swap_unit = open(f"{units}/dev-mapper-n2l\\x2dpkg.swap").read()
    assert "Priority=5" in swap_unit, swap_unit
    assert os.path.exists("/lib/udev/rules.d/11-dm-nswap2l.rules")
    out = sh("/usr/sbin/n2lctl tab start n2l-pkg")
    dev = n2l.Device("n2l-pkg")
    lab.devices.append(dev)    # removed by the lab should a step fail
    assert " nswap2l " in out
    assert sh("dmsetup info -c --noheadings -o uuid n2l-pkg").strip() == "NSWAP2L-n2l-pkg"
    assert "TYPE=\"swap\"" in sh(f"blkid -p {dev.path}")

    p, st = swap_workload(dev, limit_mb=32, vm_mb=64, seconds=10, mkswap=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert st["netram"]["writes"] > 0, "nothing swapped out to nswapd"
    assert "n2l-pkg" in sh("/usr/sbin/n2lctl status n2l-pkg")
    assert 'nswap2l_slots{device="n2l-pkg"}' in sh("/usr/sbin/n2lctl metrics n2l-pkg")
    sh("/usr/sbin/n2lctl tab stop n2l-pkg")
    lab.devices.remove(dev)
    assert not os.path.exists(dev.path)
    os.unlink("/etc/nswap2ltab")
