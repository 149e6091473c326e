"""The metadata device (metadata:<dev>): the slot map outlives the device,
crashes and power cuts; what is not this device's map is refused, and
nothing is written to it."""
import contextlib
import fcntl
import hashlib
import json
import mmap
import os
import random
import re
import shutil
import signal
import struct
import sys
import threading
import time

import pytest

import n2l
from n2l import flush, run, sh, table_line
import dmioctl  # n2l puts userspace/pylib on the path
import logwrites
import n2lmeta

MB = 1 << 20
BLOCK = 4096
TMP = "/tmp/n2l"
# The interpreter the tests run under, not python3 on PATH: in CI that
# is pyenv's shim, a bash script that forks some forty times before it
# execs Python (0.65 s natively, against 0.09 s for Python alone).
PYTHON = os.environ.get("N2L_PYTHON", sys.executable)


def meta_table(mb, flash, disk, meta, features=(), servers=()):
    return table_line(mb << 11, flash, disk, features=(*features, f"metadata:{meta}"),
                      servers=servers)


BLKFLSBUF = 0x1261


def read_bytes(path, offset=0, length=None):
    """What the device holds, past any page cache (blockdev --flushbufs,
    without starting it)."""
    with open(path, "rb") as f:
        fcntl.ioctl(f.fileno(), BLKFLSBUF)
        f.seek(offset)
        return f.read(length) if length else f.read()


def digest(data):
    return hashlib.sha256(data).hexdigest()


def write_bytes(path, offset, data):
    """data at offset, on the device itself, and no page of it left in the
    page cache (what blockdev --flushbufs does, without starting it)."""
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
        fcntl.ioctl(f.fileno(), BLKFLSBUF)


def metadata_state(dev):
    """sysfs metadata: (state, generation, commits)."""
    state, gen, commits = dev.sysfs_read("metadata").split()
    return state, int(gen), int(commits)


def create_fails(name, table, says):
    """The table is refused, and the kernel log says why. Through the
    ioctls (dmioctl), as dmsetup create would, without its process start
    and its wait for udev."""
    n2l.dmesg_new()
    try:
        dmioctl.create(name, table)
        refused = False
    except dmioctl.DmError:
        refused = True
    log = "\n".join(n2l.dmesg_new())
    if not refused:
        dmioctl.remove(name)
    assert refused, f"{name}: created with {table}"
    assert says in log, log


def test_a_zeroed_device_is_formatted_and_the_map_outlives_the_device(lab):
    f, d, m = lab.flash(16), lab.disk(16), lab.nullb(4)
    table = meta_table(24, f.path, d.path, m.path)
    n2l.dmesg_new()
    dev = lab.device("n2l-meta", table)
    assert "formatting the metadata device" in "\n".join(n2l.dmesg_new())
    state, gen, _ = metadata_state(dev)
    assert state == "ok" and gen == 2    # both areas written
    n2l.write_pattern(dev.path, 0, 24 * MB, 11)      # Flash, then disk
    sh(f"blkdiscard -o {4 * MB} -l {MB} {dev.path}")
    held = {k: dev.status()[k]["held"] for k in ("flash", "disk")}
    dev.remove()
    dev = lab.device("n2l-meta", table)
    log = "\n".join(n2l.dmesg_new())
    assert "loaded from metadata generation" in log and "after a clean close" in log, log
    st = dev.status()
    assert {k: st[k]["held"] for k in ("flash", "disk")} == held
    assert n2l.check_pattern(dev.path, 0, 4 * MB, 11) == 0
    assert n2l.is_zero(dev.path, 4 * MB, MB)
    assert n2l.check_pattern(dev.path, 5 * MB, 19 * MB, 11) == 0
    # a reload keeps it, and must name the same metadata device
    dev.reload(table)
    other = lab.nullb(4)
    p = run(f"dmsetup reload {dev.name} --table '{meta_table(24, f.path, d.path, other.path)}'")
    assert p.returncode != 0
    sh(f"dmsetup clear {dev.name}")
    rdev = os.stat(m.path).st_rdev
    assert f"metadata:{os.major(rdev)}:{os.minor(rdev)}" in dev.table(), dev.table()
    # new slots find blocks the loaded map does not name
    n2l.write_pattern(dev.path, 4 * MB, MB, 12)
    assert n2l.check_pattern(dev.path, 0, 4 * MB, 11) == 0
    assert n2l.check_pattern(dev.path, 4 * MB, MB, 12) == 0
    assert n2l.check_pattern(dev.path, 5 * MB, 19 * MB, 11) == 0


