"""Data integrity: fio verify, multi-slot bios, spill, ENOSPC, discard,
flush/FUA, overwrite/discard/read races and swap under memory pressure."""
import os

import pytest

import n2l
from n2l import sh, run, table_line

MB = 1 << 20


def fio_verify(path, rw, bs, size, iodepth=16, extra=""):
    out = "/tmp/n2l/fio.txt"
    p = run(f"fio --name=verify --filename={path} --rw={rw} --bs={bs} "
            f"--size={size} --direct=1 --ioengine=libaio --iodepth={iodepth} "
            f"--verify=crc32c --verify_fatal=1 --do_verify=1 --randrepeat=0 "
            f"--verify_state_save=0 "
            f"{extra} --output={out}")
    assert p.returncode == 0, open(out).read() if os.path.exists(out) else p.stderr


@pytest.mark.parametrize("rw,bs", [
    ("randwrite", "4k"), ("randwrite", "16k"), ("randwrite", "1M"),
    ("write", "4k"), ("write", "128k"), ("write", "1M"),
    ("randrw", "64k"),
])
def test_fio_verify_across_flash_and_disk(lab, rw, bs):
    f, d = lab.flash(24), lab.disk(48)
    dev = lab.device("n2l-fio", table_line(64 << 11, f.path, d.path))
    fio_verify(dev.path, rw, bs, "56M")
    st = dev.status()
    assert st["flash"]["held"] == 6144, "flash fills first"
    assert st["disk"]["held"] > 0, "the rest spills to disk"


def test_multi_slot_bios_stay_whole(lab):
    f = lab.flash(32)
    dev = lab.device("n2l-whole", table_line(16 << 11, f.path))
    dev.message("clear_stats")
    n2l.write_pattern(dev.path, 0, 8 * MB, 1)  # eight 1 MiB writes
    st = dev.status()
    assert st["flash"]["writes"] == 8, st["flash"]
    n2l.settle()
    dev.message("clear_stats")
    assert n2l.check_pattern(dev.path, 0, 8 * MB, 1) == 0
    assert dev.status()["flash"]["reads"] == 8


def test_scattered_slots_are_rewritten_as_one_run(lab):
    f = lab.flash(32)
    dev = lab.device("n2l-reloc", table_line(16 << 11, f.path))
    # First touch in random 4 KiB order scatters the slots over the medium.
    fio_verify(dev.path, "randwrite", "4k", "1M", iodepth=1)
    dev.message("clear_stats")
    n2l.write_pattern(dev.path, 0, MB, 2)
    st = dev.status()
    assert st["flash"]["writes"] == 1, st["flash"]
    assert st["flash"]["held"] == 256
    n2l.settle()
    dev.message("clear_stats")
    assert n2l.check_pattern(dev.path, 0, MB, 2) == 0
    assert dev.status()["flash"]["reads"] == 1


def test_device_larger_than_one_medium_fills_both(lab):
    f, d = lab.flash(16), lab.disk(32)
    dev = lab.device("n2l-spill", table_line(40 << 11, f.path, d.path))
    n2l.write_pattern(dev.path, 0, 40 * MB, 3)
    st = dev.status()
    assert st["flash"]["held"] == 4096 and st["disk"]["held"] == 6144
    assert n2l.check_pattern(dev.path, 0, 40 * MB, 3) == 0
    n2l.write_pattern(dev.path, 0, 40 * MB, 4)
    assert n2l.check_pattern(dev.path, 0, 40 * MB, 4) == 0


def test_enospc_when_full_and_stored_data_unharmed(lab):
    f, d = lab.flash(8), lab.disk(8)
    dev = lab.device("n2l-full", table_line(24 << 11, f.path, d.path))
    n2l.write_pattern(dev.path, 0, 16 * MB, 5)
    p = run(f"{n2l.TOOLS}/n2l-pattern write {dev.path} {16 * MB} {MB} 6")
    assert p.returncode != 0 and "No space left on device" in p.stderr, p.stderr
    st = dev.status()
    assert st["nospc"] > 0 and st["mapped"] == 4096
    assert n2l.check_pattern(dev.path, 0, 16 * MB, 5) == 0
    # Overwrites need no free block: they still work when full.
    n2l.write_pattern(dev.path, 0, 16 * MB, 7)
    assert n2l.check_pattern(dev.path, 0, 16 * MB, 7) == 0
    # Room comes back with a discard.
    sh(f"blkdiscard -o {4 * MB} -l {4 * MB} {dev.path}")
    n2l.write_pattern(dev.path, 16 * MB, 4 * MB, 8)
    assert n2l.check_pattern(dev.path, 16 * MB, 4 * MB, 8) == 0
    assert n2l.check_pattern(dev.path, 8 * MB, 8 * MB, 7) == 0


def test_discard_frees_slots_and_trims_flash(lab):
    f, d = lab.flash(32), lab.disk(32)
    dev = lab.device("n2l-discard", table_line(48 << 11, f.path, d.path))
    n2l.write_pattern(dev.path, 0, 40 * MB, 9)
    before = f.stat()
    sh(f"blkdiscard -o {4 * MB} -l {8 * MB} {dev.path}")
    st = dev.status()
    assert st["discarded"] == 2048 and st["mapped"] == 10240 - 2048
    assert n2l.is_zero(dev.path, 4 * MB, 8 * MB)
    assert n2l.check_pattern(dev.path, 0, 4 * MB, 9) == 0
    assert n2l.check_pattern(dev.path, 12 * MB, 28 * MB, 9) == 0
    trimmed = f.stat()["discard_sectors"] - before["discard_sectors"]
    assert trimmed == 8 * MB // 512, f"flash saw {trimmed} discarded sectors"
    # Freed blocks are reused.
    n2l.write_pattern(dev.path, 40 * MB, 8 * MB, 10)
    assert dev.status()["flash"]["held"] == 8192


