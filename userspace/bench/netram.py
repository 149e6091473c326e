#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Guest side of make bench-netram: Network RAM against swap over NBD.

One network namespace behind one netem-shaped veth link holds both
servers: nswapd (serving a Network-RAM-only nswap2l device) and nbdkit's
memory plugin (serving /dev/nbd0 through the kernel's nbd client). Both
devices are preconditioned with one sequential pass, so that reads fetch
stored pages; then every case runs A, B, A, B, ... in the same boot. The
ratio is nswap2l's median over NBD's.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "pylib"))
import n2lbench  # noqa: E402
import n2llab  # noqa: E402
from nswap2l import table_line  # noqa: E402

OUT = os.environ.get("N2L_OUT", "/tmp")
SIZE_MB = 256
# (fio rw, block size, queue depth, what is compared, target ratio)
CASES = [
    ("randread", "4k", 1, "iops", 1.5),
    ("randread", "4k", 32, "iops", 1.5),
    ("randwrite", "4k", 1, "iops", 1.5),
    ("randwrite", "4k", 32, "iops", 1.5),
    ("read", "1M", 4, "mib_s", 0.9),
    ("write", "1M", 4, "mib_s", 0.9),
]


def case_name(rw, bs, qd):
    return f"{rw} {bs} qd{qd}"


def ping_rtt_us(addr):
    """The link's round trip as ping sees it, or None without ping: the
    figures of a long run must not be lost for want of a footnote."""
    try:
        out = subprocess.run(["ping", "-c", "20", "-i", "0.05", "-q", addr],
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        return None
    line = [ln for ln in out.splitlines() if "min/avg/max" in ln]
    return float(line[0].split("=")[1].split("/")[1]) * 1000 if line else None


def setup(delay_us, rate_mbit):
    n2llab.load_modules()
    link = n2llab.Link(1, delay_us=delay_us, rate_mbit=rate_mbit)
    srv = n2llab.nswapd(link, SIZE_MB + 64)
    nbd = n2llab.NbdExport(link, SIZE_MB)
    dev = n2llab.Device("bench-net", table_line(SIZE_MB * 2048, servers=[srv.name]))
    n2llab.wait_for(lambda: dev.servers_up(1), what="nswapd up")
    targets = {"nswap2l": dev.path, "nbd": nbd.path}
    for path in targets.values():
        n2lbench.fio(path, "write", "1M", 4, SIZE_MB, runtime=None)
    st = dev.status()
    assert st["netram"]["held"] == SIZE_MB * 256, st
    return link, targets


def summarise(runs):
    summary = []
    for rw, bs, qd, key, target in CASES:
        case = case_name(rw, bs, qd)
        nbd = n2lbench.median_of(runs, case, "nbd", key)
        n2l = n2lbench.median_of(runs, case, "nswap2l", key)
        summary.append({"case": case, "metric": key, "nbd": nbd, "nswap2l": n2l,
                        "ratio": n2l / nbd, "target_ratio": target,
                        "meets_target": n2l / nbd >= target})
    return summary


def fmt_us(us):
    return "not measured" if us is None else f"{us:.0f} us"


def report(result):
    env = result["environment"]
    link = env["link"]
    lines = ["# Network RAM (nswap2l + nswapd) against NBD (nbd + nbdkit memory)", "",
             f"{result['date']}, kernel {env['kernel']}, {env['mode']}.", "",
             f"Link: veth + netem, {link['delay_us_each_way']} us each way, "
             f"{link['rate_mbit'] or 'unlimited'} Mbit/s; ping RTT "
             f"{fmt_us(link['ping_rtt_us'])} (guest time). Both servers sit behind "
             f"the same link; {SIZE_MB} MiB region, preconditioned. "
             f"{env['runs']}.", "",
             "| case | metric | NBD | nswap2l | ratio | target |",
             "|---|---|---:|---:|---:|---|"]
    for s in result["summary"]:
        unit = "IOPS" if s["metric"] == "iops" else "MiB/s"
        verdict = "met" if s["meets_target"] else "MISSED"
        lines.append(f"| {s['case']} | {unit} | {s['nbd']:.0f} | {s['nswap2l']:.0f} | "
                     f"{s['ratio']:.2f} | >= {s['target_ratio']}: {verdict} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=3, help="guest seconds per run")
    ap.add_argument("--delay-us", type=int, default=50, help="netem delay, each way")
    ap.add_argument("--rate-mbit", type=int, default=1000, help="netem rate, each way")
    a = ap.parse_args()

    link, targets = setup(a.delay_us, a.rate_mbit)
    runs = []
    for rw, bs, qd, _, _ in CASES:
        for rep in range(a.reps):
            for target in ("nbd", "nswap2l"):
                iops, mibs = n2lbench.fio(targets[target], rw, bs, qd, SIZE_MB,
                                          runtime=a.runtime)
                runs.append({"case": case_name(rw, bs, qd), "target": target,
                             "rep": rep, "iops": iops, "mib_s": mibs})
                print(f"{case_name(rw, bs, qd):17} rep {rep} {target:8} "
                      f"{iops:9.0f} IOPS {mibs:8.1f} MiB/s", flush=True)
    profile = link.describe()
    profile["ping_rtt_us"] = ping_rtt_us(link.addr)
    result = {
        "benchmark": "netram",
        "date": n2lbench.now(),
        "environment": n2lbench.environment(
            link=profile,
            nbd="nbd-client -b 4096 (one connection) to nbdkit memory plugin "
                f"({n2llab.sh('nbdkit --version').strip()})",
            nswap2l=f"Network-RAM-only device, one nswapd donating {SIZE_MB + 64} MiB",
            runs=f"fio libaio direct, {a.runtime} s + 1 s ramp per run, {a.reps} "
                 "interleaved runs per target and case, median"),
        "summary": summarise(runs),
        "runs": runs,
    }
    n2lbench.write_results(OUT, "netram", result, report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
