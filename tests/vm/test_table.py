"""The table line, reloads, module life cycle, status, messages and sysfs."""
import errno
import os
import re
import subprocess

import pytest

import n2l
from n2l import sh, run, table_line

SECTORS = 8192  # 4 MiB: 1024 slots

# (arguments after "nswap2l", the ti->error it must produce). F and D are
# replaced by a flash and a disk device.
MALFORMED = [
    ("", "Missing flash device"),
    ("F", "Missing disk device"),
    ("/dev/no-such-dev D 8 0 0 netram-first 0 none 0", "Error opening flash device"),
    ("F /dev/no-such-dev 8 0 0 netram-first 0 none 0", "Error opening disk device"),
    ("F D", "Invalid slot size"),
    ("F D four 0 0 netram-first 0 none 0", "Invalid slot size"),
    ("F D -8 0 0 netram-first 0 none 0", "Invalid slot size"),
    ("F D 16 0 0 netram-first 0 none 0",
     "Unsupported slot size: only 8 sectors (4 KiB) is supported"),
    ("F D 8", "Invalid number of feature arguments"),
    ("F D 8 x 0 netram-first 0 none 0", "Invalid number of feature arguments"),
    ("F D 8 99999999999 0 netram-first 0 none 0", "Invalid number of feature arguments"),
    ("F D 8 6 no_discard_passdown replicas:2 psk:a encrypt:a:b metadata:M x 0 netram-first 0 "
     "none 0", "Too many feature arguments"),
    ("F D 8 1 metadata:/dev/no-such-dev 0 netram-first 0 none 0",
     "Cannot open the metadata device"),
    ("F D 8 2 no_discard_passdown no_discard_passdown 0 netram-first 0 none 0",
     "Duplicate feature"),
    ("F D 8 2 replicas:2 REPLICAS:3 0 netram-first 0 none 0", "Duplicate feature"),
    ("F D 8 1 replicas:0 0 netram-first 0 none 0", "Invalid replicas: give 1 to 3"),
    ("F D 8 1 replicas:4 0 netram-first 0 none 0", "Invalid replicas: give 1 to 3"),
    ("F D 8 1 replicas:two 0 netram-first 0 none 0", "Invalid replicas: give 1 to 3"),
    ("F D 8 1 replicas 0 netram-first 0 none 0", "Unrecognised feature requested"),
    ("F D 8 1 psk: 0 netram-first 0 none 0",
     "Invalid psk identity: 1 to 63 printable characters"),
    ("F D 8 1 psk:" + "x" * 64 + " 0 netram-first 0 none 0",
     "Invalid psk identity: 1 to 63 printable characters"),
    ("F D 8 1 psk:nobody-has-this-key 0 netram-first 0 none 0",
     "Key not found: add it as a logon key (keyctl add logon ...)"),
    ("F D 8 1 encrypt:nocolon 0 netram-first 0 none 0",
     "Invalid encrypt key description: a logon key, prefix:name"),
    ("F D 8 1 encrypt:n2l:absent 0 netram-first 0 none 0",
     "Key not found: add it as a logon key (keyctl add logon ...)"),
    ("F D 8 1", "Fewer feature arguments than announced"),
    ("F D 8 1 bogus 0 netram-first 0 none 0", "Unrecognised feature requested"),
    ("F D 8 0", "Invalid number of servers"),
    ("F D 8 0 many netram-first 0 none 0", "Invalid number of servers"),
    ("F D 8 0 33 netram-first 0 none 0", "Too many servers"),
    ("F D 8 0 2 10.0.0.1:7070", "Fewer servers than announced"),
    ("F D 8 0 1 10.0.0.1 netram-first 0 none 0",
     "Invalid server address: use a.b.c.d:port or [v6]:port"),
    ("F D 8 0 0", "Missing placement policy"),
    ("F D 8 0 0 bogus 0 none 0", "Unknown placement policy"),
    ("F D 8 0 0 netram-first", "Invalid number of placement policy arguments"),
    ("F D 8 0 0 netram-first 100 none 0", "Too many placement policy arguments"),
    ("F D 8 0 0 netram-first 4 a b", "Fewer placement policy arguments than announced"),
    ("F D 8 0 0 netram-first 1 a none 0",
     "Placement policy arguments must be key/value pairs"),
    ("F D 8 0 0 netram-first 2 a b none 0", "Invalid placement policy argument"),
    ("F D 8 0 0 netram-first 0", "Missing prefetch policy"),
    ("F D 8 0 0 netram-first 0 bogus 0", "Unknown prefetch policy"),
    ("F D 8 0 0 netram-first 0 none", "Invalid number of prefetch policy arguments"),
    ("F D 8 0 0 netram-first 0 none 2 a b", "Unknown prefetch policy argument"),
    ("F D 8 0 0 netram-first 0 none 0 extra", "Too many arguments"),
    ("- - 8 0 0 netram-first 0 none 0",
     "No medium: give a flash device, a disk device or servers"),
    ("F F 8 0 0 netram-first 0 none 0", "Flash and disk must be different devices"),
]


