# SPDX-License-Identifier: GPL-2.0-only
"""A filesystem on a device with metadata survives a hard reset of the
machine: its Flash, disk and metadata device are files on the host, each a
virtio disk of the guest, so they outlive it. One boot writes fsynced files
and resets the machine (sysrq b) while writing goes on; the next boot
loads the same table, mounts, finds every fsynced file intact, and fsck is
clean (tests/reboot/guest.py). Repeated at several points of the run.

Runs on the host: two guests a test.
"""
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "build", "vm", "reboot")
DISKS = (("flash", 48), ("disk", 40), ("meta", 4))     # MiB: guest.py tells them apart so


def boot(name, disks, *args):
    """n2l-vm running guest.py with @args, on @disks: (exit status, console)."""
    out = os.path.join(OUT, name)
    shutil.rmtree(out, ignore_errors=True)      # nothing of an earlier run
    # A reset is the first boot's end, not an emulator fault to boot again
    # for; ten minutes are plenty for either boot.
    env = dict(os.environ, N2L_VM_DISKS=" ".join(disks), N2L_VM_CPUS="1",
               N2L_VM_AGAIN_ON_EMULATOR_FAULT="0", N2L_VM_TIMEOUT="600")
    p = subprocess.run([os.path.join(REPO, "userspace", "vm", "n2l-vm"), "--out", out, "--",
                        "python3", os.path.join(HERE, "guest.py"), *args],
                       env=env, capture_output=True, text=True)
    with open(os.path.join(out, "console.log"), errors="replace") as f:
        console = f.read()
    return p.returncode, p.stdout + p.stderr, console


@pytest.mark.parametrize("cut", [5, 30, 90])
def test_every_fsynced_file_survives_a_hard_reset(cut):
    disks = []
    for role, mb in DISKS:
        path = os.path.join(OUT, f"cut{cut}-{role}.img")
        os.makedirs(OUT, exist_ok=True)
        with open(path, "wb") as f:
            f.truncate(mb << 20)        # zeroed: the metadata device is formatted
        disks.append(path)

    _, said, console = boot(f"cut{cut}-write", disks, "write", str(cut))
    reset = os.path.join(OUT, f"cut{cut}-write", "reset")
    assert os.path.exists(reset) and "sysrq: Resetting" in console, \
        f"the first boot did not reset as told:\n{said[-4000:]}"
    log = os.path.join(OUT, f"cut{cut}-write", "fsynced.log")
    with open(log) as f:
        logged = sum(1 for line in f if line.endswith("\n"))
    assert logged >= cut
    rc, said, _ = boot(f"cut{cut}-check", disks, "check", log)
    assert rc == 0, said[-6000:]
    assert f"reboot: {logged} fsynced files, 0 wrong; fsck exit 0" in said, said[-3000:]
