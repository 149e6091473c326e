# SPDX-License-Identifier: GPL-2.0-only
"""A device's status and its target messages through the device-mapper
ioctls (include/uapi/linux/dm-ioctl.h), without starting dmsetup: a
process start costs a guest under TCG a tenth of a second or more, and
the tests poll the status in loops. Output as dmsetup prints it."""
import errno
import fcntl
import os
import struct

CONTROL = "/dev/mapper/control"

# struct dm_ioctl: version[3], data_size, data_start, target_count,
# open_count, flags, event_nr, padding, dev, name[128], uuid[129], data[7]
HEADER = struct.Struct("=3IIIIiIIIQ128s129s7s")
TARGET_SPEC = struct.Struct("=QQiI16s")     # struct dm_target_spec
assert HEADER.size == 312 and TARGET_SPEC.size == 40

DM_TABLE_STATUS = 0xc138fd0c    # _IOWR(0xfd, 12, struct dm_ioctl)
DM_TARGET_MSG = 0xc138fd0e      # _IOWR(0xfd, 14, struct dm_ioctl)
DM_BUFFER_FULL_FLAG = 1 << 8
DM_DATA_OUT_FLAG = 1 << 16


class DmError(OSError):
    pass


def _call(cmd, name, payload=b"", size=16384):
    """The ioctl's (flags, data after the header); a buffer that grows
    while the kernel says it was too small."""
    while True:
        size = max(size, HEADER.size + len(payload) + 1)
        buf = bytearray(size)
        HEADER.pack_into(buf, 0, 4, 0, 0, size, HEADER.size, 0, 0, 0, 0, 0, 0,
                         name.encode(), b"", b"")
        buf[HEADER.size:HEADER.size + len(payload)] = payload
        fd = os.open(CONTROL, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.ioctl(fd, cmd, buf)
        except OSError as e:
            raise DmError(e.errno, f"{name}: {os.strerror(e.errno)}") from None
        finally:
            os.close(fd)
        hdr = HEADER.unpack_from(buf)
        flags, data_start, data_size = hdr[6], hdr[4], hdr[3]
        if flags & DM_BUFFER_FULL_FLAG:
            size *= 4
            continue
        return flags, hdr[5], bytes(buf[data_start:data_size])


def _cstr(b):
    return b.split(b"\0", 1)[0].decode()


def status(name):
    """`dmsetup status name`: a line per target."""
    _, count, data = _call(DM_TABLE_STATUS, name)
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
    flags, _, data = _call(DM_TARGET_MSG, name, struct.pack("=Q", sector) + text + b"\0")
    if not flags & DM_DATA_OUT_FLAG:
        return ""
    out = _cstr(data)
    return out if not out or out.endswith("\n") else out + "\n"
