# SPDX-License-Identifier: GPL-2.0-only
"""n2lctl meta check and dump: the metadata device's format
(dm-nswap2l/nswap2l-meta.h) read offline, on image files that
n2lmeta.Writer makes as the kernel's commits would, then damages."""
import dataclasses
import json
import os
import struct
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "userspace", "pylib"))
import n2lmeta as meta  # noqa: E402

N2LCTL = os.path.join(REPO, "userspace", "n2lctl")

SLOTS = 1200            # three map blocks an area, the last one partly used
FLASH, DISK = 100, 50
ENTRIES = {
    0: meta.entry(meta.FLASH, 5),
    1: meta.entry(meta.NETRAM, meta.netram_loc(3, 42)),
    2: meta.entry(meta.NONE, lost=True),
    777: meta.entry(meta.FLASH, 99),
    1199: meta.entry(meta.DISK, 49),
}


SERVERS = {0: "10.0.0.1:7070", 5: "[fd00::5]:7071"}
GROUPS = {3: [0, 5]}


def image(tmp_path, entries=ENTRIES, **kw):
    path = str(tmp_path / "meta.img")
    kw = {"flash_blocks": FLASH, "disk_blocks": DISK, "servers": SERVERS,
          "groups": GROUPS, **kw}
    return path, meta.format_image(path, SLOTS, entries=entries, **kw)


def rewrite(path, nr, change, reseal=True):
    """Change block nr in place; with reseal, as a writer would have
    (its checksum good), else as damage would."""
    with open(path, "r+b") as f:
        f.seek(nr * meta.BLOCK)
        block = bytearray(f.read(meta.BLOCK))
        change(block)
        f.seek(nr * meta.BLOCK)
        f.write(meta.seal(block) if reseal else block)


def sb_change(**fields):
    def change(block):
        block[:] = dataclasses.replace(meta.Superblock.unpack(block), **fields).pack()
    return change


def flip_bit(offset, bit=0):
    def change(block):
        block[offset] ^= 1 << bit
    return change


def slot_offset(slot):
    """Of the slot's entry within its map block."""
    return meta.MAP_HEADER.size + 8 * (slot % meta.ENTRIES)


def map_block_nr(gen, slot):
    return meta.area_start(gen % 2, meta.map_blocks(SLOTS)) + slot // meta.ENTRIES


def set_entry(gen, slot, value):
    def change(block):
        struct.pack_into("<Q", block, slot_offset(slot), value)
    return map_block_nr(gen, slot), change


def n2lctl(*args):
    return subprocess.run([sys.executable, N2LCTL, "meta", *args],
                          capture_output=True, text=True, timeout=60)


def raw_crc32c(crc, data):
    """Linux's crc32c(crc, data, len), bit by bit: no table and no final
    inversion, to hold n2lmeta's table-driven one against."""
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc


def test_crc32c_gives_the_standard_check_values():
    assert meta.crc32c(b"123456789") == 0xE3069283
    # RFC 3720 (iSCSI), appendix B.4
    assert meta.crc32c(bytes(32)) == 0x8A9136AA
    assert meta.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert meta.crc32c(bytes(range(32))) == 0x46DD794E


def test_a_block_checksum_is_the_kernels_crc32c_of_all_ones_xor_the_seed():
    block = bytes(4) + bytes(i * 7 & 0xff for i in range(meta.BLOCK - 4))
    want = raw_crc32c(0xffffffff, block[4:]) ^ 0x6e326c6d
    assert meta.block_csum(block) == want
    assert struct.unpack_from("<I", meta.seal(block))[0] == want


def test_entries_decode_as_the_slot_map_encodes_them():
    e = meta.entry(meta.NETRAM, meta.netram_loc(7, (1 << 48) - 1))
    assert meta.entry_medium(e) == meta.NETRAM
    assert (meta.entry_group(e), meta.entry_version(e)) == (7, (1 << 48) - 1)
    assert meta.entry(meta.NONE, lost=True) == 0x10 and meta.entry_lost(0x10)
    assert meta.entry(meta.DISK, 9) == (9 << 8) | 3