def refused(table, error):
    """dmsetup create must fail, with exactly @error from the target."""
    n2l.dmesg_new()
    p = run(f"dmsetup create n2l-bad --table '{table}'")
    log = "\n".join(n2l.dmesg_new())
    if p.returncode == 0:   # dmsetup removes what it made when the load fails
        run("dmsetup remove --retry n2l-bad")
    assert p.returncode != 0, f"accepted: {table}"
    assert f"nswap2l: {error} (" in log, f"{table!r}: wanted {error!r}, log:\n{log}"


@pytest.mark.one_kernel
def test_malformed_lines_are_refused_each_with_its_own_error(lab):
    f, d = lab.flash(8), lab.disk(8)
    for args, error in MALFORMED:
        words = [f.path if w == "F" else d.path if w == "D" else w for w in args.split()]
        refused(f"0 {SECTORS} nswap2l " + " ".join(words), error)
    assert len(MALFORMED) >= 25
    assert "n2l-bad" not in sh("dmsetup ls")


def test_geometry_errors(lab):
    f, d = lab.flash(8), lab.disk(8)
    refused(table_line(SECTORS - 4, f.path, d.path),
            "Target start and length must be multiples of 8 sectors")
    refused(table_line((1 << 32) * 8 + 8, f.path, d.path),
            "Device too large: at most 2^32 slots")
    small = lab.nullb(1, blocksize=512)
    tiny = lab.device("n2l-tiny", f"0 4 linear {small.path} 0")
    refused(table_line(SECTORS, tiny.path, d.path), "Flash device is smaller than one slot")
    refused(table_line(SECTORS, f.path, tiny.path), "Disk device is smaller than one slot")


def test_medium_cannot_serve_two_devices(lab):
    f, d, other = lab.flash(8), lab.disk(8), lab.disk(8)
    lab.device("n2l-a", table_line(SECTORS, f.path, d.path))
    refused(table_line(SECTORS, f.path, other.path),
            "A medium is already used by another nswap2l device")


def test_one_target_per_device(lab):
    f, d = lab.flash(8), lab.disk(8)
    two = (f"0 {SECTORS} nswap2l {f.path} - 8 0 0 netram-first 0 none 0\n"
           f"{SECTORS} {SECTORS} nswap2l - {d.path} 8 0 0 netram-first 0 none 0")
    n2l.dmesg_new()
    p = run(f"printf '{two}\\n' | dmsetup create n2l-two")
    log = "\n".join(n2l.dmesg_new())
    run("dmsetup remove --retry n2l-two")
    assert p.returncode != 0
    assert "nswap2l: Only one nswap2l target per device (" in log, log


def test_table_status_recreates_the_device(lab):
    f, d = lab.flash(8), lab.disk(8)
    dev = lab.device("n2l-rt", table_line(SECTORS, f.path, d.path,
                                          features=["no_discard_passdown"]))
    table = dev.table()
    assert " no_discard_passdown " in table and table.endswith("none 0")
    dev.remove()
    again = lab.device("n2l-rt", table)
    assert again.table() == table


