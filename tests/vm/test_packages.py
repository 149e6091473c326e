"""The Debian packages (make deb) as a machine gets them: installed with
dpkg, DKMS builds the module for the running kernel, and a swap device is
made, swapped on and removed with installed files alone (n2lctl, nswapd,
the module from /lib/modules)."""
import glob
import os
import time

import pytest

import n2l
from n2l import run, sh
from test_io import swap_workload

PACKAGES = ("nswap2l-dkms", "nswapd", "nswap2l-tools")
DEB_DIR = os.path.join(n2l.REPO, "build", "deb")


def debs():
    """The three packages' .deb files, or a skip when make deb has not run."""
    found = []
    for pkg in PACKAGES:
        files = glob.glob(os.path.join(DEB_DIR, f"{pkg}_*.deb"))
        if len(files) != 1:
            pytest.skip(f"no single {pkg}_*.deb in {DEB_DIR}: make deb")
        found += files
    return found


def unload(module):
    if os.path.exists(f"/sys/module/{module}"):
        sh(f"rmmod {module}")


@pytest.fixture
def packages():
    """The packages' files, to be installed by the test and purged after
    it, with the module the other tests load (n2l.MODULE) in place again.
    dpkg, DKMS and depmod write to /usr, /etc and /var: virtme-ng lays
    overlays over them whose upper half is in the guest's memory (the
    host's tree stays as it is)."""
    files = debs()
    for d in ("/usr", "/etc", "/var"):
        assert os.access(d, os.W_OK), f"{d} is read-only in the guest"
    # virtme-ng binds a file of its own over /etc/shadow, which useradd
    # (adduser, in nswapd's postinst) cannot replace: the overlay's own
    # file, writable, takes its place.
    if os.path.ismount("/etc/shadow"):
        sh("umount /etc/shadow")
    # The man-db trigger would index every manual page again (virtme-ng
    # puts an empty tmpfs on /var/cache): minutes under TCG, for nothing.
    if os.path.exists("/var/lib/man-db/auto-update"):
        os.unlink("/var/lib/man-db/auto-update")
    unload("nswap2l")   # the tree's, loaded for the session by conftest
    yield files
    try:
        unload("nswap2l")   # the one DKMS built
        sh(f"dpkg --purge {' '.join(PACKAGES)}", timeout=600)
    finally:
        n2l.load_modules()


def test_install_build_swap_remove(packages, lab):
    kver = os.uname().release

    # dpkg's output goes where the host sees it while it runs: the DKMS
    # builds take minutes under TCG.
    log = os.path.join(os.environ.get("N2L_OUT", "/tmp/n2l"), "dpkg-i.log")
    t0 = time.monotonic()
    p = run(f"DEBIAN_FRONTEND=noninteractive dpkg -i {' '.join(packages)} >{log} 2>&1",
            timeout=3000)
    took = time.monotonic() - t0
    # In the kernel log (the guest's dmesg.txt), so that the time is kept.
    n2l.kmsg(f"dpkg -i of the packages, DKMS builds included, took {took:.0f} s")
    assert p.returncode == 0, open(log).read()
    status = sh("dkms status nswap2l")
    assert f", {kver}, x86_64: installed" in status, status

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
