"""Full media, and what the device says about it (issue 24, "Full media
and what the device reports"). A device larger than what its media can
hold fills up once every slot it ever used stays mapped, as it does under
swap without discards: the user is warned when the table is loaded,
status says "full" plainly, n2lctl swaps on with discards, and the
figures of Network RAM that sysfs shows are current."""
import os
import re
import time

import n2l
from n2l import run, sh, table_line
from test_netram import netram_device, nswapd

MB = 1 << 20
CTL = os.path.join(n2l.REPO, "userspace", "n2lctl")
TOO_BIG = "more than its media hold"


def space(dev):
    """The status line's last field, as dmsetup prints it."""
    return sh(f"dmsetup status {dev.name}").split()[-1]


def warned(lines, dev):
    """The warnings about dev (its messages name it major:minor)."""
    return [x for x in lines if TOO_BIG in x and re.search(rf"\b\d+:{dev.minor}: ", x)]


def test_device_larger_than_its_media_is_warned_and_says_full(lab):
    """8 MiB over 4 MiB of Flash: a warning at load naming both; status,
    sysfs and n2lctl say "full" once Flash is, and a new slot's write
    fails with ENOSPC; a discard makes room again. A device its media
    can hold is not warned about."""
    n2l.dmesg_new()
    f, g = lab.flash(4), lab.flash(4)
    dev = lab.device("n2l-full", table_line(8 << 11, f.path))
    fits = lab.device("n2l-fits", table_line(4 << 11, g.path))
    time.sleep(1)
    lines = n2l.dmesg_new()
    got = {"warned": warned(lines, dev), "fits warned": warned(lines, fits),
           "before": space(dev)}
    n2l.write_pattern(dev.path, 0, 4 * MB, 61)
    got["full"] = space(dev)
    got["sysfs"] = dev.sysfs_read("space").strip() if os.path.exists(
        f"{dev.sysfs}/space") else None
    got["n2lctl"] = "FULL" in sh(f"{CTL} status {dev.name}")
    dd = run(f"dd if=/dev/zero of={dev.path} bs=4096 count=1 seek=1500 oflag=direct "
             f"status=none")
    got["enospc"] = dd.returncode != 0 and "No space left" in dd.stderr
    sh(f"blkdiscard -f -o 0 -l {MB} {dev.path}")
    # with a metadata device (N2L_TEST_METADATA=1) the freed blocks come
    # back once a commit stops naming them: a flush commits
    n2l.flush(dev.path)
    got["after discard"] = space(dev)
    assert got == {"warned": got["warned"] or ["(none)"], "fits warned": [],
                   "before": "ok", "full": "full", "sysfs": "full", "n2lctl": True,
                   "enospc": True, "after discard": "ok"} and got["warned"], got
    assert "2048 slots" in got["warned"][0] and "1024 on Flash and disk" in got["warned"][0]


def test_network_ram_figures_are_current(lab):
    """sysfs netram_capacity is what the status line shows (it read 0);
    a server's server_held= follows what it holds while writes keep its
    connection busy (it kept the figure of the connect: 0); a device
    larger than the server's capacity is warned about once the server
    has answered."""
    a = nswapd(lab, 16)
    n2l.dmesg_new()
    dev = netram_device(lab, "n2l-cur", 32 << 11, [a])
    time.sleep(1)
    got = {"warned": [x for x in n2l.dmesg_new() if TOO_BIG in x]}
    got["capacity"] = (dev.sysfs_read("netram_capacity").strip(),
                       dev.status()["netram"]["capacity"])
    fio = n2l.Spawned(f"fio --name=busy --filename={dev.path} --rw=randwrite --bs=4k "
                      f"--size=8M --iodepth=8 --direct=1 --ioengine=libaio --time_based "
                      f"--runtime=20")
    before = n2l.wait_for(lambda: dev.status()["netram"]["held"] >= 64 and
                          dev.status()["netram"]["held"], timeout=60, what="writes flowing")
    time.sleep(3)
    # Asked every second: at least what the map gave the server 3 s ago.
    got["server_held 3 s after the map had"] = (
        n2l.server_held_pages(dev, a), before)
    assert fio.finished(60) and fio.rc == 0, fio.output()
    reported, had = got["server_held 3 s after the map had"]
    assert (got["capacity"] == ("4096", 4096) and reported >= had
            and len(got["warned"]) == 1
            and "8192 slots" in got["warned"][0]
            and "4096 of Network RAM at 1 copies" in got["warned"][0]), got


def test_n2lctl_swaps_on_with_discards(lab):
    """n2lctl create --swap makes swap on the device and swaps on with
    discards (the whole device is discarded at swapon, freed swap slots
    later): no slot stays mapped after swap let it go."""
    f = lab.flash(16)
    p = run(f"{CTL} create n2l-sw --flash {f.path} --swap --priority 3")
    dev = n2l.Device("n2l-sw")
    lab.devices.append(dev)
    assert p.returncode == 0, p.stderr
    swaps = open("/proc/swaps").read()
    stat = open(f"/sys/block/{os.path.basename(os.path.realpath(dev.path))}/stat").read()
    discards = int(stat.split()[11])
    sh(f"swapoff {dev.path}")
    assert os.path.realpath(dev.path) in swaps and discards > 0, (swaps, stat)