def ima_table_loads():
    """Decoded dm_table_load records of the IMA log (the VM boots with
    ima_policy=critical_data, which measures device-mapper tables)."""
    if not os.path.ismount("/sys/kernel/security"):
        sh("mount -t securityfs none /sys/kernel/security")
    log = open("/sys/kernel/security/ima/ascii_runtime_measurements").read()
    return [bytes.fromhex(line.split()[-1]).decode(errors="replace")
            for line in log.splitlines() if " dm_table_load " in line]


def test_ima_status_names_target_media_and_policies(lab):
    f, d = lab.flash(8), lab.disk(8)
    dev = lab.device("n2l-ima", table_line(SECTORS, f.path, d.path))
    fmaj, fmin = os.major(os.stat(f.path).st_rdev), os.minor(os.stat(f.path).st_rdev)
    dmaj, dmin = os.major(os.stat(d.path).st_rdev), os.minor(os.stat(d.path).st_rdev)
    # metadata:<dev> as N2L_TEST_METADATA=1 adds it, or none
    meta = next((w.split(":", 1)[1] for w in dev.table().split()
                 if w.startswith("metadata:")), "-")
    want = (f"target_name=nswap2l,target_version=2.1.0,flash={fmaj}:{fmin},"
            f"disk={dmaj}:{dmin},slot_sectors=8,discard_passdown=y,servers=0,"
            f"replicas=1,authenticated=n,encrypted=n,metadata={meta},"
            f"placement=netram-first,prefetch=none;")
    assert any(want in rec for rec in ima_table_loads()), want


def test_reload_keeps_data_and_counters(lab):
    f, d = lab.flash(4), lab.disk(8)
    table = table_line(16384, f.path, d.path)
    dev = lab.device("n2l-reload", table)
    n2l.write_pattern(dev.path, 0, 6 << 20, 11)
    before = dev.status()
    assert before["flash"]["held"] == 1024 and before["disk"]["held"] == 512
    for _ in range(3):
        dev.reload(table)
    after = dev.status()
    assert after["flash"]["held"] == 1024 and after["disk"]["held"] == 512
    assert after["flash"]["writes"] == before["flash"]["writes"]
    assert n2l.check_pattern(dev.path, 0, 6 << 20, 11) == 0


def test_reload_during_io_loses_nothing(lab):
    f, d = lab.flash(16), lab.disk(16)
    table = table_line(49152, f.path, d.path)
    dev = lab.device("n2l-reload-io", table)
    fio = subprocess.Popen(
        f"fio --name=reload --filename={dev.path} --rw=randwrite --bs=4k "
        f"--size=20M --direct=1 --ioengine=libaio --iodepth=8 --verify=crc32c "
        f"--verify_fatal=1 --output=/tmp/n2l/fio-reload.txt", shell=True)
    for _ in range(5):
        dev.reload(table)
    assert fio.wait(timeout=600) == 0, open("/tmp/n2l/fio-reload.txt").read()


def test_reload_must_keep_media_and_length(lab):
    f, d, other = lab.flash(8), lab.disk(8), lab.disk(8)
    dev = lab.device("n2l-rl", table_line(SECTORS, f.path, d.path))
    before = dev.table()
    for table, error in [
        (table_line(SECTORS, other.path, d.path), "A reload must keep the flash device"),
        (table_line(SECTORS, f.path, other.path), "A reload must keep the disk device"),
        (table_line(SECTORS * 2, f.path, d.path), "A reload must keep the device length"),
    ]:
        n2l.dmesg_new()
        p = run(f"dmsetup reload {dev.name} --table '{table}'")
        log = "\n".join(n2l.dmesg_new())
        assert p.returncode != 0 and f"nswap2l: {error} (" in log, log
    assert dev.table() == before


