# SPDX-License-Identifier: GPL-2.0-only
"""The guest side of test_reboot.py, one boot each phase.

write CUT: a device with metadata over the machine's three virtio disks
(Flash, disk and metadata, told apart by size), ext4 on it, files
written and fsynced one after the other, each logged with its digest in
$N2L_OUT/fsynced.log (on the host, fsynced) once it and its directory
are (tests/vm/fsync_writer.py); when CUT are, a second more of writing
and then a hard reset (sysrq b): no unmount, no flush, no closing
commit, with the writer still running. $N2L_OUT/reset says it came.

check LOG: the next boot. The same table loads the map; ext4 mounts
(replaying its journal); every file LOG names holds what was fsynced;
fsck finds nothing. Exits 0 only then, saying what it found.
"""
import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "userspace", "pylib"))
import n2llab  # noqa: E402
from n2llab import sh  # noqa: E402
from nswap2l import table_line  # noqa: E402

MB = 1 << 20
SIZES = {"flash": 48, "disk": 40, "meta": 4}     # MiB, as test_reboot.py makes them
DEVICE_MB = 80
MNT = "/tmp/n2l/reboot"
OUT = os.environ["N2L_OUT"]
WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm", "fsync_writer.py")


def disks():
    """{role: /dev/vdX} by each virtio disk's size."""
    found = {}
    for name in sorted(os.listdir("/sys/block")):
        if not name.startswith("vd"):
            continue
        with open(f"/sys/block/{name}/size") as f:
            mb = int(f.read()) * 512 // MB
        for role, size in SIZES.items():
            if mb == size:
                found[role] = f"/dev/{name}"
    if set(found) != set(SIZES):
        sys.exit(f"reboot: disks of {SIZES} MiB expected, found {found}")
    return found


def create():
    d = disks()
    table = table_line(DEVICE_MB << 11, d["flash"], d["disk"],
                       features=[f"metadata:{d['meta']}"])
    n2llab.load_modules()
    sh(f"dmsetup create n2l-reboot --table '{table}'")
    return "/dev/mapper/n2l-reboot"


def write(cut):
    dev = create()
    sh(f"mkfs.ext4 -q -E nodiscard {dev}")
    os.makedirs(MNT, exist_ok=True)
    sh(f"mount {dev} {MNT}")
    log = os.path.join(OUT, "fsynced.log")
    with open(log, "w"):                # the writer appends: none left from before
        pass
    writer = subprocess.Popen([sys.executable, WRITER, MNT, log])
    while logged(log) < cut:
        if writer.poll() is not None:
            sys.exit(f"reboot: the writer ended ({writer.returncode})")
        time.sleep(0.1)
    time.sleep(1)                       # writing goes on, to be cut short
    meta = metadata(dev)
    print(f"reboot: reset after {logged(log)} files, metadata {meta}", flush=True)
    with open(os.path.join(OUT, "reset"), "w") as f:
        f.write(f"{logged(log)} {meta}\n")
        f.flush()
        os.fsync(f.fileno())
    with open("/proc/sys/kernel/sysrq", "w") as f:
        f.write("1")
    with open("/proc/sysrq-trigger", "w") as f:
        f.write("b")
    time.sleep(60)
    sys.exit("reboot: still running after sysrq b")


def metadata(dev):
    """The device's sysfs metadata: state, generation, commits."""
    minor = os.minor(os.stat(dev).st_rdev)
    with open(f"/sys/block/dm-{minor}/nswap2l/metadata") as f:
        return f.read().strip()


def logged(log):
    """Whole lines of @log: files fsynced."""
    try:
        with open(log) as f:
            return sum(1 for line in f if line.endswith("\n"))
    except FileNotFoundError:
        return 0


def check(log):
    dev = create()
    kmsg = sh("dmesg")
    loaded = [x for x in kmsg.splitlines() if "loaded from metadata generation" in x]
    print("reboot: " + (loaded[-1].split("] ", 1)[-1] if loaded else "no map loaded"))
    if not loaded or "without a clean close" not in loaded[-1]:
        sys.exit("reboot: the map was not loaded as after a crash")
    os.makedirs(MNT, exist_ok=True)
    sh(f"mount {dev} {MNT}")
    bad, files = [], 0
    with open(log) as f:
        for line in f:
            if not line.endswith("\n"):
                break                   # its writing cut short by the reset
            name, digest = line.split()
            files += 1
            try:
                with open(os.path.join(MNT, name), "rb") as fh:
                    if hashlib.sha256(fh.read()).hexdigest() != digest:
                        bad.append(f"{name}: other data")
            except OSError as e:
                bad.append(f"{name}: {e}")
    sh(f"umount {MNT}")
    fsck = subprocess.run(["fsck.ext4", "-fn", dev], capture_output=True, text=True)
    sh("dmsetup remove n2l-reboot")
    print(f"reboot: {files} fsynced files, {len(bad)} wrong; fsck exit {fsck.returncode}")
    if bad:
        sys.exit("reboot: " + "; ".join(bad[:10]))
    if fsck.returncode:
        sys.exit("reboot: fsck: " + fsck.stdout + fsck.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit("usage: guest.py write CUT | check LOG")
    write(int(sys.argv[2])) if sys.argv[1] == "write" else check(sys.argv[2])
