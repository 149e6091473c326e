"""Helpers for the in-VM tests: media, nswap2l devices, status parsing.

Modelled on dmtest-python's Target/Table/Dev helpers and lvm2's aux.sh:
media are real kernel block devices (memory-backed null_blk through
configfs), devices are made with dmsetup, and every helper cleans up after
itself so that one test's leftovers cannot make another pass or fail.
"""
import os
import re
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "nswap2l.ko")
TOOLS = os.path.join(REPO, "build", "tools")
NULLB = "/sys/kernel/config/nullb"
SLOT = 4096
sys.path.insert(0, os.path.join(REPO, "userspace", "pylib"))
from nswap2l import MEDIA, parse_status, table_line  # noqa: E402,F401


class CommandError(Exception):
    pass


def sh(cmd, check=True, timeout=600, input=None):
    """Run a shell command; return its stdout. Raise with stderr on failure."""
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True,
                       timeout=timeout, input=input)
    if check and p.returncode != 0:
        raise CommandError(f"{cmd!r} exited {p.returncode}\nstdout: {p.stdout}\n"
                           f"stderr: {p.stderr}")
    return p.stdout


def run(cmd, timeout=600):
    """Run a shell command; return the CompletedProcess, never raise."""
    return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                          timeout=timeout)


_kmsg_seq = [-1]


def settle():
    """Wait until udev is done: it re-reads a device after every close that
    follows a write, and those reads show in the counters."""
    sh("udevadm settle")


def dmesg_new():
    """Kernel log lines since the last call, read from /dev/kmsg by sequence
    number, so that the log itself stays whole for the harness."""
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    lines = []
    try:
        while True:
            try:
                rec = os.read(fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except BrokenPipeError:  # overwritten before we read it
                continue
            prefix, _, msg = rec.partition(";")
            seq = int(prefix.split(",")[1])
            if seq > _kmsg_seq[0]:
                _kmsg_seq[0] = seq
                lines.append(msg.split("\n")[0])
    finally:
        os.close(fd)
    return lines


BAD_KERNEL_LINES = re.compile(r"BUG:|WARNING:|Oops|general protection|"
                              r"KASAN|UBSAN|kernel BUG|list_add corruption|"
                              r"list_del corruption|INFO: task .* blocked")


def kernel_problems(lines):
    return [line for line in lines if BAD_KERNEL_LINES.search(line)]


# ----------------------------------------------------------------------------
# Media

_nullb_index = [0]


class NullBlk:
    """A memory-backed null_blk device made through configfs.

    discard=True gives discard support (what TRIM pass-down needs);
    latency_ns, if set, delays every completion by that much (a Flash
    profile); mbps throttles bandwidth; cache_mb emulates a volatile write
    cache, so that flushes and FUA reach the driver.
    """

    def __init__(self, size_mb, discard=False, latency_ns=0, mbps=0,
                 memory_backed=True, cache_mb=0, blocksize=4096):
        _nullb_index[0] += 1
        self.name = f"n2lt{_nullb_index[0]}"
        self.dir = os.path.join(NULLB, self.name)
        os.mkdir(self.dir)
        self._set("size", size_mb)
        self._set("blocksize", blocksize)
        self._set("memory_backed", int(memory_backed))
        self._set("discard", int(discard))
        if latency_ns:
            self._set("irqmode", 2)
            self._set("completion_nsec", latency_ns)
        if mbps:
            self._set("mbps", mbps)
        if cache_mb:
            self._set("cache_size", cache_mb)
        self._set("power", 1)
        # Since 5.19 a configfs null_blk disk is named after its directory.
        self.path = f"/dev/{self.name}"
        self.sysname = self.name
        for _ in range(100):
            if os.path.exists(self.path):
                break
            time.sleep(0.05)
        else:
            raise CommandError(f"{self.path} did not appear")
        self.size_mb = size_mb

    def _set(self, attr, value):
        with open(os.path.join(self.dir, attr), "w") as f:
            f.write(f"{value}\n")

    def stat(self):
        """/sys/block/<dev>/stat as a dict of the fields we use."""
        f = [int(x) for x in open(f"/sys/block/{self.sysname}/stat").read().split()]
        return {"reads": f[0], "writes": f[4], "discards": f[11],
                "discard_sectors": f[13], "flushes": f[15] if len(f) > 15 else 0}

    def remove(self):
        if os.path.isdir(self.dir):
            self._set("power", 0)
            os.rmdir(self.dir)


def load_null_blk():
    # Loading null_blk loads configfs, which makes the mount point.
    sh("modprobe null_blk nr_devices=0")
    if not os.path.ismount("/sys/kernel/config"):
        sh("mount -t configfs none /sys/kernel/config")


# ----------------------------------------------------------------------------
# nswap2l devices


class Device:
    """An nswap2l device made with dmsetup create; removed by remove()."""

    def __init__(self, name, table):
        self.name = name
        self.path = f"/dev/mapper/{name}"
        sh(f"dmsetup create {name} --table '{table}'")
        self.minor = int(sh(f"dmsetup info -c --noheadings -o minor {name}").strip())
        self.sysfs = f"/sys/block/dm-{self.minor}/nswap2l"

    def status(self):
        return parse_status(sh(f"dmsetup status {self.name}").strip())

    def table(self):
        return sh(f"dmsetup table {self.name}").strip()

    def message(self, *words, check=True):
        return run(f"dmsetup message {self.name} 0 " + " ".join(words)) \
            if not check else sh(f"dmsetup message {self.name} 0 " + " ".join(words))

    def reload(self, table):
        sh(f"dmsetup reload {self.name} --table '{table}'")
        sh(f"dmsetup resume {self.name}")

    def sysfs_read(self, attr):
        return open(os.path.join(self.sysfs, attr)).read()

    def sysfs_write(self, attr, value):
        """Write a sysfs attribute; return 0 or the errno of the failure."""
        try:
            with open(os.path.join(self.sysfs, attr), "w") as f:
                f.write(value)
            return 0
        except OSError as e:
            return e.errno

    def remove(self):
        if os.path.exists(self.path):
            sh(f"dmsetup remove --retry {self.name}")


def write_pattern(path, offset, length, seed):
    """Fill [offset, offset+length) with a reproducible pattern, 1 MiB per
    write (see userspace/tools/n2l-pattern.c)."""
    sh(f"{TOOLS}/n2l-pattern write {path} {offset} {length} {seed}")


def check_pattern(path, offset, length, seed):
    """Return the number of 4 KiB blocks that do not hold the pattern."""
    p = run(f"{TOOLS}/n2l-pattern check {path} {offset} {length} {seed}")
    if p.returncode not in (0, 1):
        raise CommandError(p.stderr)
    return int(p.stdout.split()[0])


def is_zero(path, offset, length):
    return run(f"{TOOLS}/n2l-pattern zero {path} {offset} {length} 0").returncode == 0
