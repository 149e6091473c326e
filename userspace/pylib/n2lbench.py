# SPDX-License-Identifier: GPL-2.0-only
"""What the in-guest benchmarks share: fio runs, the record of the
environment, and A/B comparisons of interleaved runs by their medians."""
import json
import os
import platform
import statistics
import time

from n2llab import sh


def fio(path, rw, bs, qd, size_mb, runtime=3, ramp=1):
    """One fio job on path; returns (IOPS, MiB/s). runtime None: one pass
    over size_mb, untimed (preconditioning)."""
    timing = f"--time_based --runtime={runtime} --ramp_time={ramp}" if runtime else ""
    out = sh(f"fio --name=bench --filename={path} --rw={rw} --bs={bs} "
             f"--size={size_mb}M --direct=1 --ioengine=libaio --iodepth={qd} "
             f"--randrepeat=1 --norandommap {timing} --output-format=json",
             timeout=3600)
    job = json.loads(out)["jobs"][0]
    res = job["read" if "read" in rw else "write"]
    return res["iops"], res["bw_bytes"] / (1 << 20)


def environment(**extra):
    """Kernel, QEMU, fio and the timing mode, plus whatever the caller adds."""
    icount = os.environ.get("N2L_ICOUNT") == "1"
    env = {
        "kernel": platform.release(),
        "qemu": os.environ.get("N2L_QEMU", ""),
        "fio": sh("fio --version").strip(),
        "vcpus": os.cpu_count(),
        "mode": "icount shift=0,sleep=off (1 vCPU, guest time = instructions)"
                if icount else "TCG wall clock (noisy: +-20%)",
    }
    env.update(extra)
    return env


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def median_of(runs, case, target, key):
    return statistics.median(r[key] for r in runs
                             if r["case"] == case and r["target"] == target)


def write_results(out_dir, name, result, lines):
    """<name>.json with every run, <name>.md with the summary; prints it."""
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
