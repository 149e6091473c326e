#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Guest side of make bench-overhead.

The same null_blk device (no memory backing: only the I/O path is
measured) serves a dm-linear device and a Flash-only nswap2l device. Both
are preconditioned with one sequential write, so that nswap2l reads hit
mapped slots and writes overwrite in place, as on a swap device in use.
Every case runs A, B, A, B, ... in the same boot; the ratio is nswap2l's
median IOPS over dm-linear's.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "pylib"))
import n2lbench  # noqa: E402
import n2llab  # noqa: E402
import hotspots  # noqa: E402
from n2llab import sh  # noqa: E402

OUT = os.environ.get("N2L_OUT", "/tmp")
SIZE_MB = 512
CASES = [("randread", 1), ("randread", 32), ("randwrite", 1), ("randwrite", 32)]
DEVICES = {"dm-linear": "/dev/mapper/ovh-linear", "nswap2l": "/dev/mapper/ovh-n2l"}


def setup(nullb_mb):
    n2llab.load_modules()
    d = "/sys/kernel/config/nullb/ovh"
    os.mkdir(d)
    for k, v in (("size", nullb_mb), ("blocksize", 4096), ("memory_backed", 0),
                 ("irqmode", 0), ("hw_queue_depth", 64), ("power", 1)):
        with open(f"{d}/{k}", "w") as f:
            f.write(f"{v}\n")
    sh("udevadm settle")
    sectors = SIZE_MB * 2048
    sh(f"dmsetup create ovh-linear --table '0 {sectors} linear /dev/ovh 0'")
    sh(f"dmsetup create ovh-n2l --table '0 {sectors} nswap2l /dev/ovh - 8 0 0 "
       f"netram-first 0 none 0'")
    for path in DEVICES.values():
        n2lbench.fio(path, "write", "1M", 32, SIZE_MB, runtime=None)


def profiles(runtime):
    """Each case at QD1 under perf, on both devices: where nswap2l's
    extra instructions per request go (hotspots.py)."""
    sh("echo 0 > /proc/sys/kernel/kptr_restrict")     # module symbols
    out = []
    for rw in sorted({rw for rw, _ in CASES}):
        recs = [hotspots.record(path, rw, 1, SIZE_MB, runtime, f"/tmp/perf-{target}.data")
                for target, path in DEVICES.items()]
        rows, total = hotspots.compare(*recs)
        out.append({"case": f"{rw} 4k qd1", "instructions_per_request": total,
                    "symbols": [{"symbol": sym, "dm-linear": round(lin), "nswap2l": round(n2l)}
                                for sym, lin, n2l in rows]})
    return out


def profile_lines(profs):
    lines = ["", "## Where nswap2l's extra instructions go", "",
             "perf cpu-clock samples of the whole guest, one run of each device at QD1, "
             f"{hotspots.FREQ} a guest second: in this instruction-counted guest a sample "
             f"is {1e9 / hotspots.FREQ:.0f} instructions, so a symbol's samples over the "
             "run's requests are its instructions per request. What runs with interrupts "
             "off (under a spin_lock_irqsave()) is counted where they come back on: "
             "`_raw_spin_unlock_irqrestore`."]
    return lines + hotspots.comparison_lines(profs, "dm-linear", "nswap2l")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=3, help="guest seconds per run")
    ap.add_argument("--profile", action="store_true",
                    help="and where the extra instructions go (perf, in overhead.md)")
    a = ap.parse_args()

    setup(SIZE_MB + 64)
    runs = []
    for rw, qd in CASES:
        for rep in range(a.reps):
            for target, path in DEVICES.items():
                iops, _ = n2lbench.fio(path, rw, "4k", qd, SIZE_MB, runtime=a.runtime)
                runs.append({"case": f"{rw} 4k qd{qd}", "target": target,
                             "rep": rep, "iops": iops})
                print(f"{rw:9} qd{qd:<2} rep {rep} {target:9} {iops:10.0f} IOPS",
                      flush=True)

    summary = []
    for rw, qd in CASES:
        case = f"{rw} 4k qd{qd}"
        lin = n2lbench.median_of(runs, case, "dm-linear", "iops")
        n2l = n2lbench.median_of(runs, case, "nswap2l", "iops")
        summary.append({"case": case, "dm_linear_iops": lin, "nswap2l_iops": n2l,
                        "ratio": n2l / lin, "target_ratio": 0.90,
                        "meets_target": n2l / lin >= 0.90})
    result = {
        "benchmark": "overhead",
        "date": n2lbench.now(),
        "environment": n2lbench.environment(
            device=f"null_blk {SIZE_MB + 64} MiB, no memory backing, irqmode=0, "
                   f"4 KiB blocks; {SIZE_MB} MiB region, preconditioned",
            runs=f"fio libaio, direct, {a.runtime} s + 1 s ramp per run, "
                 f"{a.reps} interleaved runs per target and case, median"),
        "summary": summary,
        "runs": runs,
    }
    if a.profile:
        result["profile"] = profiles(a.runtime)
    lines = ["# nswap2l overhead against dm-linear", "",
             f"{result['date']}, kernel {result['environment']['kernel']}, "
             f"{result['environment']['mode']}.", "",
             f"Device: {result['environment']['device']}.", "",
             "| case | dm-linear IOPS | nswap2l IOPS | ratio | target |",
             "|---|---:|---:|---:|---|"]
    for s in summary:
        lines.append(f"| {s['case']} | {s['dm_linear_iops']:.0f} | "
                     f"{s['nswap2l_iops']:.0f} | {s['ratio']:.3f} | "
                     f"{'>= 0.90: met' if s['meets_target'] else '>= 0.90: MISSED'} |")
    if a.profile:
        lines += profile_lines(result["profile"])
    n2lbench.write_results(OUT, "overhead", result, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())
