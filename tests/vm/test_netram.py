"""Network RAM: nswapd page servers in their own network namespaces, on
netem-shaped veth links, and the kernel client under every failure the
issue names: full servers, shrinking servers, killed, paused and
misbehaving servers, removal, and swap under heavy memory pressure."""
import signal
import threading
import time

import pytest

import n2l
from n2l import sh, run, table_line

MB = 1 << 20
DELAY_US = 100   # per direction; a LAN, scaled to what TCG can do


def nswapd(lab, mb, *extra, **kw):
    """An nswapd donating exactly mb MiB (min = max, nothing reserved)."""
    kw.setdefault("delay_us", DELAY_US)
    return lab.server("nswapd", ["--min-mb", str(mb), "--max-mb", str(mb),
                                 "--reserve-mb", "0", "--interval-ms", "200",
                                 *extra], **kw)


def servers_up(dev, n):
    st = dev.status()
    return sum(1 for s in st["servers"] if s["state"] == "up") >= n and st


def server(dev, name):
    return next(s for s in dev.status()["servers"] if s["name"] == name)


def netram_device(lab, name, sectors, servers, flash="-", disk="-", **kw):
    dev = lab.device(name, table_line(sectors, flash, disk,
                                      servers=[s.name for s in servers], **kw))
    n2l.wait_for(lambda: servers_up(dev, len(servers)), what="servers up")
    return dev


def fio_verify(path, rw, bs, size, iodepth=16):
    from test_io import fio_verify as fv
    fv(path, rw, bs, size, iodepth)


def test_netram_only_fio_verify_spreads_over_servers(lab):
    """fio verifies every block of a device on Network RAM alone, written
    by 4 KiB random writes, then by 1 MiB ones, and the pages are spread
    over both servers. 16 MiB: one server could take it all (48 MiB), so
    a placement that fills one first still leaves the other empty; more
    data only costs time (every request crosses the network: two passes
    of 48 MiB took 145 s of CI's guest)."""
    a, b = nswapd(lab, 48), nswapd(lab, 48)
    dev = netram_device(lab, "n2l-net", 64 << 11, [a, b])
    fio_verify(dev.path, "randwrite", "4k", "16M")
    st = dev.status()
    assert st["flash"]["held"] == st["disk"]["held"] == 0
    held = [s["held"] for s in st["servers"]]
    assert sum(held) == st["netram"]["held"] == st["mapped"]
    assert min(held) > 0, f"pages not spread by free capacity: {held}"
    fio_verify(dev.path, "write", "1M", "16M", iodepth=4)


def test_full_two_replica_device_takes_overwrites(lab):
    """Each server has room for one copy of the device and 2 MiB more.
    Once full, every overwrite needs a new copy on both servers before the
    old ones go: a server's room must be its free space, not the device's
    size less what it holds (which is 0 here and refused with ENOSPC).
    The device is 8 MiB: what is tested is the 2 MiB spare against the
    writes in flight, whatever the size (32 MiB, three passes, took
    172 s of CI's guest)."""
    a, b = nswapd(lab, 10), nswapd(lab, 10)
    dev = netram_device(lab, "n2l-rep", 8 << 11, [a, b],
                        features=["replicas:2"])
    fio_verify(dev.path, "write", "1M", "8M", iodepth=4)
    assert [s["held"] for s in dev.status()["servers"]] == [2048, 2048]
    fio_verify(dev.path, "randwrite", "4k", "8M")
    # 1 MiB writes, 4 at once: more than the 2 MiB spare until the old
    # copies go. They wait for that room, or land once and are repaired.
    fio_verify(dev.path, "write", "1M", "8M", iodepth=4)
    st = dev.status()
    assert st["mapped"] == 2048 and st["nospc"] == st["lost"] == 0, st
    n2l.wait_for(lambda: not dev.status()["underreplicated"], what="repairs")
    assert [s["held"] for s in dev.status()["servers"]] == [2048, 2048]


def test_device_declares_stable_writes(lab):
    """A write is sealed once (a CRC32C of its pages, or their ciphertext)
    and its pages may go on the wire again (another server in the place of
    one that failed): a page that changed meanwhile would be stored with a
    seal that does not match it. The device asks for stable writes, so
    that swap (SWP_STABLE_WRITES) and filesystems wait for a write to end
    before they change its pages; with block media and without (6.1 takes
    it from a target only through a device it names), and after a reload."""
    f = lab.flash(8)
    # No server needs to answer: nothing is written.
    for name, flash, servers in (("n2l-stable-net", "-", ["127.0.0.1:9"]),
                                 ("n2l-stable-flash", f.path, [])):
        table = table_line(8 << 11, flash, servers=servers)
        dev = lab.device(name, table)
        q = f"/sys/block/dm-{dev.minor}/queue/stable_writes"
        assert open(q).read().strip() == "1", f"{name}: {q} is not 1"
        dev.reload(table)
        assert open(q).read().strip() == "1", f"{name} reloaded: {q} is not 1"


