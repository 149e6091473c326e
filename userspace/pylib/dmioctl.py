# SPDX-License-Identifier: GPL-2.0-only
"""A device's status and its target messages, and a device made and
removed, through the device-mapper ioctls (include/uapi/linux/dm-ioctl.h),
without starting dmsetup: a process start costs a guest under TCG a
tenth of a second or more, and the tests poll the status in loops and
load devices hundreds of times. Output as dmsetup prints it."""
import errno
import fcntl
import os
import struct
import time

CONTROL = "/dev/mapper/control"

# struct dm_ioctl: version[3], data_size, data_start, target_count,
# open_count, flags, event_nr, padding, dev, name[128], uuid[129], data[7]
HEADER = struct.Struct("=3IIIIiIIIQ128s129s7s")
TARGET_SPEC = struct.Struct("=QQiI16s")     # struct dm_target_spec
assert HEADER.size == 312 and TARGET_SPEC.size == 40

DM_DEV_CREATE = 0xc138fd03      # _IOWR(0xfd, 3, struct dm_ioctl)
DM_DEV_REMOVE = 0xc138fd04
DM_DEV_SUSPEND = 0xc138fd06     # without DM_SUSPEND_FLAG: resume
DM_TABLE_LOAD = 0xc138fd09
DM_TABLE_STATUS = 0xc138fd0c    # _IOWR(0xfd, 12, struct dm_ioctl)
DM_TARGET_MSG = 0xc138fd0e      # _IOWR(0xfd, 14, struct dm_ioctl)
DM_SUSPEND_FLAG = 1 << 1
DM_BUFFER_FULL_FLAG = 1 << 8
DM_NOFLUSH_FLAG = 1 << 11
DM_DATA_OUT_FLAG = 1 << 16


class DmError(OSError):
    pass


def _call(cmd, name, payload=b"", size=16384, count=0, uuid="", flags=0):
    """The ioctl's (flags, target count, data after the header, device
    number); a buffer that grows while the kernel says it was too small."""
    while True:
        size = max(size, HEADER.size + len(payload) + 1)
        buf = bytearray(size)
        HEADER.pack_into(buf, 0, 4, 0, 0, size, HEADER.size, count, 0, flags, 0, 0, 0,
                         name.encode(), uuid.encode(), b"")
        buf[HEADER.size:HEADER.size + len(payload)] = payload
        fd = os.open(CONTROL, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.ioctl(fd, cmd, buf)
        except OSError as e:
            raise DmError(e.errno, f"{name}: {os.strerror(e.errno)}") from None
        finally:
            os.close(fd)
        # version[3] data_size data_start target_count open_count flags
        # event_nr padding dev name uuid data
        hdr = HEADER.unpack_from(buf)
        data_size, data_start, got, out, dev = hdr[3], hdr[4], hdr[5], hdr[7], hdr[10]
        if out & DM_BUFFER_FULL_FLAG:
            size *= 4
            continue
        return out, got, bytes(buf[data_start:data_size]), dev


def _cstr(b):
    return b.split(b"\0", 1)[0].decode()


def status(name):
    """`dmsetup status name`: a line per target."""
    _, count, data, _ = _call(DM_TABLE_STATUS, name)
    lines, off = [], 0
    for _ in range(count):
        start, length, _, nxt, ttype = TARGET_SPEC.unpack_from(data, off)
        params = _cstr(data[off + TARGET_SPEC.size:])
        lines.append(f"{start} {length} {_cstr(ttype)} {params}")
        off = nxt
    return "".join(line + "\n" for line in lines)


def message(name, words, sector=0):
    """`dmsetup message name sector words...`: what the target answered,
    newline-ended, or "". Raises DmError with the ioctl's errno."""
    text = " ".join(words).encode()
    if not text:
        raise DmError(errno.EINVAL, f"{name}: an empty message")
    flags, _, data, _ = _call(DM_TARGET_MSG, name, struct.pack("=Q", sector) + text + b"\0")
    if not flags & DM_DATA_OUT_FLAG:
        return ""
    out = _cstr(data)
    return out if not out or out.endswith("\n") else out + "\n"


def _targets(table):
    """A table as `dmsetup create --table` takes it (a line per target:
    start, length, type, parameters) packed as DM_TABLE_LOAD wants: a
    dm_target_spec each, its parameters after it, the next 8-aligned."""
    payload = b""
    lines = [line.split(None, 3) for line in table.strip().splitlines()]
    for start, length, ttype, *params in lines:
        text = (params[0] if params else "").encode() + b"\0"
        nxt = TARGET_SPEC.size + (len(text) + 7) // 8 * 8
        payload += TARGET_SPEC.pack(int(start), int(length), 0, nxt, ttype.encode())
        payload += text.ljust(nxt - TARGET_SPEC.size, b"\0")
    return payload, len(lines)


def load(name, table):
    """`dmsetup load name --table table`: the inactive table."""
    payload, count = _targets(table)
    _call(DM_TABLE_LOAD, name, payload, count=count)


def suspend(name, noflush=False):
    """`dmsetup suspend [--noflush] name`."""
    _call(DM_DEV_SUSPEND, name, flags=DM_SUSPEND_FLAG | (DM_NOFLUSH_FLAG if noflush else 0))


def resume(name):
    """`dmsetup resume name`, without waiting for udev: the inactive table
    goes live (a device whose table changed keeps its nodes)."""
    _call(DM_DEV_SUSPEND, name)


def create(name, table, uuid=""):
    """`dmsetup create name --table table` without waiting for udev: the
    device's node, /dev/dm-<minor>, which devtmpfs makes as the disk is
    added (the /dev/mapper link is udev's, and may come later). A table
    the target refuses raises DmError, the device gone again; the
    kernel log says why."""
    dev = _call(DM_DEV_CREATE, name, uuid=uuid)[3]
    try:
        load(name, table)
        resume(name)
    except DmError:
        remove(name)
        raise
    minor = (dev & 0xff) | ((dev >> 12) & 0xfff00)
    return f"/dev/dm-{minor}"


def remove(name, tries=50):
    """`dmsetup remove --retry name`: udev's probe of a new device holds
    it open for a moment, so a busy device is tried again, every 0.1 s."""
    for i in range(tries):
        try:
            _call(DM_DEV_REMOVE, name)
            return
        except DmError as e:
            if e.errno != errno.EBUSY or i == tries - 1:
                raise
            time.sleep(0.1)