def test_a_clean_image_checks_ok_and_dumps_the_entries_written(tmp_path):
    path, _ = image(tmp_path)
    m = meta.load(path)
    assert m.status == 0 and not m.errors and not m.warnings
    assert m.sb.gen == 1 and m.sb_block == 1 and m.sb.map_blocks == 3
    assert dict((s, e) for s, e in m.entries() if e) == ENTRIES
    assert meta.summary(m) == (
        "generation 1 (block 1), 1 commit, clean; 1200 slots: 1195 none, "
        "1 Network RAM, 2 Flash, 1 disk, 1 lost; OK")
    lines = meta.dump_lines(m)
    assert lines[-5:] == ["         0 flash   block 5",
                          "         1 netram  group 3 version 42",
                          "         2 none    lost",
                          "       777 flash   block 99",
                          "      1199 disk    block 49"]
    assert "generation     1" in lines and "flags          0x1 (clean)" in lines
    assert len(meta.dump_lines(m, all_slots=True)) == len(lines) - len(ENTRIES) + SLOTS


def netram_block_nr(gen):
    return meta.netram_block_nr(gen % 2, meta.map_blocks(SLOTS))


def test_format_2_names_the_servers_and_groups_of_network_ram_slots(tmp_path):
    path, _ = image(tmp_path)
    m = meta.load(path)
    assert (m.netram.nr, m.netram.vers_floor) == (netram_block_nr(1), 1 << 28)
    assert m.netram.servers == SERVERS and m.netram.groups == GROUPS
    lines = meta.dump_lines(m)
    assert "server 0       10.0.0.1:7070" in lines
    assert "server 5       [fd00::5]:7071" in lines
    assert "group 3        servers 0 5" in lines
    out = meta.dump_json(m)["netram"]
    assert out["servers"] == {"0": "10.0.0.1:7070", "5": "[fd00::5]:7071"}
    assert out["groups"] == {"3": [0, 5]} and out["vers_floor"] == 1 << 28


def test_a_network_ram_slot_of_a_group_without_servers_is_lost_at_load(tmp_path):
    path, _ = image(tmp_path, groups={})
    m = meta.load(path)
    assert m.status == 0 and m.netram_lost == 1
    assert "(1 of the Network RAM ones lost at load)" in meta.summary(m)


def test_format_1_is_read_and_its_network_ram_slots_are_lost_at_load(tmp_path):
    path, _ = image(tmp_path, version=meta.V1)
    m = meta.load(path)
    assert m.status == 0 and m.sb.version == 1 and m.netram is None
    assert m.netram_lost == 1
    assert os.path.getsize(path) == meta.device_blocks(SLOTS, meta.V1) * meta.BLOCK


def test_a_version_at_or_above_the_floor_is_an_error(tmp_path):
    path, w = image(tmp_path)
    w.vers_floor = 42
    w.commit(ENTRIES)
    m = meta.load(path)
    assert m.errors == ["block 2, slot 1: Network RAM version 42 is not below the floor 42"]


@pytest.mark.parametrize("groups,servers,want", [
    ({3: [5, 0]}, SERVERS, "group 3: members [5, 0, 255] are not sorted servers it names"),
    ({3: [0, 6]}, SERVERS, "group 3: members [0, 6, 255] are not sorted servers it names"),
    (GROUPS, {**SERVERS, 7: "10.0.0.7:0"}, "server 7: port 0"),
])
def test_a_network_ram_block_that_does_not_hold_together_is_an_error(tmp_path, groups,
                                                                      servers, want):
    path, _ = image(tmp_path, groups=groups, servers=servers)
    m = meta.load(path)
    assert m.errors == [f"block {netram_block_nr(1)} (Network RAM block of area 1): {want}"]