def test_one_megabyte_write_is_one_request(lab):
    a = nswapd(lab, 32)
    dev = netram_device(lab, "n2l-req", 32 << 11, [a])
    dev.message("clear_stats")
    n2l.write_pattern(dev.path, 0, 8 * MB, 21)
    assert dev.status()["netram"]["writes"] == 8
    n2l.settle()
    dev.message("clear_stats")
    assert n2l.check_pattern(dev.path, 0, 8 * MB, 21) == 0
    assert dev.status()["netram"]["reads"] == 8


def test_netram_flash_disk_fio_verify(lab):
    """fio verifies every block of a device over all three media, which
    fill in order: Network RAM, then Flash, then disk. The order is the
    same at any size: a quarter of the sizes it had (72 MiB, 16 of them
    over the network, took 30 s of CI's guest)."""
    a = nswapd(lab, 4)
    f, d = lab.flash(4), lab.disk(16)
    dev = netram_device(lab, "n2l-3", 20 << 11, [a], f.path, d.path)
    fio_verify(dev.path, "randwrite", "16k", "18M")
    st = dev.status()
    assert st["netram"]["held"] == 1024, "Network RAM fills first"
    assert st["flash"]["held"] == 1024, "then Flash"
    assert st["disk"]["held"] == 4608 - 2048, "then disk"


def test_full_server_sends_slots_to_flash(lab):
    a = nswapd(lab, 8)
    f = lab.flash(64)
    dev = netram_device(lab, "n2l-full", 48 << 11, [a], f.path)
    n2l.write_pattern(dev.path, 0, 40 * MB, 22)
    st = dev.status()
    assert st["netram"]["held"] == 2048 and st["flash"]["held"] == 8192
    assert n2l.check_pattern(dev.path, 0, 40 * MB, 22) == 0


def test_server_refusing_puts_sends_them_elsewhere(lab):
    # It says it has room and then refuses: every refused PUT must land on
    # Flash through the slow path, whole and verified.
    liar = lab.server("evil", ["--capacity", "512", "--lie-free", "100000"],
                      delay_us=DELAY_US)
    f = lab.flash(64)
    dev = netram_device(lab, "n2l-liar", 32 << 11, [liar], f.path)
    n2l.write_pattern(dev.path, 0, 16 * MB, 23)
    st = dev.status()
    assert st["slow_writes"] > 0
    assert st["netram"]["held"] == 512 and st["flash"]["held"] == 4096 - 512
    assert n2l.check_pattern(dev.path, 0, 16 * MB, 23) == 0
    assert "full=" in dev.sysfs_read("servers")


def shrink(srv, conf, mb):
    with open(conf, "w") as f:
        f.write(f"min_mb = {mb}\nmax_mb = {mb}\n")
    srv.signal(signal.SIGHUP)


def test_shrinking_server_moves_pages_to_peer(lab):
    conf = "/tmp/n2l/shrink-peer.conf"
    with open(conf, "w") as f:
        f.write("min_mb = 32\nmax_mb = 32\n")
    b = nswapd(lab, 32)
    a = lab.server("nswapd", ["--config", conf, "--reserve-mb", "0",
                              "--interval-ms", "200", "--peer", b.name],
                   delay_us=DELAY_US)
    dev = netram_device(lab, "n2l-shrink", 32 << 11, [a])
    n2l.write_pattern(dev.path, 0, 24 * MB, 24)
    assert server(dev, a.name)["held"] == 6144
    # Pages move only to a server the device knows.
    dev.message("add_server", b.name)
    n2l.wait_for(lambda: servers_up(dev, 2), what="peer up")
    shrink(a, conf, 8)
    n2l.wait_for(lambda: dev.status()["moved_pages"] >= 6144 - 2048,
                 timeout=180, what="pages moved to the peer")
    st = dev.status()
    assert server(dev, a.name)["held"] <= 2048
    assert server(dev, b.name)["held"] >= 4096
    assert st["mapped"] == 6144
    assert n2l.check_pattern(dev.path, 0, 24 * MB, 24) == 0
    assert f"{b.name} up" in dev.sysfs_read("servers")
    # Each server holds exactly the pages the slot map points at.
    n2l.wait_for(lambda: all(n2l.server_held_pages(dev, x.name) ==
                             server(dev, x.name)["held"] for x in (a, b)),
                 what="servers holding what the map points at")