def test_what_is_not_this_devices_map_is_refused_and_left_as_it_was(lab):
    f, d, m = lab.flash(16), lab.disk(16), lab.nullb(4)
    dev = lab.device("n2l-meta-r", meta_table(24, f.path, d.path, m.path))
    n2l.write_pattern(dev.path, 0, 8 * MB, 13)
    dev.remove()
    image = read_bytes(m.path)
    other_flash = lab.flash(8)
    cases = [
        (meta_table(20, f.path, d.path, m.path), "holds the map of a device of 6144 slots"),
        (meta_table(24, other_flash.path, d.path, m.path), "written for media of 4096 Flash"),
        (meta_table(24, f.path, d.path, f.path), "must not be a medium"),
    ]
    for table, says in cases:
        create_fails("n2l-meta-r", table, says)
        assert read_bytes(m.path) == image
    # too small: a metadata device of 16 KiB
    sh(f"dmsetup create n2l-meta-small --table '0 32 linear {m.path} 0'")
    try:
        need = (2 + 2 * -(-6144 // 510) + 2) * BLOCK
        create_fails("n2l-meta-r", meta_table(24, f.path, d.path, "/dev/mapper/n2l-meta-small"),
                     f"needs {need} bytes")
    finally:
        sh("dmsetup remove n2l-meta-small")
    assert read_bytes(m.path) == image


def nswapd(lab, mb):
    """An nswapd donating exactly mb MiB."""
    return lab.server("nswapd", ["--min-mb", str(mb), "--max-mb", str(mb),
                                 "--reserve-mb", "0", "--interval-ms", "200"])


def servers_up(dev, n):
    st = dev.status()
    return sum(1 for s in st["servers"] if s["state"] == "up") >= n and st


def test_network_ram_slots_outlive_the_device_on_the_servers_that_kept_them(lab):
    """A device with metadata leaves its pages on its servers when it
    goes; loaded again it adds the servers back under the same device id,
    reconciles, and keeps every slot a server still holds. A server that
    restarted meanwhile kept nothing: its slots read as -EIO and count as
    lost, never as zeros or another slot's data."""
    a, b = nswapd(lab, 8), nswapd(lab, 8)
    f, m = lab.flash(16), lab.nullb(4)
    table = table_line(16 << 11, f.path, "-", features=(f"metadata:{m.path}",),
                       servers=[a.name, b.name])
    dev = lab.device("n2l-meta-net", table)
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers up")
    n2l.write_pattern(dev.path, 0, 12 * MB, 21)
    st = dev.status()
    held = {s["name"]: s["held"] for s in st["servers"]}
    assert st["netram"]["held"] == 3072 and min(held.values()) > 0, st
    dev.remove()
    assert n2l.server_pages_in_use(a) == held[a.name], "a's pages were dropped"
    first = meta_dump(m.path)
    assert sorted(first["netram"]["servers"].values()) == sorted([a.name, b.name]), first

    n2l.dmesg_new()
    dev = lab.device("n2l-meta-net", table)
    assert "loaded from metadata generation" in "\n".join(n2l.dmesg_new())
    st = n2l.wait_for(lambda: servers_up(dev, 2), what="servers reconciled")
    assert st["netram"]["held"] == 3072 and st["lost"] == 0, st
    assert {s["name"]: s["held"] for s in st["servers"]} == held
    assert n2l.scan_pattern(dev.path, 0, 12 * MB, 21) == (3072, 0, 0)
    dev.remove()

    b.restart()                 # a new process: it holds nothing of ours
    dev = lab.device("n2l-meta-net", table)
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers reconciled")
    assert n2l.scan_pattern(dev.path, 0, 12 * MB, 21) == \
        (held[a.name], 0, held[b.name])
    st = n2l.wait_for(lambda: (lambda s: s["lost"] == held[b.name] and s)(dev.status()),
                      what=f"{held[b.name]} slots counted lost")
    assert st["netram"]["held"] == held[a.name], st
    # what was lost is written again, and stays
    n2l.write_pattern(dev.path, 0, 12 * MB, 22)
    dev.remove()
    dev = lab.device("n2l-meta-net", table)
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers reconciled")
    assert n2l.scan_pattern(dev.path, 0, 12 * MB, 22) == (3072, 0, 0)
    dev.remove()
    # no version handed out twice: every load goes on above the floor
    # (some slots may be on Flash: the servers kept the copies the
    # committed map named until the rewrite's commit)
    last = meta_dump(m.path)
    versions = [e["version"] for e in last["entries"] if e["medium"] == "netram"]
    assert len(versions) > 2048 and min(versions) >= first["netram"]["vers_floor"], \
        (len(versions), min(versions), first["netram"]["vers_floor"])


def meta_dump(path):
    """n2lctl meta dump --json of a metadata device no table holds, from
    the code it runs (n2lmeta), in this process: its command line is
    tests/tools/test_n2lmeta.py's to test, on the host, and a run of it
    took CI's loaded guest over 10 s."""
    m = n2lmeta.load(path)
    assert m.sb is not None and not m.errors, n2lmeta.check_lines(m)
    return json.loads(json.dumps(n2lmeta.dump_json(m)))


def test_format_1_metadata_is_loaded_and_rewritten_in_format_2(lab):
    """Metadata of format 1 (no Network RAM block) loads as it did: its
    Flash and disk slots where they were, its Network RAM slots lost; a
    device with room for the Network RAM blocks is rewritten in format 2."""
    f, d, m = lab.flash(16), lab.disk(16), lab.nullb(4)
    image = os.path.join(TMP, "meta-v1.img")
    os.makedirs(TMP, exist_ok=True)
    n2lmeta.format_image(image, 6144, 4096, 4096, version=n2lmeta.V1, entries={
        0: n2lmeta.entry(n2lmeta.FLASH, 5),
        1: n2lmeta.entry(n2lmeta.NETRAM, n2lmeta.netram_loc(3, 42)),
        6143: n2lmeta.entry(n2lmeta.DISK, 49)})
    sh(f"dd if={image} of={m.path} bs=4k oflag=direct status=none")
    rc, out = meta_check(m.path)
    assert rc == 0 and "(1 of the Network RAM ones lost at load)" in out, out
    n2l.dmesg_new()
    dev = lab.device("n2l-meta-v1", meta_table(24, f.path, d.path, m.path))
    assert "rewritten in format 2" in "\n".join(n2l.dmesg_new())
    st = dev.status()
    assert (st["flash"]["held"], st["disk"]["held"], st["lost"]) == (1, 1, 1), st
    dev.remove()
    dump = meta_dump(m.path)
    assert dump["superblock"]["version"] == 2 and dump["netram"]["servers"] == {}, dump


N2LCTL = os.path.join(n2l.REPO, "userspace", "n2lctl")


def meta_check(path):
    """n2lctl meta check: (exit status, what it says), from the code it
    runs (n2lmeta), in this process, as meta_dump() has it; past the
    page cache, as n2lctl would read it after blockdev --flushbufs."""
    with open(path, "rb") as f:
        fcntl.ioctl(f.fileno(), BLKFLSBUF)
    m = n2lmeta.load(path)
    return m.status, "\n".join(n2lmeta.check_lines(m))


def test_a_tab_entry_with_metadata_keeps_its_slots_across_stop_and_start(lab):
    """metadata= in nswap2ltab: n2lctl tab start loads the map that tab
    stop left (the boot and shutdown of a machine, as its units run)."""
    f, m = lab.flash(16), lab.nullb(4)
    tab = os.path.join(TMP, "nswap2ltab")
    with open(tab, "w") as fh:
        fh.write(f"n2l-tab flash={f.path} - - metadata={m.path}\n")
    ctl = f"{PYTHON} {N2LCTL} tab"

    def start():
        sh(f"{ctl} start --tab {tab} n2l-tab")
        lab.devices.append(n2l.Device("n2l-tab"))
        return lab.devices[-1]
    dev = start()
    assert "metadata:" in dev.table() and metadata_state(dev)[0] == "ok"
    n2l.write_pattern(dev.path, 0, 4 * MB, 16)
    sh(f"{ctl} stop --tab {tab} n2l-tab")
    lab.devices.remove(dev)
    assert not os.path.exists(dev.path)
    dev = start()
    assert n2l.check_pattern(dev.path, 0, 4 * MB, 16) == 0
    assert dev.status()["flash"]["held"] == 1024


def corrupt_and_refuse(lab, m, f, d, offset, data, says, check_says):
    image = read_bytes(m.path)
    write_bytes(m.path, offset, data)
    damaged = read_bytes(m.path)
    create_fails("n2l-meta-c", meta_table(24, f.path, d.path, m.path), says)
    assert read_bytes(m.path) == damaged
    rc, out = meta_check(m.path)
    assert rc == 1 and check_says in out, out
    write_bytes(m.path, 0, image)


def test_corrupt_metadata_is_refused_and_a_torn_superblock_falls_back(lab):
    f, d, m = lab.flash(16), lab.disk(16), lab.nullb(4)
    table = meta_table(24, f.path, d.path, m.path)
    dev = lab.device("n2l-meta-c", table)
    n2l.write_pattern(dev.path, 0, 8 * MB, 14)
    dev.remove()
    # what the kernel wrote, n2lctl reads: clean, with the slots written
    rc, out = meta_check(m.path)
    assert rc == 0 and "2048 Flash" in out and "clean" in out, out
    image = read_bytes(m.path)
    gens = [int.from_bytes(image[i * BLOCK + 32:i * BLOCK + 40], "little") for i in (0, 1)]
    newest = gens.index(max(gens))
    map_blocks = -(-6144 // 510)
    area = 2 + (max(gens) & 1) * map_blocks
    flipped = bytes([image[area * BLOCK + 100] ^ 0x10])
    corrupt_and_refuse(lab, m, f, d, area * BLOCK + 100, flipped, "map block 0 of area",
                       f"block {area}")
    netram = 2 + 2 * map_blocks + (max(gens) & 1)
    flipped = bytes([image[netram * BLOCK + 40] ^ 0x01])
    corrupt_and_refuse(lab, m, f, d, netram * BLOCK + 40, flipped,
                       f"Network RAM block of generation {max(gens)} is corrupt",
                       f"block {netram} (Network RAM block of area")
    corrupt_and_refuse(lab, m, f, d, 0, os.urandom(2 * BLOCK), "Not an nswap2l metadata device",
                       "not an nswap2l metadata device")
    # a torn write of the newest superblock: the older generation loads
    write_bytes(m.path, newest * BLOCK + 512, os.urandom(512))
    rc, out = meta_check(m.path)
    assert rc == 0 and "torn" in out, out
    n2l.dmesg_new()
    dev = lab.device("n2l-meta-c", table)
    log = "\n".join(n2l.dmesg_new())
    assert f"superblock {newest} is torn" in log, log
    assert f"generation {max(gens) - 1}" in log, log
    assert n2l.check_pattern(dev.path, 0, 8 * MB, 14) == 0


def flakey(lab, name, medium):
    """medium behind dm-flakey, passing everything through until cut()."""
    sectors = medium.size_mb * 2048
    sh(f"dmsetup create {name} --table '0 {sectors} flakey {medium.path} 0 3600 0'")
    lab.cleanups.append(lambda: run(f"dmsetup remove --retry {name}"))
    return f"/dev/mapper/{name}", sectors


def set_flakey(names, sectors, media, cut):
    """A power cut: every write from now on is dropped, on every device at
    once (each suspended before any takes its new table); or back on.
    What dmsetup suspend --noflush, load and resume do, through the
    ioctls: as dmsetup, that was up to 18 process starts a power cycle,
    and a wait for udev after each resume."""
    for n in names:
        dmioctl.suspend(n, noflush=True)
    for n, s, mdev in zip(names, sectors, media):
        mode = "0 3600 1 drop_writes" if cut else "3600 0"
        dmioctl.load(n, f"0 {s} flakey {mdev.path} 0 {mode}")
    for n in names:
        dmioctl.resume(n)


def cut_device(lab, name, mb_flash, mb_dev, mb_disk=0, servers=()):
    """A device with metadata over Flash (and disk, given mb_disk), each
    behind dm-flakey, and the page servers given; returns (device,
    power_cycle), where power_cycle(after_cut) drops every write from now
    on, cuts the servers' links (the servers outlive the client, and hear
    nothing more from it), calls after_cut (an umount, say), removes the
    device, restores the media and links and loads the device again from
    what they hold."""
    media = [lab.flash(mb_flash)] + ([lab.disk(mb_disk)] if mb_disk else []) + [lab.nullb(4)]
    names = [f"{name}-{k}" for k in ("fdm" if mb_disk else "fm")]
    paths, sectors = zip(*(flakey(lab, n, x) for n, x in zip(names, media)))
    table = meta_table(mb_dev, paths[0], paths[1] if mb_disk else "-", paths[-1],
                       servers=[s.name for s in servers])
    dev = lab.device(name, table)

    def power_cycle(after_cut=None):
        set_flakey(names, sectors, media, cut=True)
        for srv in servers:
            srv.link.down()
        if servers:
            # The removal waits for what it has in flight to the servers,
            # which only the request timeout ends now: 5 s by default. The
            # tick holds each request against the knob as it is then.
            lab.devices[-1].message("set", "netram_timeout_ms", "500")
        if after_cut:
            after_cut()
        lab.devices[-1].remove()        # its closing commit is lost too
        for srv in servers:
            forget_connections(srv)
            srv.link.up()
        set_flakey(names, sectors, media, cut=False)
        return lab.device(name, table)
    return dev, power_cycle


def forget_connections(srv):
    """As if the client had died: neither end of its connections to srv
    is left to send what the removal queued when the link comes back."""
    addr, port = srv.name.rsplit(":", 1)
    run(f"ss -K dst {addr} dport = :{port}")
    run(f"ip netns exec {srv.link.ns} ss -K sport = :{port}")


WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fsync_writer.py")


def fsynced(log):
    with open(log) as f:
        return f.read().splitlines()


@pytest.mark.parametrize("cut_after", [5, 30, 90])
def test_a_power_cut_keeps_every_fsynced_file_and_fsck_is_clean(lab, cut_after):
    dev, power_cycle = cut_device(lab, "n2l-cut", 32, 48, mb_disk=32)
    mnt = os.path.join(TMP, "cut")
    os.makedirs(mnt, exist_ok=True)
    sh(f"mkfs.ext4 -q -E nodiscard {dev.path}")
    sh(f"mount {dev.path} {mnt}")
    log = os.path.join(TMP, "cut.log")
    with open(log, "w"):
        pass
    writer = lab.spawn(f"exec {PYTHON} {WRITER} {mnt} {log}")
    n2l.wait_for(lambda: len(fsynced(log)) >= cut_after, timeout=600,
                 what=f"{cut_after} files fsynced")
    durable = fsynced(log)

    def stop_writing():
        time.sleep(1)                   # writes go on, and are lost
        writer.proc.kill()
        writer.finished(60)
        sh(f"umount {mnt}")
    dev = power_cycle(stop_writing)
    sh(f"mount {dev.path} {mnt}")       # replays the journal
    try:
        for line in durable:
            name, digest = line.split()
            with open(os.path.join(mnt, name), "rb") as fh:
                assert hashlib.sha256(fh.read()).hexdigest() == digest, name
    finally:
        sh(f"umount {mnt}")
    p = run(f"fsck.ext4 -fn {dev.path}")
    assert p.returncode == 0, p.stdout + p.stderr


PERIOD = "/sys/module/nswap2l/parameters/metadata_period_ms"


@pytest.fixture
def no_periodic_commit():
    """Commits only on flushes, FUA and suspend for the test's span, so
    that a power cut falls between a change and its commit every time."""
    before = open(PERIOD).read().strip()
    with open(PERIOD, "w") as f:
        f.write("3600000")
    yield
    with open(PERIOD, "w") as f:
        f.write(before)


def test_a_block_freed_is_not_reused_until_a_commit_stops_naming_it(lab, no_periodic_commit):
    # Flash of 256 blocks, full, committed; slot 10 discarded, and a new
    # slot written: the only block it can get is slot 10's old one.
    dev, power_cycle = cut_device(lab, "n2l-reuse", 1, 2)
    n2l.write_pattern(dev.path, 0, MB, 21)
    sh(f"dd if=/dev/null of={dev.path} conv=fsync")
    old10 = read_bytes(dev.path, 10 * BLOCK, BLOCK)
    sh(f"blkdiscard -o {10 * BLOCK} -l {BLOCK} {dev.path}")
    # no flush after it (as n2l-pattern's would): nothing commits meanwhile
    sh(f"dd if=/dev/urandom of={dev.path} bs=4096 count=1 seek=256 "
       "oflag=direct conv=notrunc")
    new256 = read_bytes(dev.path, MB, BLOCK)
    assert dev.status()["flash"]["held"] == 256
    dev = power_cycle()
    # Slot 10 holds what it held, or nothing: never slot 256's data.
    slot10 = digest(read_bytes(dev.path, 10 * BLOCK, BLOCK))
    assert slot10 != digest(new256), "slot 10 reads the data of a slot written after its discard"
    assert slot10 in (digest(old10), digest(bytes(BLOCK)))
    assert n2l.check_pattern(dev.path, 0, 10 * BLOCK, 21) == 0
    assert n2l.check_pattern(dev.path, 11 * BLOCK, MB - 11 * BLOCK, 21) == 0


def test_an_fsync_survives_a_power_cut_right_after_it(lab, no_periodic_commit):
    """ext4's journal commit block is a REQ_PREFLUSH | REQ_FUA write: dm
    sends the flush (a commit) first, then the block with FUA. With the
    journal not zeroed by mkfs, that block goes to a new slot: only the
    commit that completes the FUA write makes the map name it, and with
    the cut right after fsync returns nothing else would."""
    dev, power_cycle = cut_device(lab, "n2l-fua", 32, 32)
    mnt = os.path.join(TMP, "fua")
    os.makedirs(mnt, exist_ok=True)
    sh(f"mkfs.ext4 -q -E nodiscard,lazy_journal_init=1 {dev.path}")
    sh(f"mount {dev.path} {mnt}")
    data = os.urandom(3 * BLOCK)
    fd = os.open(os.path.join(mnt, "f"), os.O_CREAT | os.O_WRONLY, 0o644)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    dev = power_cycle(lambda: sh(f"umount {mnt}"))
    sh(f"mount {dev.path} {mnt}")
    try:
        with open(os.path.join(mnt, "f"), "rb") as fh:
            assert digest(fh.read()) == digest(data)
    finally:
        sh(f"umount {mnt}")


def test_network_ram_slots_flushed_before_a_power_cut_come_back(lab, no_periodic_commit):
    """The page servers outlive the client's power cut: the slots on
    Network RAM that a flush committed come back from them; those written
    after it read as zeros (the map never named them; reconciliation
    drops their pages), never as -EIO or another slot's data."""
    a, b = nswapd(lab, 8), nswapd(lab, 8)
    dev, power_cycle = cut_device(lab, "n2l-cut-net", 16, 16, servers=[a, b])
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers up")
    n2l.write_pattern(dev.path, 0, 8 * MB, 31)
    flush(dev.path)
    n2l.write_pattern(dev.path, 8 * MB, 4 * MB, 32)
    assert dev.status()["netram"]["held"] == 3072
    dev = power_cycle()
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers reconciled")
    assert n2l.scan_pattern(dev.path, 0, 8 * MB, 31) == (2048, 0, 0)
    good, _, eio = n2l.scan_pattern(dev.path, 8 * MB, 4 * MB, 32)
    after = read_bytes(dev.path, 8 * MB, 4 * MB)
    zero = sum(not any(after[i:i + BLOCK]) for i in range(0, len(after), BLOCK))
    assert (good + zero, eio) == (1024, 0), (good, zero, eio)
    assert dev.status()["lost"] == 0


def write_unflushed(lab, path, offset, length, seed):
    """The pattern written with O_DIRECT and no flush (n2l-pattern's own
    write ends with fsync, a commit): copied from a null_blk that holds it."""
    copy_direct(pattern_source(lab, offset, length, seed), path, offset, length)


def pattern_source(lab, offset, length, seed):
    """A null_blk holding the pattern (made ahead of a write that must not
    wait for anything: making a disk waits for udev)."""
    src = lab.nullb((offset + length + MB - 1) // MB)
    n2l.write_pattern(src.path, offset, length, seed)
    return src.path


def copy_direct(src, path, offset, length):
    # dd turns O_DIRECT off for a last partial block and then fsyncs: the
    # block size must divide the length. Bounded: a write waiting for room
    # that nothing brings would hang.
    bs = MB if length % MB == 0 else BLOCK
    sh(f"timeout 120 dd if={src} of={path} bs={bs} skip={offset} seek={offset} "
       f"iflag=direct,skip_bytes,count_bytes oflag=direct,seek_bytes count={length} "
       f"status=none")


def overwrite_flushed_netram(lab, dev, reconnect=()):
    """8 MiB of slots on Network RAM, flushed; then, with no commit, the
    first 4 MiB overwritten, the next 2 MiB discarded, and the servers in
    reconnect made to reconnect and reconcile."""
    n2l.write_pattern(dev.path, 0, 8 * MB, 31)
    flush(dev.path)
    gen = metadata_state(dev)[1]
    write_unflushed(lab, dev.path, 0, 4 * MB, 33)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        fcntl.ioctl(fd, BLKDISCARD, struct.pack("QQ", 4 * MB, 2 * MB))
    finally:
        os.close(fd)
    for srv in reconnect:
        n2l.reconciled_since(dev, srv, n2l.reset_connection(dev, srv))
    assert metadata_state(dev)[1] == gen, "a commit came between the flush and the cut"


def check_flushed_netram(dev):
    """After the cut: each overwritten slot holds its old data or its new,
    each discarded one its old data or zeros, the rest their data; none
    -EIO, none lost."""
    old, _, eio_old = n2l.scan_pattern(dev.path, 0, 4 * MB, 31)
    new, _, _ = n2l.scan_pattern(dev.path, 0, 4 * MB, 33)
    assert (old + new, eio_old) == (1024, 0), (old, new, eio_old)
    kept, _, eio = n2l.scan_pattern(dev.path, 4 * MB, 2 * MB, 31)
    after = read_bytes(dev.path, 4 * MB, 2 * MB)
    zero = sum(not any(after[i:i + BLOCK]) for i in range(0, len(after), BLOCK))
    assert (kept + zero, eio) == (512, 0), (kept, zero, eio)
    assert n2l.scan_pattern(dev.path, 6 * MB, 2 * MB, 31) == (512, 0, 0)
    assert dev.status()["lost"] == 0


def test_network_ram_slots_overwritten_after_a_flush_come_back_from_a_power_cut(
        lab, no_periodic_commit):
    """The committed map names the Network RAM copies a flush made
    durable: an overwrite, a discard or a move that frees one must not
    have it dropped from its server before a commit stops naming it, or a
    power cut leaves the map pointing at nothing (-EIO for data a flush
    promised). Their invalidations wait for the next commit; and server a,
    which reconciles meanwhile, is told to keep those copies (the client
    lists what waits with the map's copies), while b is left alone."""
    a, b = nswapd(lab, 8), nswapd(lab, 8)
    dev, power_cycle = cut_device(lab, "n2l-cut-ow", 16, 16, servers=[a, b])
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers up")
    overwrite_flushed_netram(lab, dev, reconnect=[a])
    dev = power_cycle()
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers reconciled")
    check_flushed_netram(dev)


def test_full_servers_get_room_from_a_commit(lab, no_periodic_commit):
    """Overwrites on full servers free their old copies only once a
    commit stops naming them: a write waiting for that room starts the
    commit itself rather than wait for the period (an hour here)."""
    a = nswapd(lab, 4)
    dev = lab.device("n2l-meta-full", meta_table(3, "-", "-", lab.nullb(4).path,
                                                 servers=[a.name]))
    n2l.wait_for(lambda: servers_up(dev, 1), what="server up")
    n2l.write_pattern(dev.path, 0, 3 * MB, 41)
    gen = metadata_state(dev)[1]
    write_unflushed(lab, dev.path, 0, 3 * MB, 42)
    write_unflushed(lab, dev.path, 0, 3 * MB, 43)
    assert metadata_state(dev)[1] > gen
    assert n2l.scan_pattern(dev.path, 0, 3 * MB, 43) == (768, 0, 0)


@pytest.mark.parametrize("how", ["moved", "returned"])
def test_pages_a_shrinking_server_gave_up_come_back_from_a_power_cut(
        lab, no_periodic_commit, how):
    """A server that shrinks gives pages up (MOVED to a peer, or RETURNed
    to the client) and drops them once the client answers OK. The client
    must commit the slots' new places before it answers, or a power cut
    leaves the committed map naming pages the server dropped."""
    conf = os.path.join(TMP, f"shrink-{how}.conf")
    with open(conf, "w") as fh:
        fh.write("min_mb = 8\nmax_mb = 8\n")
    b = nswapd(lab, 8)
    peer = ["--peer", b.name] if how == "moved" else []
    a = lab.server("nswapd", ["--config", conf, "--reserve-mb", "0",
                              "--interval-ms", "200", *peer])
    dev, power_cycle = cut_device(lab, f"n2l-cut-{how}", 16, 16, servers=[a, b])
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers up")
    n2l.write_pattern(dev.path, 0, 8 * MB, 51)      # ends with a flush
    held = {s["name"]: s["held"] for s in dev.status()["servers"]}
    assert held[a.name] > 512, held
    with open(conf, "w") as fh:
        fh.write("min_mb = 1\nmax_mb = 1\n")
    a.signal(signal.SIGHUP)
    counter = f"{how}_pages"
    n2l.wait_for(lambda: dev.status()[counter] >= held[a.name] - 256, timeout=180,
                 what=f"pages {how}")
    time.sleep(1)                                   # the server drops them
    dev = power_cycle()
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers reconciled")
    assert n2l.scan_pattern(dev.path, 0, 8 * MB, 51) == (2048, 0, 0)
    assert dev.status()["lost"] == 0


PARAMS = "/sys/module/nswap2l/parameters"
DELAY_COMMIT = 32       # a commit, its lists switched, before it writes


@contextlib.contextmanager
def slow_commits(ms):
    """Each commit pauses ms before it writes (a slow metadata device)."""
    def set_delay(ms, where):
        for name, value in (("test_delay_at", where), ("test_delay_ms", ms)):
            with open(f"{PARAMS}/{name}", "w") as f:
                f.write(str(value))
    set_delay(ms, DELAY_COMMIT)
    try:
        yield
    finally:
        set_delay(0, 0)


def test_invalidations_a_full_list_could_not_take_go_by_reconciliation(
        lab, no_periodic_commit):
    """A list of invalidations waiting for a commit holds 8192; while a
    commit is slow, overwrites with two replicas free more than that. What
    the list could not take is not sent: after the commit that covers it,
    every server reconciles and drops those pages, so that each holds
    exactly what the map names, and every slot reads its last data."""
    a, b = nswapd(lab, 96), nswapd(lab, 96)
    dev = lab.device("n2l-meta-ovf", meta_table(16, "-", "-", lab.nullb(4).path,
                                                features=("replicas:2",),
                                                servers=[a.name, b.name]))
    n2l.wait_for(lambda: servers_up(dev, 2), what="servers up")
    n2l.write_pattern(dev.path, 0, 16 * MB, 61)
    before = {s.name: n2l.server_line(dev, s)["reconciled"] for s in (a, b)}
    n2l.dmesg_new()
    with slow_commits(10000):
        for seed in (62, 63, 64):       # 12288 slots, two copies each
            write_unflushed(lab, dev.path, 0, 16 * MB, seed)
    flush(dev.path)                 # the commit of the list that overflowed
    assert "could not wait for a commit" in "\n".join(n2l.dmesg_new())
    for s in (a, b):
        n2l.wait_for(lambda s=s: n2l.server_line(dev, s)["reconciled"] > before[s.name],
                     what=f"{s.name} reconciled after the overflow")
    n2l.wait_for(lambda: all(n2l.server_held_pages(dev, s) == 4096 for s in (a, b)),
                 what="servers holding what the map points at")
    assert n2l.scan_pattern(dev.path, 0, 16 * MB, 64) == (4096, 0, 0)


RQ_EVENT = re.compile(r"block_rq_(issue|complete): (\d+),(\d+) (\w+) (?:\d+ )?\(.*?\) (\d+) \+ (\d+)")


@contextlib.contextmanager
def block_requests():
    """The block layer's own record of requests issued to and completed by
    the drivers, in order (a trace instance of its own, so that no other
    user of the trace buffer is disturbed); yields a list filled at the
    end with (event, (major, minor), rwbs, sector, sectors)."""
    inst = f"{n2l.tracefs()}/instances/n2l-requests"
    if not os.path.isdir(inst):
        os.mkdir(inst)
    events = ("block_rq_issue", "block_rq_complete")
    for e in events:
        with open(f"{inst}/events/block/{e}/enable", "w") as f:
            f.write("1")
    got = []
    try:
        yield got
    finally:
        for e in events:
            with open(f"{inst}/events/block/{e}/enable", "w") as f:
                f.write("0")
        text = open(f"{inst}/trace").read()
        os.rmdir(inst)
        for m in RQ_EVENT.finditer(text):
            got.append((m[1], (int(m[2]), int(m[3])), m[4], int(m[5]), int(m[6])))


def device_number(path):
    rdev = os.stat(path).st_rdev
    return os.major(rdev), os.minor(rdev)


def test_writes_a_commit_copies_are_flushed_before_its_superblock(lab, no_periodic_commit):
    """While a commit pauses before it copies the map, new slots are written
    to Flash with no flush of their own. The map it commits names them, so
    Flash must complete a flush issued after they completed, and before the
    superblock's write is issued: otherwise a crash that empties Flash's
    volatile cache leaves the committed map naming blocks that hold what
    they held before (a freed slot's data). The block layer's trace shows
    the order the devices saw."""
    flash, meta = lab.nullb(1, cache_mb=1), lab.nullb(4)
    dev = lab.device("n2l-order", meta_table(1, flash.path, "-", meta.path))
    n2l.write_pattern(dev.path, 0, 16 * BLOCK, 71)
    src = pattern_source(lab, 32 * BLOCK, 16 * BLOCK, 73)
    n2l.dmesg_new()
    with slow_commits(10000):
        write_unflushed(lab, dev.path, 16 * BLOCK, BLOCK, 72)  # a change to commit
        commit = threading.Thread(target=flush, args=(dev.path,))
        commit.start()
        n2l.wait_for(lambda: any("before the map is written" in line
                                 for line in n2l.dmesg_new()), what="the commit's pause")
        with block_requests() as requests:
            copy_direct(src, dev.path, 32 * BLOCK, 16 * BLOCK)
            assert commit.is_alive(), "the writes ended after the commit's pause: nothing tested"
            commit.join()
    f, m = device_number(flash.path), device_number(meta.path)
    # an empty flush ends as a write of no sectors: a write carries data
    landed = max(i for i, (e, d, rwbs, _, n) in enumerate(requests)
                 if e == "complete" and d == f and "W" in rwbs and n)
    superblock = next((i for i, (e, d, rwbs, sector, _) in enumerate(requests)
                       if i > landed and e == "issue" and d == m and "W" in rwbs
                       and sector in (0, 8)), None)
    assert superblock is not None, f"no superblock written after the writes: {requests}"
    flushes = [e for e, d, rwbs, _, _ in requests[landed:superblock]
               if d == f and "F" in rwbs and "W" not in rwbs]
    assert flushes[:1] == ["issue"] and "complete" in flushes, (
        f"Flash saw no flush between its last write and the superblock: {requests}")
    assert n2l.check_pattern(dev.path, 32 * BLOCK, 16 * BLOCK, 73) == 0


def test_a_write_waits_while_a_commit_trims_the_blocks_it_frees(lab, no_periodic_commit):
    """Once a commit stops naming freed blocks they are trimmed, with the
    device's lock dropped, before they go back: a write that needs one
    meanwhile waits for it, and must not fail with ENOSPC. Flash that
    takes 2 ms a request widens that window; full, so that a slot written
    after its discard can only have the block the discard freed (the
    dm-log-writes replay found this, one write in about a hundred)."""
    f, m = lab.flash(1, latency_ns=2_000_000), lab.nullb(4)
    dev = lab.device("n2l-trim", meta_table(1, f.path, "-", m.path))
    n2l.write_pattern(dev.path, 0, MB, 31)
    fd = os.open(dev.path, os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, BLOCK)
    failed = []
    try:
        for i in range(64):
            slot = (i * 37) % 256
            fcntl.ioctl(fd, BLKDISCARD, struct.pack("QQ", slot * BLOCK, BLOCK))
            buf[:] = slot_block(slot, i)
            try:
                os.pwrite(fd, buf, slot * BLOCK)
            except OSError as e:
                failed.append((i, slot, e.strerror))
    finally:
        os.close(fd)
    assert not failed, f"{len(failed)} of 64 writes after a discard failed: {failed[:5]}"
    assert dev.status()["nospc"] == 0


def test_one_commit_per_flush_not_per_write(lab):
    f, m = lab.flash(16, cache_mb=4), lab.nullb(4)
    dev = lab.device("n2l-meta-f", meta_table(16, f.path, "-", m.path))
    _, _, before = metadata_state(dev)
    out = os.path.join(TMP, "fio-meta.txt")
    start = time.monotonic()
    p = run(f"fio --name=c --filename={dev.path} --rw=randwrite --bs=4k --size=8M "
            f"--direct=1 --ioengine=psync --fsync=32 --output={out}")
    seconds = time.monotonic() - start
    assert p.returncode == 0, p.stderr
    _, _, after = metadata_state(dev)
    writes, fsyncs = 2048, 2048 // 32
    # A commit a flush (none when a periodic one left nothing to commit),
    # and at most one a second (the period) besides; never one a write.
    assert fsyncs / 2 <= after - before <= fsyncs + seconds + 2, (before, after, seconds)
    assert after - before < writes / 8


def test_a_flush_flushes_each_medium_once_and_an_idle_device_nothing(lab):
    """A flush of the device is one commit's work: each data medium
    flushed once (not once for each of the target's flush bios), the map
    written only if it changed. The periodic commit of a device with
    nothing to commit flushes nothing (a flush writes a medium's cache
    back: an idle device would cost its media one a second)."""
    f, m = lab.flash(16, cache_mb=4), lab.nullb(4, cache_mb=4)
    dev = lab.device("n2l-meta-fl", meta_table(8, f.path, "-", m.path))
    n2l.write_pattern(dev.path, 0, MB, 3)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        os.fsync(fd)            # commits the writes
        time.sleep(1.5)         # a periodic run, which may find the last of them
        fb, mb, gen = f.stat()["flushes"], m.stat()["flushes"], metadata_state(dev)[1]
        time.sleep(2.5)         # two periodic runs with nothing to commit
        idle = (f.stat()["flushes"] - fb, m.stat()["flushes"] - mb)
        for _ in range(10):
            os.fsync(fd)
        flushed = (f.stat()["flushes"] - fb - idle[0], m.stat()["flushes"] - mb - idle[1])
    finally:
        os.close(fd)
    assert idle == (0, 0), f"an idle device flushed Flash and metadata {idle} times"
    assert flushed == (10, 0), f"10 flushes with the map unchanged flushed Flash and " \
        f"metadata {flushed} times"
    assert metadata_state(dev)[1] == gen


def test_a_failed_metadata_write_fails_writes_and_discards_not_reads(lab):
    f, m = lab.flash(16), lab.nullb(4)
    mpath, sectors = flakey(lab, "n2l-fail-m", m)
    dev = lab.device("n2l-meta-e", meta_table(16, f.path, "-", mpath))
    n2l.write_pattern(dev.path, 0, MB, 15)
    sh("dmsetup suspend --noflush n2l-fail-m")
    sh(f"dmsetup load n2l-fail-m --table '0 {sectors} flakey {m.path} 0 0 3600 1 error_writes'")
    sh("dmsetup resume n2l-fail-m")
    # the write lands, its flush's commit fails: the flush fails
    p = run(f"dd if=/dev/urandom of={dev.path} bs=4096 count=1 seek=512 "
            "oflag=direct conv=fsync,notrunc")
    assert p.returncode != 0 and "Input/output error" in p.stderr, p.stderr
    assert metadata_state(dev)[0] == "failed"
    p = run(f"dd if=/dev/urandom of={dev.path} bs=4096 count=1 seek=768 "
            "oflag=direct conv=notrunc")
    assert p.returncode != 0 and "Input/output error" in p.stderr, p.stderr
    assert run(f"blkdiscard -o {MB} -l 4096 {dev.path}").returncode != 0
    assert n2l.check_pattern(dev.path, 0, MB, 15) == 0


# ----------------------------------------------------------------------------
# dm-log-writes: every state the media passed through, checked


def slot_block(slot, version):
    """What version @version of slot @slot holds: no two alike."""
    return hashlib.sha256(f"{slot}:{version}".encode()).digest() * (BLOCK // 32)


ZERO = bytes(BLOCK)


class SlotModel:
    """What each slot holds after each batch of writes, and whatever a later
    batch may already have put there (zeros for a discard)."""

    def __init__(self, slots):
        self.now = [ZERO] * slots
        self.after = [list(self.now)]             # after batch 0: nothing
        self.later = [[set() for _ in range(slots)]]

    def write(self, slot, data):
        self.now[slot] = data
        for later in self.later:
            later[slot].add(digest(data))

    def batch_done(self):
        self.after.append(list(self.now))
        self.later.append([set() for _ in self.now])

    def wrong(self, batch, image):
        """Slots of @image that hold neither what batch @batch left nor
        anything written after it: (slot, what it holds)."""
        bad = []
        for slot, want in enumerate(self.after[batch]):
            got = image[slot * BLOCK:(slot + 1) * BLOCK]
            if got != want and digest(got) not in self.later[batch][slot]:
                bad.append((slot, self.whose(got)))
        return bad

    def whose(self, data):
        if data == ZERO:
            return "zeros"
        for batch, state in enumerate(self.after):
            for slot, held in enumerate(state):
                if held == data:
                    return f"slot {slot}'s data after batch {batch}"
        return "data no slot was given"


def log_writes_workload(path, model, batches, mark):
    """Every slot written: Flash full with the first, the rest on disk.
    Then batches of rounds: a discard of slots on Flash, overwrites of
    slots on disk (each moves to Flash if a block there is free, and the
    blocks the discard freed are all there are), and the discarded slots
    written anew; each write direct, so that it lands before the next.
    Each batch ends with an fsync and a mark in the log."""
    rng = random.Random(25)
    slots = len(model.now)
    fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, 16 * BLOCK)     # aligned, as O_DIRECT wants

    def write(first, count, version):
        data = b"".join(slot_block(s, version) for s in range(first, first + count))
        buf[:len(data)] = data
        os.pwrite(fd, memoryview(buf)[:len(data)], first * BLOCK)
        for s in range(first, first + count):
            model.write(s, slot_block(s, version))

    def done(batch):
        os.fsync(fd)
        model.batch_done()
        mark(f"b{batch}")
    try:
        for first in range(0, slots, 16):
            write(first, 16, 1)
        done(1)
        for b in range(2, batches + 1):
            for i in range(8):
                gone = rng.randrange(FLASH_SLOTS - 4)
                fcntl.ioctl(fd, BLKDISCARD, struct.pack("QQ", gone * BLOCK, 4 * BLOCK))
                for s in range(gone, gone + 4):
                    model.write(s, ZERO)
                for _ in range(4):
                    write(rng.randrange(FLASH_SLOTS, slots), 1, (b, i))
                write(gone, 4, (b, i))
            done(b)
    finally:
        os.close(fd)


BLKDISCARD = 0x1277
META_SECTORS, FLASH_SECTORS, DISK_SECTORS = 2048, 8192, 2048
FLASH_SLOTS = FLASH_SECTORS // 8
SLOTS = (FLASH_SECTORS + DISK_SECTORS) // 8
LOGGED_SECTORS = META_SECTORS + FLASH_SECTORS + DISK_SECTORS


def media_over(name, dev):
    """The metadata device (its first MiB), Flash (4 MiB) and disk (1 MiB)
    as linear parts of @dev, so that one log orders the writes of all."""
    parts = {"m": (0, META_SECTORS), "f": (META_SECTORS, FLASH_SECTORS),
             "d": (META_SECTORS + FLASH_SECTORS, DISK_SECTORS)}
    for part, (start, sectors) in parts.items():
        sh(f"dmsetup create {name}-{part} --table '0 {sectors} linear {dev} {start}'")
    return [f"/dev/mapper/{name}-{part}" for part in parts]


def remove_dm(*names):
    for n in names:
        run(f"dmsetup remove --retry {n}")


def device_table(meta, flash, disk):
    return table_line(SLOTS * 8, flash, disk, features=[f"metadata:{meta}"])


def check_image(image, target, media, model, batch, where):
    """Loads a device on @media, the parts of @target, from @image written
    onto it (a load writes its metadata: the image itself stays as the log
    left it) and holds what it reads against @model after batch @batch.
    The parts stay from state to state: their creation and removal took
    three quarters of each state's time. The device itself is made and
    removed through the ioctls: dmsetup's two process starts and its wait
    for udev took most of what was left (a second a state of 1.1)."""
    with open(image, "rb") as src, open(target.path, "r+b") as dst:
        shutil.copyfileobj(src, dst)
        dst.flush()
        os.fsync(dst.fileno())
    n2l.dmesg_new()
    try:
        path = dmioctl.create("n2l-rc", device_table(*media))
    except dmioctl.DmError as e:
        raise AssertionError(f"{where}: the device does not load ({e}):\n" +
                             "\n".join(n2l.dmesg_new())) from None
    try:
        bad = model.wrong(batch, read_bytes(path))
        assert not bad, f"{where}: {len(bad)} slots hold what they must not: {bad[:5]}"
    finally:
        dmioctl.remove("n2l-rc")


# The metadata device's two superblocks: its first two 4 KiB blocks, the
# first of the logged device.
SUPERBLOCK_BYTES = 2 * BLOCK


def superblock_writes(entries, sectorsize):
    return [e for e in entries if e.is_write() and e.sector * sectorsize < SUPERBLOCK_BYTES]


def check_superblock_alone(lf, image, sectorsize, writes, check, where):
    """The state a crash leaves when of the writes since the last stable
    point only @writes, a superblock's, reached the media: a volatile
    cache keeps no order among writes between two flushes, so whatever a
    superblock names must have been flushed before it was written."""
    alone = image + ".sb"
    shutil.copyfile(image, alone)
    with open(alone, "r+b") as img:
        logwrites.replay(lf, img, sectorsize, writes)
    try:
        check(alone, f"{where}, its superblock alone")
    finally:
        os.unlink(alone)


def test_replaying_the_log_to_every_flush_finds_every_fsynced_write(lab, no_periodic_commit):
    """The media of a device with metadata under dm-log-writes (one log
    for all, so it orders their writes); batches of discards and writes
    ended by an fsync each, on a full Flash: a block a discard freed is
    all a slot moving there can get, and only once a commit stops naming
    it (commits come with flushes and with writes waiting for room: none
    periodic between a discard and the write that reuses its block). The
    log replayed to every flush, FUA write and mark is a state a power
    cut can leave: at each the device loads, every slot holds what the
    last fsync before it left or something written after it, never
    another slot's data, and the end holds exactly what was written."""
    raw = lab.nullb(8, cache_mb=4)      # a volatile cache: flushes reach the log
    log, target = lab.nullb(64), lab.nullb(8)
    sh(f"dmsetup create n2l-lw --table '0 {LOGGED_SECTORS} "
       f"log-writes {raw.path} {log.path}'")
    lab.cleanups.append(lambda: remove_dm("n2l-lw"))
    media = media_over("n2l-lwd", "/dev/mapper/n2l-lw")
    lab.cleanups.append(lambda: remove_dm("n2l-lwd-m", "n2l-lwd-f", "n2l-lwd-d"))
    dev = lab.device("n2l-lwd", device_table(*media))
    model = SlotModel(SLOTS)

    def mark(name):
        dmioctl.message("n2l-lw", ["mark", name])
    sh(f"dd if=/dev/null of={dev.path} conv=fsync")
    mark("b0")                          # formatted, and flushed
    log_writes_workload(dev.path, model, 3, mark)
    dev.remove()                        # the closing commit is logged too
    remove_dm("n2l-lwd-m", "n2l-lwd-f", "n2l-lwd-d", "n2l-lw")

    image = os.path.join(TMP, "replay.img")
    checked = media_over("n2l-rc", target.path)
    lab.cleanups.append(lambda: remove_dm("n2l-rc", "n2l-rc-m", "n2l-rc-f", "n2l-rc-d"))
    with open(image, "wb") as f:
        f.truncate(LOGGED_SECTORS * 512)
    with open(log.path, "rb") as lf, open(image, "r+b") as img:
        ss, entries = logwrites.read_entries(lf)
        marks = {e.index: int(e.mark[1:]) for e in entries if e.mark.startswith("b")}
        assert sorted(marks.values()) == list(range(4)), marks
        points = [p for p in logwrites.stable_points(entries) if p >= min(marks)]
        done, batch, alone = 0, 0, 0

        def check(path, where):
            check_image(path, target, checked, model, batch, where)
        for p in points:
            sbs = superblock_writes(entries[done:p + 1], ss)
            if done and sbs:
                check_superblock_alone(lf, image, ss, sbs, check,
                                       f"entry {p} of {len(entries)} (after batch {batch})")
                alone += 1
            logwrites.replay(lf, img, ss, entries[done:p + 1])
            done = p + 1
            batch = marks.get(p, batch)
            check(image, f"entry {p} of {len(entries)} (after batch {batch})")
        logwrites.replay(lf, img, ss, entries[done:])
    check_image(image, target, checked, model, 3, "the whole log")
    print(f"{len(points)} states of {len(entries)} log entries checked, "
          f"{alone} with a superblock alone")
    assert len(points) > 3 * 3, "a flush, a commit and a mark a batch at least"
    assert alone >= 3, "a commit a batch at least"