def test_a_damaged_network_ram_block_is_an_error(tmp_path):
    path, _ = image(tmp_path)
    rewrite(path, netram_block_nr(1), flip_bit(40), reseal=False)
    m = meta.load(path)
    assert m.errors == [f"block {netram_block_nr(1)} (Network RAM block of area 1): "
                        "checksum mismatch; Network RAM slots are not checked"]
    assert m.netram_lost == 1
    path, _ = image(tmp_path)
    rewrite(path, netram_block_nr(1), flip_bit(9))
    m = meta.load(path)
    assert m.errors == [f"block {netram_block_nr(1)} (Network RAM block of area 1): "
                        "written by generation 257, not the superblock's 1"]


def test_the_newest_generation_is_the_committed_map(tmp_path):
    path, w = image(tmp_path)
    w.commit({5: meta.entry(meta.DISK, 0)}, clean=False)
    m = meta.load(path)
    assert m.status == 0 and (m.sb.gen, m.sb_block, m.sb.commits) == (2, 0, 2)
    assert [(s, e) for s, e in m.entries() if e] == [(5, meta.entry(meta.DISK, 0))]
    assert "not closed cleanly" in meta.summary(m)


def test_a_flipped_bit_in_a_map_block_is_reported_with_its_block(tmp_path):
    path, _ = image(tmp_path)
    nr = map_block_nr(1, 777)
    rewrite(path, nr, flip_bit(slot_offset(777), 3), reseal=False)
    m = meta.load(path)
    assert m.status == 1 and len(m.errors) == 1
    assert m.errors[0].startswith(f"block {nr} (map block 1 of area 1, slots 510-1019): "
                                  "checksum mismatch")


def test_the_other_area_is_not_the_committed_map(tmp_path):
    """Area 0 is free for generation 2's commit: damage there is no error."""
    path, _ = image(tmp_path)
    rewrite(path, map_block_nr(0, 0), flip_bit(100), reseal=False)
    assert meta.load(path).status == 0


def test_a_torn_newest_superblock_falls_back_to_the_older_generation(tmp_path):
    path, w = image(tmp_path)
    w.commit({5: meta.entry(meta.DISK, 0)})
    rewrite(path, 0, flip_bit(200), reseal=False)      # generation 2's
    m = meta.load(path)
    assert m.status == 0 and not m.errors
    assert (m.sb.gen, m.sb_block) == (1, 1)
    assert dict((s, e) for s, e in m.entries() if e) == ENTRIES
    assert m.warnings == ["block 0: superblock checksum mismatch (torn by a crash during "
                          "a commit?); using generation 1 in block 1"]
    assert meta.summary(m).endswith("; OK, 1 warning")


def test_slots_sharing_a_flash_block_are_reported_with_both_slots(tmp_path):
    path, _ = image(tmp_path, {**ENTRIES, 1000: meta.entry(meta.FLASH, 99)})
    m = meta.load(path)
    assert m.errors == ["Flash block 99 is held by 2 slots: slot 777 (block 6), "
                        "slot 1000 (block 6)"]


def test_the_same_block_number_on_flash_and_disk_is_no_conflict(tmp_path):
    path, _ = image(tmp_path, {0: meta.entry(meta.FLASH, 7), 1: meta.entry(meta.DISK, 7)})
    assert meta.load(path).status == 0


@pytest.mark.parametrize("entry,why", [
    (meta.entry(meta.FLASH, FLASH), "Flash block 100 is beyond the 100 blocks of Flash"),
    (meta.entry(meta.DISK, 1 << 20), "disk block 1048576 is beyond the 50 blocks of disk"),
    (meta.entry(meta.FLASH, 1 << 32),
     "Flash location 0x100000000 is wider than a block number (32 bits)"),
])
def test_a_block_beyond_its_medium_is_reported(tmp_path, entry, why):
    path, _ = image(tmp_path, {600: entry})
    assert meta.load(path).errors == [f"block 6, slot 600: {why}"]


def test_a_slot_on_a_medium_the_map_has_none_of_is_reported(tmp_path):
    path, _ = image(tmp_path, {3: meta.entry(meta.DISK, 0)}, disk_blocks=0)
    assert meta.load(path).errors == [
        "block 5, slot 3: on disk, but the map was written for no disk"]