def test_module_unload_and_reload(lab):
    f, d = lab.flash(8), lab.disk(8)
    dev = lab.device("n2l-mod", table_line(SECTORS, f.path, d.path))
    n2l.write_pattern(dev.path, 0, 1 << 20, 3)
    assert run("rmmod nswap2l").returncode != 0, "unloaded while in use"
    dev.remove()
    sh("rmmod nswap2l")
    assert "nswap2l" not in sh("dmsetup targets")
    n2l.insmod_tree_module()
    dev = lab.device("n2l-mod", table_line(SECTORS, f.path, d.path))
    n2l.write_pattern(dev.path, 0, 1 << 20, 4)
    assert n2l.check_pattern(dev.path, 0, 1 << 20, 4) == 0


def test_status_counts_what_was_done(lab):
    f, d = lab.flash(16), lab.disk(16)
    dev = lab.device("n2l-st", table_line(24 << 11, f.path, d.path))
    st = dev.status()
    assert st["slot_sectors"] == 8 and st["slots"] == 6144 and st["mapped"] == 0
    assert st["flash"]["capacity"] == 4096 and st["disk"]["capacity"] == 4096
    assert st["netram"]["capacity"] == 0
    dev.message("clear_stats")
    n2l.write_pattern(dev.path, 0, 20 << 20, 5)
    st = dev.status()
    assert st["mapped"] == 5120
    assert st["flash"]["held"] == 4096 and st["disk"]["held"] == 1024
    assert st["flash"]["write_sectors"] == 16 << 11
    assert st["disk"]["write_sectors"] == 4 << 11
    # sysfs shows the same numbers
    assert int(dev.sysfs_read("flash_held")) == 4096
    assert int(dev.sysfs_read("disk_write_bytes")) == 4 << 20
    assert int(dev.sysfs_read("slots")) == 6144
    n2l.settle()
    dev.message("clear_stats")
    assert n2l.check_pattern(dev.path, 0, 20 << 20, 5) == 0
    st = dev.status()
    assert st["flash"]["read_sectors"] == 16 << 11
    assert st["disk"]["read_sectors"] == 4 << 11
    assert n2l.is_zero(dev.path, 20 << 20, 4 << 20)
    assert dev.status()["zero_reads"] >= 1024
    assert st["placement"] == "netram-first" and st["placement_args"] == []
    assert int(dev.sysfs_read("disk_read_bytes")) == 4 << 20


def test_messages_and_sysfs_refuse_bad_input(lab):
    f, d = lab.flash(8), lab.disk(8)
    dev = lab.device("n2l-msg", table_line(SECTORS, f.path, d.path))
    n2l.write_pattern(dev.path, 0, 1 << 20, 9)
    for words in (["frobnicate"], ["placement", "bogus"],
                  ["placement", "netram-first", "a"],
                  ["placement", "netram-first", "a", "b"],
                  ["clear_stats", "now"], ["placement"]):
        n2l.dmesg_new()
        assert dev.message(*words, check=False).returncode != 0, words
        assert "nswap2l" in "\n".join(n2l.dmesg_new())
    dev.message("placement", "netram-first")
    dev.message("placement", "default")
    assert dev.sysfs_read("placement_policy") == "[netram-first]\n"
    assert dev.sysfs_write("placement_policy", "bogus") == errno.EINVAL
    assert dev.sysfs_write("placement_policy", "\n") == errno.EINVAL
    assert dev.sysfs_write("placement_policy", "netram-first odd") == errno.EINVAL
    assert dev.sysfs_write("placement_policy", "netram-first\n") == 0
    assert dev.sysfs_write("clear_stats", "0") == errno.EINVAL
    assert dev.sysfs_write("clear_stats", "maybe") == errno.EINVAL
    assert dev.sysfs_write("flash_held", "7") != 0
    assert int(dev.sysfs_read("flash_writes")) > 0
    assert dev.sysfs_write("clear_stats", "1") == 0
    assert int(dev.sysfs_read("flash_writes")) == 0
    assert int(dev.sysfs_read("flash_held")) == 256, "clear_stats must not touch slots"
    assert n2l.check_pattern(dev.path, 0, 1 << 20, 9) == 0


