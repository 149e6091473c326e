# SPDX-License-Identifier: GPL-2.0-only
"""dmioctl: requests packed and answers read as include/uapi/linux/
dm-ioctl.h lays them out, against a kernel stood in for by a function
that answers the ioctl (the VM suite runs them against the real one)."""
import errno
import os
import struct
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "userspace", "pylib"))
import dmioctl  # noqa: E402

# struct dm_ioctl's fields by name, in order
FIELDS = ("v0", "v1", "v2", "data_size", "data_start", "target_count", "open_count",
          "flags", "event_nr", "padding", "dev", "name", "uuid", "data")


class FakeControl:
    """Answers each ioctl with answer(cmd, header fields, payload), which
    returns (header fields to set, data) or raises OSError; keeps what
    was asked."""

    def __init__(self, monkeypatch, answer):
        self.asked, self.answer = [], answer
        monkeypatch.setattr(dmioctl.os, "open", lambda *a, **k: 99)
        monkeypatch.setattr(dmioctl.os, "close", lambda fd: None)
        monkeypatch.setattr(dmioctl.fcntl, "ioctl", self.ioctl)

    def ioctl(self, fd, cmd, buf):
        hdr = dict(zip(FIELDS, dmioctl.HEADER.unpack_from(buf)))
        payload = bytes(buf[hdr["data_start"]:hdr["data_size"]])
        self.asked.append((cmd, hdr, payload))
        fields, data = self.answer(cmd, hdr, payload)
        hdr.update(fields)
        hdr["data_start"] = dmioctl.HEADER.size
        dmioctl.HEADER.pack_into(buf, 0, *(hdr[f] for f in FIELDS))
        buf[dmioctl.HEADER.size:dmioctl.HEADER.size + len(data)] = data
        return 0


def test_a_messages_answer_is_read_when_the_flags_say_data_came_out(monkeypatch):
    FakeControl(monkeypatch, lambda cmd, hdr, payload: (
        {"flags": dmioctl.DM_DATA_OUT_FLAG, "open_count": 1}, b"counted 7\0"))
    assert dmioctl.message("dev", ["stats"]) == "counted 7\n"


def test_a_message_without_data_out_answers_nothing(monkeypatch):
    FakeControl(monkeypatch, lambda cmd, hdr, payload: (
        {"flags": 0, "open_count": dmioctl.DM_DATA_OUT_FLAG}, b"stale\0"))
    assert dmioctl.message("dev", ["stats"]) == ""


def test_a_buffer_the_kernel_finds_too_small_grows(monkeypatch):
    def answer(cmd, hdr, payload):
        if hdr["data_size"] < 60000:
            return {"flags": dmioctl.DM_BUFFER_FULL_FLAG}, b""
        spec = dmioctl.TARGET_SPEC.pack(0, 8, 0, 48, b"linear")
        return {"flags": 0, "target_count": 1}, spec + b"8:0 0\0".ljust(8, b"\0")
    fake = FakeControl(monkeypatch, answer)
    assert dmioctl.status("dev") == "0 8 linear 8:0 0\n"
    assert [h["data_size"] for _, h, _ in fake.asked] == [16384, 65536]


def parse_table(payload, count):
    """The targets of a DM_TABLE_LOAD as the kernel walks them
    (drivers/md/dm-ioctl.c, next_target(): each spec's next is the
    offset from it to the next spec)."""
    out, off = [], 0
    for _ in range(count):
        start, length, status, nxt, ttype = dmioctl.TARGET_SPEC.unpack_from(payload, off)
        assert nxt % 8 == 0 and status == 0
        params = payload[off + dmioctl.TARGET_SPEC.size:off + nxt].split(b"\0")[0]
        out.append((start, length, ttype.rstrip(b"\0").decode(), params.decode()))
        off += nxt
    return out


