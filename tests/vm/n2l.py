"""Helpers for the in-VM tests: media, nswap2l devices, status parsing.

Modelled on dmtest-python's Target/Table/Dev helpers and lvm2's aux.sh:
media are real kernel block devices (memory-backed null_blk through
configfs), devices are made with dmsetup, and every helper cleans up after
itself so that one test's leftovers cannot make another pass or fail.
"""
import os
import re
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "userspace", "pylib"))
# The lab itself (media, links, servers, devices) is shared with the demo
# and the benchmarks.
from n2llab import (MODULE, TOOLS, CommandError, Device, Link, NullBlk,  # noqa: E402,F401
                    Process, load_modules, remote_link, run, sh, wait_for)
from nswap2l import MEDIA, parse_status, table_line  # noqa: E402,F401

SLOT = 4096
EVIL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "evil_server.py")


_kmsg_seq = [-1]


def settle():
    """Wait until udev is done with the events it has queued: it probes a
    device-mapper device (blkid reads it) when the device is resumed."""
    sh("udevadm settle")


UDEV_RULES = "/run/udev/rules.d"


def unwatch_dm_devices():
    """Stop udev from probing device-mapper devices after every close that
    follows a write (60-persistent-storage-dm.rules asks for it): those
    reads land in the counters the tests check, at a time no settle() can
    pin down, since udev queues the event only when inotify tells it."""
    os.makedirs(UDEV_RULES, exist_ok=True)
    with open(os.path.join(UDEV_RULES, "99-nswap2l-tests.rules"), "w") as f:
        f.write('SUBSYSTEM=="block", KERNEL=="dm-*", OPTIONS:="nowatch"\n')
    sh("udevadm control --reload")


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
# Page servers and data patterns


def page_server(index, kind="nswapd", args=(), delay_us=0, rate_mbit=0, port=7070):
    """nswapd, or the misbehaving test server, on link <index>."""
    link = Link(index, delay_us=delay_us, rate_mbit=rate_mbit)
    if kind == "nswapd":
        argv = [os.path.join(REPO, "build", "nswapd"), "--listen",
                f"{link.addr}:{port}", *args]
    else:
        argv = [os.environ.get("N2L_PYTHON", sys.executable), EVIL,
                "--listen", f"{link.addr}:{port}", *args]
    try:
        return Process(link, argv, port, f"server-{index}.log")
    except Exception:
        link.remove()
        raise


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


def scan_pattern(path, offset, length, seed):
    """(good, wrong, eio) blocks: see n2l-pattern scan."""
    p = run(f"{TOOLS}/n2l-pattern scan {path} {offset} {length} {seed}")
    if p.returncode not in (0, 1):
        raise CommandError(p.stderr)
    return tuple(int(x) for x in p.stdout.split())


def is_zero(path, offset, length):
    return run(f"{TOOLS}/n2l-pattern zero {path} {offset} {length} 0").returncode == 0