def test_sysfs_directory_lives_with_the_device(lab):
    f, d = lab.flash(8), lab.disk(8)
    table = table_line(SECTORS, f.path, d.path)
    dev = lab.device("n2l-sys", table)
    sysfs = dev.sysfs
    assert os.path.isdir(sysfs)
    dev.reload(table)
    assert os.path.isdir(sysfs)
    dev.remove()
    assert not os.path.exists(sysfs)


# ----------------------------------------------------------------------------
# n2lctl metrics


def metric_samples(text):
    """{(sample name, (label, value)...): value} and {family: type} of a
    Prometheus exposition, parsed by prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families
    samples, types = {}, {}
    for fam in text_string_to_metric_families(text):
        types[fam.name] = fam.type
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, types


@pytest.mark.one_kernel
def test_metrics_are_every_counter_in_prometheus_format(lab):
    import n2lmetrics
    from test_netram import netram_device, nswapd
    a = nswapd(lab, 8)
    f = lab.flash(32)
    dev = netram_device(lab, "n2l-metrics", 32 << 11, [a], f.path)
    n2l.write_pattern(dev.path, 0, 24 << 20, 41)     # 8 MiB on the server, the rest on Flash
    assert n2l.check_pattern(dev.path, 0, 24 << 20, 41) == 0
    ctl = os.path.join(n2l.REPO, "userspace", "n2lctl")
    samples, types = metric_samples(sh(f"{ctl} metrics"))
    st = dev.status()
    srv = next(s for s in st["servers"] if s["name"] == a.name)

    def value(name, **labels):
        return samples[(f"nswap2l_{name}", tuple(sorted({"device": dev.name, **labels}.items())))]

    for name, kind, labels, _ in n2lmetrics.HISTOGRAMS:
        assert types.get(f"nswap2l_{name}") == kind
        for m in ("netram", "flash", "disk"):
            for op in ("read", "write"):
                value(f"{name}_count", medium=m, op=op)
    for name, kind, labels, _, _ in n2lmetrics.METRICS:
        family = f"nswap2l_{name}".removesuffix("_total") if kind == "counter" else f"nswap2l_{name}"
        assert types.get(family) == kind, (name, types.get(family))
        if labels == n2lmetrics.MEDIUM:
            for m in ("netram", "flash", "disk"):
                value(name, medium=m)
        else:
            value(name, **({"server": a.name} if labels == n2lmetrics.SERVER else {}))
    assert value("mapped_slots") == st["mapped"] == 6144
    for m in ("netram", "flash", "disk"):
        assert value("held_slots", medium=m) == st[m]["held"]
        assert value("written_bytes_total", medium=m) == st[m]["write_sectors"] * 512
    assert value("held_slots", medium="netram") == 2048
    assert value("server_held_slots", server=a.name) == srv["held"] == 2048
    assert value("server_up", server=a.name) == 1
    assert value("server_puts_total", server=a.name) >= 8
    # Named, into a file replaced whole.
    out = "/tmp/n2l/nswap2l.prom"
    sh(f"{ctl} metrics {dev.name} --output {out}")
    assert metric_samples(open(out).read())[0].keys() == samples.keys()
    bad = run(f"{ctl} metrics no-such-device")
    assert bad.returncode != 0 and "no nswap2l device no-such-device" in bad.stderr
    # The README documents every metric, and no other.
    readme = open(os.path.join(n2l.REPO, "README.md")).read()
    documented = {ln.split("`")[1] for ln in readme.splitlines() if ln.startswith("| `nswap2l_")}
    assert documented == {f"nswap2l_{m[0]}" for m in n2lmetrics.METRICS + n2lmetrics.HISTOGRAMS}


@pytest.mark.one_kernel
def test_latency_histograms_count_every_request_where_it_was_served(lab):
    """Per medium and operation, a histogram of the time from map to
    completion: every request a medium served counted once (the sums are
    the status line's request counts), none faster than the medium can
    be (Flash delays each completion 4 ms; a Network RAM request crosses a
    link of 100 us each way), shown by n2lctl status and metrics, zeroed
    by clear_stats."""
    import nswap2l
    from test_netram import DELAY_US, netram_device, nswapd
    a = nswapd(lab, 8)
    f = lab.flash(32, latency_ns=4_000_000)
    dev = netram_device(lab, "n2l-lat", 32 << 11, [a], f.path)
    n2l.write_pattern(dev.path, 0, 24 << 20, 43)     # 8 MiB on the server, the rest on Flash
    assert n2l.check_pattern(dev.path, 0, 24 << 20, 43) == 0
    lat = nswap2l.read_latency(dev.sysfs)
    st = dev.status()
    for m in ("netram", "flash", "disk"):
        assert sum(lat[(m, "read")]) == st[m]["reads"], (m, lat[(m, "read")], st[m])
        assert sum(lat[(m, "write")]) == st[m]["writes"], (m, lat[(m, "write")], st[m])
    assert st["netram"]["reads"] and st["netram"]["writes"]
    assert st["flash"]["reads"] and st["flash"]["writes"]
    # Bucket i holds [2^(i-1), 2^i) us: nothing below the medium's floor.
    floor = {"flash": 4000, "netram": 2 * DELAY_US}
    for (m, op), counts in lat.items():
        if m in floor:
            below = sum(counts[:floor[m].bit_length()])
            assert below == 0, (m, op, floor[m], counts)
    ctl = os.path.join(n2l.REPO, "userspace", "n2lctl")
    out = sh(f"{ctl} status {dev.name}")
    rows = {ln.split()[0] + " " + ln.split()[1]: ln.split()[2]
            for ln in out.splitlines() if re.match(r"\s+(netram|flash|disk) (read|write) ", ln)}
    assert rows == {f"{m} {op}": str(sum(c)) for (m, op), c in lat.items() if sum(c)}, out
    samples, types = metric_samples(sh(f"{ctl} metrics {dev.name}"))
    assert types["nswap2l_request_latency_seconds"] == "histogram"
    inf = samples[("nswap2l_request_latency_seconds_bucket",
                   (("device", dev.name), ("le", "+Inf"), ("medium", "flash"), ("op", "read")))]
    assert inf == sum(lat[("flash", "read")])
    dev.sysfs_write("clear_stats", "1")
    assert not any(sum(c) for c in nswap2l.read_latency(dev.sysfs).values())


@pytest.mark.one_kernel
def test_top_shows_slots_per_medium_and_rates(lab):
    from test_netram import netram_device, nswapd
    a = nswapd(lab, 8)
    f = lab.flash(32)
    dev = netram_device(lab, "n2l-top", 32 << 11, [a], f.path)
    ctl = os.path.join(n2l.REPO, "userspace", "n2lctl")
    n2l.write_pattern(dev.path, 0, 24 << 20, 42)
    top = n2l.Spawned(f"{ctl} top {dev.name} --interval 1")

    def frames():
        return top.output().split("n2lctl top ")[1:]

    # Python starts in seconds here, but in a minute and more with every
    # guest of the suite on two host cores.
    n2l.wait_for(frames, timeout=300, what="the first frame")
    n2l.write_pattern(dev.path, 8 << 20, 8 << 20, 43)   # rewrites on Flash
    # Two frames more, the first of which covers the rewrite's end: however
    # slow the guest, a rate is shown for an interval the writes fell in.
    after = len(frames()) + 2
    n2l.wait_for(lambda: len(frames()) >= after, timeout=120, what="two more frames")
    top.proc.terminate()
    assert top.finished(30), "n2lctl top did not end on SIGTERM"
    seen = frames()
    rows = {ln.split()[0]: ln.split() for ln in seen[-1].splitlines() if ln.startswith("  ")}
    assert rows["netram"][1] == "2048" and rows["flash"][1] == "4096", seen[-1]
    assert f"server {a.name}" in seen[-1] and " up " in seen[-1]
    # A later frame saw the rewrite as a rate of writes to Flash.
    assert any(float(ln.split()[4]) > 0 for fr in seen[1:] for ln in fr.splitlines()
               if ln.startswith("  flash ")), seen