def test_no_discard_passdown_keeps_trim_away(lab):
    f = lab.flash(16)
    dev = lab.device("n2l-nopd", table_line(8 << 11, f.path,
                                            features=["no_discard_passdown"]))
    n2l.write_pattern(dev.path, 0, 8 * MB, 11)
    before = f.stat()["discards"]
    sh(f"blkdiscard {dev.path}")
    assert dev.status()["mapped"] == 0
    assert n2l.is_zero(dev.path, 0, 8 * MB)
    assert f.stat()["discards"] == before


def test_flush_and_fua_reach_both_media(lab):
    # A write cache makes null_blk take flushes and FUA instead of the
    # block layer completing them on its behalf.
    f = lab.flash(16, cache_mb=4)
    d = lab.disk(16, cache_mb=4)
    dev = lab.device("n2l-flush", table_line(24 << 11, f.path, d.path))
    fb, db = f.stat()["flushes"], d.stat()["flushes"]
    fio_verify(dev.path, "randwrite", "4k", "8M", iodepth=4, extra="--fsync=16")
    assert f.stat()["flushes"] > fb and d.stat()["flushes"] > db
    fio_verify(dev.path, "randwrite", "4k", "8M", iodepth=4, extra="--sync=1")


@pytest.mark.parametrize("media", ["flash", "disk", "flash+disk"])
def test_a_flush_reaches_each_medium_once(lab, media):
    """Each block medium present gets one flush per flush of the device:
    with one medium, its one flush, not two (a medium's flush is a
    cache write-back, not free)."""
    f = lab.flash(16, cache_mb=4) if "flash" in media else None
    d = lab.disk(16, cache_mb=4) if "disk" in media else None
    dev = lab.device("n2l-flush1", table_line(8 << 11, f.path if f else "-",
                                              d.path if d else "-"))
    present = [m for m in (f, d) if m]
    before = [m.stat()["flushes"] for m in present]
    fd = os.open(dev.path, os.O_RDWR)
    try:
        for _ in range(10):
            os.fsync(fd)    # blkdev_fsync: one empty REQ_PREFLUSH
    finally:
        os.close(fd)
    got = [m.stat()["flushes"] - b for m, b in zip(present, before)]
    assert got == [10] * len(present), f"{media}: flushes per medium {got} for 10"


@pytest.mark.parametrize("mode,seconds", [("owned", 20), ("shared", 10)])
def test_overwrite_discard_read_races(lab, mode, seconds):
    # Flash holds half the device: discards free flash blocks, and later
    # overwrites move slots from disk to flash while readers read them.
    f, d = lab.flash(4), lab.disk(16)
    dev = lab.device("n2l-race", table_line(8 << 11, f.path, d.path))
    p = run(f"{n2l.TOOLS}/n2l-race {dev.path} 2048 {seconds} 4 3 {mode}",
            timeout=seconds * 20 + 120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert " wrong 0" in p.stdout
    st = dev.status()
    assert st["mapped"] == st["flash"]["held"] + st["disk"]["held"]
    assert st["flash"]["held"] <= st["flash"]["capacity"]


def swap_workload(dev, limit_mb, vm_mb, seconds, discard=False, mkswap=True, swapon=True):
    if mkswap:
        sh(f"mkswap {dev.path}")
    if swapon:
        sh(f"swapon {'--discard' if discard else ''} -p 100 {dev.path}")
    cg = "/sys/fs/cgroup/n2l-swap"
    try:
        sh("echo +memory > /sys/fs/cgroup/cgroup.subtree_control")
        os.makedirs(cg, exist_ok=True)
        with open(f"{cg}/memory.max", "w") as fh:
            fh.write(f"{limit_mb}M\n")
        p = run(f"cd /tmp/n2l && echo $$ > {cg}/cgroup.procs && "
                f"exec stress-ng --vm 2 --vm-bytes {vm_mb // 2}M --vm-keep "
                f"--vm-method all --verify --timeout {seconds}s --metrics-brief "
                f"--temp-path /tmp/n2l",
                timeout=seconds * 10 + 300)
        peak = dev.status()
        return p, peak
    finally:
        if os.path.isdir(cg):
            run(f"rmdir {cg}")


def test_swap_under_memory_pressure_with_verification(lab):
    f, d = lab.flash(64), lab.disk(128)
    dev = lab.device("n2l-swap", table_line(160 << 11, f.path, d.path))
    p, st = swap_workload(dev, limit_mb=48, vm_mb=128, seconds=40)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    failures = [line for line in out.splitlines()
                if "fail" in line.lower() and "failed: 0" not in line.lower()]
    assert not failures, out
    swapped = (st["flash"]["write_sectors"] + st["disk"]["write_sectors"]) * 512
    assert swapped >= 32 * MB, f"only {swapped} bytes swapped out"
    assert st["flash"]["reads"] + st["disk"]["reads"] > 0, "nothing swapped back in"
    sh(f"swapoff {dev.path}")


def test_swapon_discard_frees_slots(lab):
    f = lab.flash(64)
    dev = lab.device("n2l-swapd", table_line(64 << 11, f.path))
    p, _ = swap_workload(dev, limit_mb=32, vm_mb=64, seconds=15, discard=True)
    assert p.returncode == 0, p.stdout + p.stderr
    sh(f"swapoff {dev.path}")
    assert dev.status()["discarded"] > 0
