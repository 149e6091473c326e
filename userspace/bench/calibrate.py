# SPDX-License-Identifier: GPL-2.0-only
"""What the emulated media really do in this guest, measured with fio at
the start of every run and recorded with its results: a 4 KiB random read
at queue depth 1 (latency) and 1 MiB sequential reads (throughput) on
each medium as the configurations use it."""
import configs
import n2lbench
import n2llab
import profiles
from nswap2l import table_line

REGION_MB = 16


def measure(path, runtime):
    """Precondition, then (4 KiB QD1 read latency in us, 1 MiB MiB/s)."""
    n2lbench.fio(path, "write", "1M", 4, REGION_MB, runtime=None)
    iops, _ = n2lbench.fio(path, "randread", "4k", 1, REGION_MB, runtime=runtime)
    _, mibs = n2lbench.fio(path, "read", "1M", 4, REGION_MB, runtime=runtime)
    return {"read_4k_qd1_us": round(1e6 / iops, 1) if iops else None,
            "read_1m_mib_s": round(mibs, 1)}


def needed(profile):
    """The media the profile's configurations use."""
    used = {m for name, _, media, _ in profiles.CONFIGS if name in profile.configs
            for m in media}
    if "nbd" in profile.configs:
        used.add("nbd")
    return used


def media(profile, runtime=2):
    """Measure every medium the profile uses; returns {medium: figures}."""
    m, used, out = profile.media(), needed(profile), {}
    link = n2llab.Link(1, m["net_delay_us"], m["net_rate_mbit"])
    try:
        if "flash" in used:
            flash = configs.flash(profile, REGION_MB, "cflash")
            out["flash"] = measure(flash.path, runtime)
            flash.remove()
        if "disk" in used:
            disk = configs.disk(profile, REGION_MB, "calib-disk")
            out["disk"] = measure(disk.path, runtime)
            disk.remove()
        if "netram" in used:
            srv = n2llab.nswapd(link, REGION_MB + 8)
            dev = n2llab.Device("calib-net", table_line(REGION_MB << 11,
                                                         servers=[srv.name]))
            n2llab.wait_for(lambda: dev.servers_up(1), what="server up")
            out["netram"] = measure(dev.path, runtime)
            dev.remove()
            srv.stop()
        if "nbd" in used:
            nbd = n2llab.NbdExport(link, REGION_MB)
            out["nbd"] = measure(nbd.path, runtime)
            nbd.remove()
    finally:
        link.remove()
    return out