@pytest.mark.parametrize("bits", [0x04, 0x08, 0x20, 0x40, 0x80, 0xec])
def test_reserved_flag_bits_are_reported(tmp_path, bits):
    path, _ = image(tmp_path, {**ENTRIES, 4: meta.entry(meta.FLASH, 10) | bits})
    assert meta.load(path).errors == [
        f"block 5, slot 4: reserved bits {bits:#x} set in entry {(10 << 8) | 2 | bits:#018x}"]


def test_every_problem_is_reported_not_only_the_first(tmp_path):
    path, _ = image(tmp_path, {0: meta.entry(meta.FLASH, 5) | 0x40,
                               1: meta.entry(meta.FLASH, 5),
                               1100: meta.entry(meta.DISK, 50)})
    rewrite(path, map_block_nr(1, 600), flip_bit(4000), reseal=False)
    m = meta.load(path)
    assert len(m.errors) == 4 and meta.summary(m).endswith("; 4 errors")
    assert [e.split(":")[0] for e in m.errors] == [
        "block 5, slot 0", "block 6 (map block 1 of area 1, slots 510-1019)",
        "block 7, slot 1100", "Flash block 5 is held by 2 slots"]


def test_a_map_blocks_header_is_checked(tmp_path):
    path, _ = image(tmp_path, gen=3)
    rewrite(path, map_block_nr(3, 0), lambda b: struct.pack_into("<I", b, 4, 2))
    rewrite(path, map_block_nr(3, 600), lambda b: struct.pack_into("<Q", b, 8, 5))
    nr = map_block_nr(3, SLOTS - 1)
    rewrite(path, nr, lambda b: struct.pack_into("<Q", b, slot_offset(SLOTS), 1))
    assert meta.load(path).errors == [
        "block 5 (map block 0 of area 1, slots 0-509): index 2, not 0",
        "block 6 (map block 1 of area 1, slots 510-1019): written by generation 5, "
        "after the superblock's 3",
        f"block {nr} (map block 2 of area 1, slots 1020-1199): entries past slot 1199 "
        "are not zero"]


def test_a_newer_version_is_refused(tmp_path):
    path, _ = image(tmp_path)
    rewrite(path, 1, sb_change(version=3))
    m = meta.load(path)
    assert m.sb is None
    assert m.errors == ["block 1: format version 3 is newer than this tool's (2)"]


def test_a_too_small_device_says_the_size_needed(tmp_path):
    path, _ = image(tmp_path)
    os.truncate(path, 5 * meta.BLOCK)       # the committed area starts at block 5
    m = meta.load(path)
    assert m.status == 1
    assert m.errors == ["block 1 (superblock of generation 1): device is 20480 bytes, "
                        "too small: 1200 slots need 40960 bytes (10 blocks)"]


def test_superblock_fields_that_place_the_map_are_checked(tmp_path):
    path, _ = image(tmp_path)
    rewrite(path, 1, sb_change(map_blocks=4))
    m = meta.load(path)
    assert m.errors == ["block 1 (superblock of generation 1): map_blocks 4, "
                        "but 1200 slots need 3"]
    assert not m.map


def test_a_torn_older_superblock_is_a_warning_too(tmp_path):
    path, w = image(tmp_path)
    w.commit(ENTRIES)
    rewrite(path, 1, flip_bit(300), reseal=False)
    m = meta.load(path)
    assert not m.errors and (m.sb.gen, m.sb_block) == (2, 0) and len(m.warnings) == 1


def test_superblocks_out_of_place_or_of_different_formats_are_reported(tmp_path):
    path, w = image(tmp_path)
    w.commit(ENTRIES)
    rewrite(path, 0, sb_change(uuid=bytes(16)))
    rewrite(path, 1, lambda b: b.__setitem__(4000, 1))
    assert meta.load(path).errors == [
        "block 1: bytes after the superblock's fields are not zero",
        "blocks 0 and 1: the superblocks' uuids differ (copies of different formats)"]
    rewrite(path, 0, sb_change(gen=3))
    assert meta.load(path).errors[:2] == [
        "block 1: bytes after the superblock's fields are not zero",
        "block 0 (superblock of generation 3): generation 3 belongs in block 1"]


