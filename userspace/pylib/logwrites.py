# SPDX-License-Identifier: GPL-2.0-only
"""dm-log-writes' log (Documentation/admin-guide/device-mapper/log-writes.rst):
its entries read back, and replayed onto an image entry by entry, as
xfstests' replay-log does, so that a test can look at what the logged
device held after any of them.

The log: a super (magic, version, entries, sector size) in its first
sector, then each entry as one sector (sector, sectors, flags, length of a
mark's name, the name) followed by the sectors written, none for a
discard or a mark. The target logs a write when a flush after it
completes (or a FUA write, at once), so that replaying up to a flush gives
what a disk with a volatile cache held on stable media then."""
import struct
from typing import NamedTuple

MAGIC = 0x6a736677736872
VERSION = 1
FLUSH, FUA, DISCARD, MARK, METADATA = 1, 2, 4, 8, 16

_SUPER = struct.Struct("<QQQI")
_ENTRY = struct.Struct("<QQQQ")


class LogError(Exception):
    """The log is not one this module can read: it says why."""


class Entry(NamedTuple):
    index: int
    sector: int         # of the logged device, in its sectors
    sectors: int
    flags: int
    mark: str           # a mark's name, else ""
    data_at: int        # byte offset of the data in the log

    def is_write(self):
        return self.sectors and not self.flags & (DISCARD | MARK)


def read_entries(log):
    """(sector size, [Entry]) from the log file or device @log, open for
    binary reading."""
    log.seek(0)
    head = log.read(_SUPER.size)
    if len(head) < _SUPER.size:
        raise LogError("shorter than a log's super")
    magic, version, count, sectorsize = _SUPER.unpack(head)
    if magic != MAGIC:
        raise LogError(f"not a dm-log-writes log (magic {magic:#x})")
    if version != VERSION:
        raise LogError(f"log version {version}, this reads {VERSION}")
    if sectorsize < 512 or sectorsize & (sectorsize - 1):
        raise LogError(f"sector size {sectorsize}")
    entries, at = [], sectorsize
    for i in range(count):
        log.seek(at)
        block = log.read(sectorsize)
        if len(block) < sectorsize:
            raise LogError(f"entry {i} of {count} past the log's end")
        sector, sectors, flags, length = _ENTRY.unpack_from(block)
        mark = ""
        if flags & MARK:
            if length > sectorsize - _ENTRY.size:
                raise LogError(f"entry {i}: a mark of {length} bytes")
            mark = block[_ENTRY.size:_ENTRY.size + length].decode(errors="replace")
        elif length:
            raise LogError(f"entry {i}: inline data (DAX logs) is not read here")
        at += sectorsize
        entries.append(Entry(i, sector, sectors, flags, mark, at))
        if not flags & (DISCARD | MARK):
            at += sectors * sectorsize
    return sectorsize, entries


def replay(log, image, sectorsize, entries):
    """Applies @entries in order to @image (open for binary writing): a
    write copies its data, a discard zeroes its range (what a discarded
    range may read as: a map that still names it must not be trusted)."""
    for e in entries:
        if e.flags & MARK or not e.sectors:
            continue
        image.seek(e.sector * sectorsize)
        if e.flags & DISCARD:
            image.write(bytes(e.sectors * sectorsize))
            continue
        log.seek(e.data_at)
        data = log.read(e.sectors * sectorsize)
        if len(data) < e.sectors * sectorsize:
            raise LogError(f"entry {e.index}: its data runs past the log's end")
        image.write(data)
    image.flush()


def stable_points(entries):
    """Indices after which a crash finds the media as the log left them:
    each flush, each FUA write and each mark."""
    return [e.index for e in entries if e.flags & (FLUSH | FUA | MARK)]