def test_create_loads_every_target_and_resumes_and_names_the_node(monkeypatch):
    table = "0 100 linear /dev/sda 0\n100 28 zero\n128 8 nswap2l 4096 - - 1 feature\n"

    def answer(cmd, hdr, payload):
        # major 253, minor 300: new_encode_dev() splits the minor
        dev = (300 & 0xff) | (253 << 8) | ((300 & ~0xff) << 12)
        return {"dev": dev if cmd == dmioctl.DM_DEV_CREATE else 0}, b""
    fake = FakeControl(monkeypatch, answer)
    assert dmioctl.create("n2l-x", table, uuid="U-1") == "/dev/dm-300"
    cmds = [c for c, _, _ in fake.asked]
    assert cmds == [dmioctl.DM_DEV_CREATE, dmioctl.DM_TABLE_LOAD, dmioctl.DM_DEV_SUSPEND]
    _, create, _ = fake.asked[0]
    assert create["name"].rstrip(b"\0") == b"n2l-x" and create["uuid"].rstrip(b"\0") == b"U-1"
    _, load, payload = fake.asked[1]
    assert load["target_count"] == 3
    assert parse_table(payload, 3) == [(0, 100, "linear", "/dev/sda 0"), (100, 28, "zero", ""),
                                       (128, 8, "nswap2l", "4096 - - 1 feature")]
    assert fake.asked[2][1]["flags"] == 0       # no DM_SUSPEND_FLAG: a resume


def test_a_refused_table_removes_the_device_and_says_why(monkeypatch):
    def answer(cmd, hdr, payload):
        if cmd == dmioctl.DM_TABLE_LOAD:
            raise OSError(errno.EINVAL, "Invalid argument")
        return {}, b""
    fake = FakeControl(monkeypatch, answer)
    with pytest.raises(dmioctl.DmError) as e:
        dmioctl.create("n2l-x", "0 8 nswap2l garbage")
    assert e.value.errno == errno.EINVAL and "n2l-x" in str(e.value)
    assert [c for c, _, _ in fake.asked] == [dmioctl.DM_DEV_CREATE, dmioctl.DM_TABLE_LOAD,
                                             dmioctl.DM_DEV_REMOVE]


def test_remove_tries_a_busy_device_again_and_gives_up_in_the_end(monkeypatch):
    monkeypatch.setattr(dmioctl.time, "sleep", lambda s: None)
    busy = [2]

    def answer(cmd, hdr, payload):
        if busy[0]:
            busy[0] -= 1
            raise OSError(errno.EBUSY, "busy")
        return {}, b""
    fake = FakeControl(monkeypatch, answer)
    dmioctl.remove("n2l-x")
    assert len(fake.asked) == 3
    busy[0] = 10
    with pytest.raises(dmioctl.DmError) as e:
        dmioctl.remove("n2l-x", tries=4)
    assert e.value.errno == errno.EBUSY


def test_a_missing_device_is_not_tried_again(monkeypatch):
    def answer(cmd, hdr, payload):
        raise OSError(errno.ENXIO, "No such device or address")
    fake = FakeControl(monkeypatch, answer)
    with pytest.raises(dmioctl.DmError):
        dmioctl.remove("gone")
    assert len(fake.asked) == 1


def test_a_power_cycle_suspends_without_flushing_loads_and_resumes(monkeypatch):
    """suspend(noflush), load and resume: dmsetup suspend --noflush, load
    and resume, each the one ioctl with the flags dm-ioctl.h gives them."""
    fake = FakeControl(monkeypatch, lambda cmd, hdr, payload: ({}, b""))
    dmioctl.suspend("cut", noflush=True)
    dmioctl.load("cut", "0 8 flakey /dev/x 0 0 3600 1 drop_writes")
    dmioctl.resume("cut")
    dmioctl.suspend("cut")
    (c1, h1, _), (c2, h2, p2), (c3, h3, _), (c4, h4, _) = fake.asked
    assert (c1, h1["flags"]) == (dmioctl.DM_DEV_SUSPEND, (1 << 1) | (1 << 11))
    assert (c2, h2["target_count"]) == (dmioctl.DM_TABLE_LOAD, 1)
    assert parse_table(p2, 1) == [(0, 8, "flakey", "/dev/x 0 0 3600 1 drop_writes")]
    assert (c3, h3["flags"]) == (dmioctl.DM_DEV_SUSPEND, 0)
    assert (c4, h4["flags"]) == (dmioctl.DM_DEV_SUSPEND, 1 << 1)
    assert all(h["name"].rstrip(b"\0") == b"cut" for _, h, _ in fake.asked)