@pytest.mark.parametrize("entry,why", [
    (meta.entry(meta.FLASH, 8) | meta.LOST, "lost flag on a slot on Flash"),
    (meta.entry(meta.NONE, 8, lost=True), "a location (8) on a slot on no medium"),
])
def test_entries_the_slot_map_never_holds_are_reported(tmp_path, entry, why):
    path, _ = image(tmp_path, {9: entry})
    assert meta.load(path).errors == [f"block 5, slot 9: {why}"]


def test_random_bytes_are_not_a_metadata_device(tmp_path):
    path = tmp_path / "random"
    path.write_bytes(os.urandom(64 * 1024))
    m = meta.load(str(path))
    assert m.status == 1 and m.sb is None
    assert m.errors == ["not an nswap2l metadata device or both superblocks corrupt"]


def test_all_zero_is_unformatted(tmp_path):
    path = tmp_path / "zero"
    path.write_bytes(bytes(1 << 20))
    m = meta.load(str(path))
    assert m.status == 2 and m.unformatted and not m.errors
    assert meta.check_lines(m) == [
        "unformatted (the kernel formats a zeroed device on first load)"]


def test_check_exit_statuses(tmp_path):
    path, _ = image(tmp_path)
    p = n2lctl("check", path)
    assert p.returncode == 0 and p.stdout.rstrip().endswith("; OK")
    zero = tmp_path / "zero"
    zero.write_bytes(bytes(16384))
    p = n2lctl("check", str(zero))
    assert p.returncode == 2 and "unformatted" in p.stdout
    rewrite(path, map_block_nr(1, 0), flip_bit(64), reseal=False)
    p = n2lctl("check", path)
    assert p.returncode == 1
    assert p.stdout.startswith("error: block 5 (map block 0 of area 1, slots 0-509): checksum")
    p = n2lctl("check", str(tmp_path / "missing"))
    assert p.returncode == 1 and "No such file" in p.stderr


def test_dump_prints_json(tmp_path):
    path, _ = image(tmp_path)
    p = n2lctl("dump", "--json", path)
    assert p.returncode == 0
    doc = json.loads(p.stdout)
    assert doc["superblock"]["gen"] == 1 and doc["superblock"]["clean"] is True
    assert doc["superblock"]["uuid"] == "00010203-0405-0607-0809-0a0b0c0d0e0f"
    assert doc["entries"] == [
        {"slot": 0, "medium": "flash", "block": 5},
        {"slot": 1, "medium": "netram", "group": 3, "version": 42},
        {"slot": 2, "medium": "none", "lost": True},
        {"slot": 777, "medium": "flash", "block": 99},
        {"slot": 1199, "medium": "disk", "block": 49}]
    p = n2lctl("dump", "--json", "--all", path)
    assert len(json.loads(p.stdout)["entries"]) == SLOTS


def test_dump_refuses_a_corrupt_map_unless_forced(tmp_path):
    path, _ = image(tmp_path)
    rewrite(path, *set_entry(1, 777, meta.entry(meta.FLASH, 5)))
    p = n2lctl("dump", path)
    assert p.returncode == 1 and p.stdout == ""
    assert "Flash block 5 is held by 2 slots" in p.stderr and "--force" in p.stderr
    p = n2lctl("dump", "--force", path)
    assert p.returncode == 0 and "Flash block 5 is held" in p.stderr
    assert "       777 flash   block 5" in p.stdout.splitlines()


def test_dump_of_no_map_is_refused_even_forced(tmp_path):
    zero = tmp_path / "zero"
    zero.write_bytes(bytes(16384))
    p = n2lctl("dump", "--force", str(zero))
    assert p.returncode == 1 and "unformatted" in p.stderr and p.stdout == ""
