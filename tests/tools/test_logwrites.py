# SPDX-License-Identifier: GPL-2.0-only
"""logwrites: dm-log-writes' log read back and replayed, on logs built
here as drivers/md/dm-log-writes.c lays them out."""
import io
import os
import struct
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "userspace", "pylib"))
import logwrites as lw  # noqa: E402

SS = 512


def build(entries, sectorsize=SS, count=None, magic=lw.MAGIC, version=1):
    """A log of (sector, flags, data or a mark's name) entries."""
    out = bytearray(struct.pack("<QQQI", magic, version,
                                len(entries) if count is None else count, sectorsize))
    out += bytes(sectorsize - len(out))
    for sector, flags, payload in entries:
        if flags & lw.MARK:
            name = payload.encode()
            head = struct.pack("<QQQQ", 0, 0, flags, len(name)) + name
            out += head + bytes(sectorsize - len(head))
            continue
        sectors = payload if flags & lw.DISCARD else len(payload) // sectorsize
        head = struct.pack("<QQQQ", sector, sectors, flags, 0)
        out += head + bytes(sectorsize - len(head))
        if not flags & lw.DISCARD:
            out += payload
    return io.BytesIO(bytes(out))


def block(byte, n=1):
    return bytes([byte]) * SS * n


LOG = [
    (0, 0, block(1, 2)),
    (4, 0, block(2)),
    (0, lw.FLUSH, b""),
    (1, 0, block(3)),
    (0, lw.MARK, "fsync-1"),
    (0, lw.DISCARD, 2),
    (5, lw.FUA, block(4)),
]


def replayed(log, upto, size=8):
    ss, entries = lw.read_entries(log)
    image = io.BytesIO(bytes(size * ss))
    lw.replay(log, image, ss, entries[:upto + 1])
    return image.getvalue()


def test_entries_are_read_with_their_data_and_marks():
    ss, entries = lw.read_entries(build(LOG))
    assert ss == SS and len(entries) == 7
    assert [e.sector for e in entries] == [0, 4, 0, 1, 0, 0, 5]
    assert [e.sectors for e in entries] == [2, 1, 0, 1, 0, 2, 1]
    assert entries[4].mark == "fsync-1" and entries[0].mark == ""
    assert [e.index for e in entries if e.is_write()] == [0, 1, 3, 6]
    assert lw.stable_points(entries) == [2, 4, 6]


def test_replay_stops_where_it_is_told_and_a_discard_zeroes():
    log = build(LOG)
    at_flush = replayed(log, 2)
    assert at_flush == block(1, 2) + block(0, 2) + block(2) + block(0, 3)
    at_mark = replayed(log, 4)
    assert at_mark == block(1) + block(3) + block(0, 2) + block(2) + block(0, 3)
    whole = replayed(log, 6)
    assert whole == block(0, 4) + block(2) + block(4) + block(0, 2)


def test_a_4k_sector_log():
    log = build([(3, 0, bytes([9]) * 4096)], sectorsize=4096)
    ss, entries = lw.read_entries(log)
    image = io.BytesIO(bytes(4 * 4096))
    lw.replay(log, image, ss, entries)
    assert image.getvalue()[3 * 4096:] == bytes([9]) * 4096
    assert image.getvalue()[:3 * 4096] == bytes(3 * 4096)


@pytest.mark.parametrize("log,says", [
    (io.BytesIO(b"short"), "shorter than a log's super"),
    (build(LOG, magic=1), "not a dm-log-writes log"),
    (build(LOG, version=2), "log version 2"),
    (build(LOG, sectorsize=1000), "sector size 1000"),
    (build(LOG, count=9), "entry 7 of 9 past the log's end"),
])
def test_what_is_not_a_whole_log_is_refused_saying_why(log, says):
    with pytest.raises(lw.LogError, match=says):
        lw.read_entries(log)


def test_data_cut_short_is_refused_on_replay():
    raw = build(LOG).getvalue()
    log = io.BytesIO(raw[:-SS // 2])
    ss, entries = lw.read_entries(log)
    with pytest.raises(lw.LogError, match="entry 6: its data runs past"):
        lw.replay(log, io.BytesIO(bytes(8 * SS)), ss, entries)