def test_shrinking_server_hands_pages_back(lab):
    conf = "/tmp/n2l/shrink-back.conf"
    with open(conf, "w") as f:
        f.write("min_mb = 32\nmax_mb = 32\n")
    a = lab.server("nswapd", ["--config", conf, "--reserve-mb", "0",
                              "--interval-ms", "200"], delay_us=DELAY_US)
    f = lab.flash(64)
    dev = netram_device(lab, "n2l-back", 32 << 11, [a], f.path)
    n2l.write_pattern(dev.path, 0, 24 * MB, 25)
    assert dev.status()["netram"]["held"] == 6144
    shrink(a, conf, 8)
    n2l.wait_for(lambda: dev.status()["netram"]["held"] <= 2048, timeout=180,
                 what="pages handed back")
    st = dev.status()
    assert st["returned_pages"] >= 4096 and st["flash"]["held"] >= 4096
    assert st["mapped"] == 6144
    assert n2l.check_pattern(dev.path, 0, 24 * MB, 25) == 0


def test_killed_server_is_away_then_known_lost_when_it_restarts(lab):
    """A killed server is away (its slots fail, none is lost), and lost
    once it comes back as a new process: exactly the slots it held. The
    block-by-block scans (a request per 4 KiB) are most of its time, so
    8 MiB, half of it on each server (a write goes to the one with the
    most free pages): 24 MiB spent 90 s of CI's guest in its scans."""
    a, b = nswapd(lab, 48), nswapd(lab, 48)
    dev = netram_device(lab, "n2l-kill", 32 << 11, [a, b])
    dev.message("set", "netram_dead_after_ms", "2000")
    size = 8 * MB
    slots = size // n2l.SLOT
    n2l.write_pattern(dev.path, 0, size, 26)
    held_a = server(dev, a.name)["held"]
    assert held_a > 0
    a.stop(signal.SIGKILL)
    n2l.wait_for(lambda: server(dev, a.name)["state"] == "away", timeout=120,
                 what="server away")
    # Away is not lost: its slots cannot be read now, nothing else is amiss.
    assert dev.status()["lost"] == 0
    good, wrong, eio = n2l.scan_pattern(dev.path, 0, size, 26)
    assert (good, wrong, eio) == (slots - held_a, 0, held_a)
    # Back as a new process: a new epoch, so its slots are known lost at once.
    a.restart()
    st = n2l.wait_for(lambda: (lambda s: s["lost"] and s)(dev.status()),
                      timeout=120, what="restart noticed")
    assert st["lost"] == held_a
    assert "restarted" in "\n".join(n2l.dmesg_new())
    good, wrong, eio = n2l.scan_pattern(dev.path, 0, size, 26)
    assert (good, wrong, eio) == (slots - held_a, 0, held_a)
    # The device stays up: rewrite everything, and nothing is lost any more.
    n2l.write_pattern(dev.path, 0, size, 27)
    assert n2l.check_pattern(dev.path, 0, size, 27) == 0
    n2l.wait_for(lambda: dev.status()["lost"] == 0, what="lost slots rewritten")


def test_paused_server_times_out_then_recovers(lab):
    a = nswapd(lab, 32)
    dev = netram_device(lab, "n2l-pause", 16 << 11, [a])
    dev.message("set", "netram_timeout_ms", "1000")
    dev.message("set", "netram_dead_after_ms", "120000")
    n2l.write_pattern(dev.path, 0, 8 * MB, 28)
    n2l.settle()
    a.signal(signal.SIGSTOP)
    result = {}
    reader = threading.Thread(
        target=lambda: result.update(bad=n2l.check_pattern(dev.path, 0, 8 * MB, 28)))
    reader.start()
    n2l.wait_for(lambda: "timeouts=0" not in dev.sysfs_read("servers"),
                 timeout=120, what="a request timeout")
    assert reader.is_alive(), "reads must wait for the paused server"
    time.sleep(2)
    a.signal(signal.SIGCONT)
    reader.join(timeout=300)
    assert not reader.is_alive() and result.get("bad") == 0
    assert servers_up(dev, 1)
    assert dev.status()["failed_reads"] == 0


@pytest.mark.one_kernel
@pytest.mark.parametrize("mode", ["garbage", "wrong-id", "wrong-len", "bad-magic",
                                  "wrong-data", "silent"])
def test_misbehaving_server_never_yields_wrong_data(lab, mode):
    evil = lab.server("evil", ["--mode", mode, "--after", "8"], delay_us=DELAY_US)
    f = lab.flash(32)
    dev = netram_device(lab, "n2l-evil", 16 << 11, [evil], f.path)
    dev.message("set", "netram_timeout_ms", "1000")
    # Reads of its slots wait through its reconnections, each answered
    # wrongly again, until it is away, which comes in the first gap of
    # the client's backoff longer than this: 2 s, after seven of them
    # (CI's guest; 4 s: after eight, 5 to 7 s later in every mode).
    dev.message("set", "netram_dead_after_ms", "2000")
    n2l.write_pattern(dev.path, 0, 12 * MB, 29)  # 8 PUTs go to the server
    n2l.settle()
    good, wrong, eio = n2l.scan_pattern(dev.path, 0, 12 * MB, 29)
    assert wrong == 0, f"{wrong} blocks of wrong data from a {mode} server"
    assert good + eio == 3072
    log = "\n".join(n2l.dmesg_new())
    assert "protocol error" in log or "timed out" in log, log
    # The device outlives the server: without it, all of it is writable
    # and readable again, and what was lost is rewritten.
    dev.message("remove_server", evil.name)
    n2l.write_pattern(dev.path, 0, 16 * MB, 30)
    assert n2l.check_pattern(dev.path, 0, 16 * MB, 30) == 0
    n2l.wait_for(lambda: not dev.status()["servers"], what="server gone")


def test_remove_server_moves_its_slots_first(lab):
    a, b = nswapd(lab, 32), nswapd(lab, 32)
    dev = netram_device(lab, "n2l-rm", 16 << 11, [a])
    n2l.write_pattern(dev.path, 0, 12 * MB, 31)
    dev.message("add_server", b.name)
    n2l.wait_for(lambda: servers_up(dev, 2), what="added server up")
    assert dev.message("add_server", b.name, check=False).returncode != 0
    dev.message("remove_server", a.name)
    n2l.wait_for(lambda: all(s["name"] != a.name for s in dev.status()["servers"]),
                 timeout=180, what="server removed")
    st = dev.status()
    assert server(dev, b.name)["held"] == 3072 and st["mapped"] == 3072
    assert n2l.check_pattern(dev.path, 0, 12 * MB, 31) == 0
    assert b.name in dev.table() and a.name not in dev.table()
    assert dev.message("remove_server", a.name, check=False).returncode != 0


def test_reload_without_a_server_drains_it(lab):
    a, b = nswapd(lab, 32), nswapd(lab, 32)
    dev = netram_device(lab, "n2l-rld", 16 << 11, [a, b])
    n2l.write_pattern(dev.path, 0, 12 * MB, 32)
    dev.reload(table_line(16 << 11, servers=[b.name]))
    n2l.wait_for(lambda: len(dev.status()["servers"]) == 1, timeout=180,
                 what="server drained away")
    assert n2l.check_pattern(dev.path, 0, 12 * MB, 32) == 0


def test_bad_server_arguments_are_refused(lab):
    f = lab.flash(8)
    for servers, error in [
        (["10.77.1.2"], "Invalid server address: use a.b.c.d:port or [v6]:port"),
        (["10.77.1.2:0"], "Invalid server address: use a.b.c.d:port or [v6]:port"),
        (["10.77.1.300:7070"], "Invalid server address: use a.b.c.d:port or [v6]:port"),
        (["[::1:7070"], "Invalid server address: use a.b.c.d:port or [v6]:port"),
        (["host.example:7070"], "Invalid server address: use a.b.c.d:port or [v6]:port"),
        (["10.77.1.2:7070", "10.77.1.2:7070"], "Duplicate server"),
        # one address, two spellings: one server
        (["10.77.1.2:7070", "010.77.001.2:07070"], "Duplicate server"),
    ]:
        n2l.dmesg_new()
        p = run(f"dmsetup create n2l-badsrv --table '{table_line(8192, f.path, servers=servers)}'")
        log = "\n".join(n2l.dmesg_new())
        run("dmsetup remove --retry n2l-badsrv")
        assert p.returncode != 0 and f"nswap2l: {error} (" in log, (servers, log)
    dev = lab.device("n2l-badmsg", table_line(8192, f.path))
    for words in (["add_server", "nonsense"], ["remove_server", "10.9.9.9:1"],
                  ["set", "netram_timeout_ms", "5"], ["set", "bogus", "1"],
                  ["set", "netram_dead_after_ms", "x"]):
        assert dev.message(*words, check=False).returncode != 0, words
    assert dev.sysfs_write("netram_timeout_ms", "99999999") != 0
    assert dev.sysfs_write("servers", "frobnicate 1.2.3.4:5") != 0
    assert dev.sysfs_write("netram_timeout_ms", "2500\n") == 0
    assert dev.sysfs_read("netram_timeout_ms") == "2500\n"


def test_swap_on_network_ram_under_pressure(lab):
    from test_io import swap_workload
    a, b = nswapd(lab, 96), nswapd(lab, 96)
    dev = netram_device(lab, "n2l-nswap", 160 << 11, [a, b])
    p, st = swap_workload(dev, limit_mb=48, vm_mb=128, seconds=40)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert st["netram"]["write_sectors"] * 512 >= 32 * MB
    assert st["netram"]["reads"] > 0
    sh(f"swapoff {dev.path}")
