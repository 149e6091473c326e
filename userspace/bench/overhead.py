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
import json
import os
import platform
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.environ.get("N2L_OUT", "/tmp")
SIZE_MB = 512
CASES = [("randread", 1), ("randread", 32), ("randwrite", 1), ("randwrite", 32)]


def sh(cmd):
    return subprocess.run(cmd, shell=True, check=True, capture_output=True,
                          text=True).stdout


def setup(nullb_mb):
    sh("modprobe dm-mod; modprobe null_blk nr_devices=0")
    if not os.path.ismount("/sys/kernel/config"):
        sh("mount -t configfs none /sys/kernel/config")
    d = "/sys/kernel/config/nullb/ovh"
    os.mkdir(d)
    for k, v in (("size", nullb_mb), ("blocksize", 4096), ("memory_backed", 0),
                 ("irqmode", 0), ("hw_queue_depth", 64), ("power", 1)):
        with open(f"{d}/{k}", "w") as f:
            f.write(f"{v}\n")
    sh("udevadm settle")
    sh(f"insmod {REPO}/nswap2l.ko")
    sectors = SIZE_MB * 2048
    sh(f"dmsetup create ovh-linear --table '0 {sectors} linear /dev/ovh 0'")
    sh(f"dmsetup create ovh-n2l --table '0 {sectors} nswap2l /dev/ovh - 8 0 0 "
       f"netram-first 0 none 0'")
    for dev in ("ovh-linear", "ovh-n2l"):
        fio(dev, "write", 32, bs="1M", runtime=None)


def fio(dev, rw, qd, bs="4k", runtime=3):
    timing = f"--time_based --runtime={runtime} --ramp_time=1" if runtime else ""
    out = sh(f"fio --name=ovh --filename=/dev/mapper/{dev} --rw={rw} --bs={bs} "
             f"--size={SIZE_MB}M --direct=1 --ioengine=libaio --iodepth={qd} "
             f"--randrepeat=1 --norandommap {timing} --output-format=json")
    job = json.loads(out)["jobs"][0]
    return job["read" if "read" in rw else "write"]["iops"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=3, help="guest seconds per run")
    a = ap.parse_args()

    setup(SIZE_MB + 64)
    runs = []
    for rw, qd in CASES:
        for rep in range(a.reps):
            for target, dev in (("dm-linear", "ovh-linear"), ("nswap2l", "ovh-n2l")):
                iops = fio(dev, rw, qd, runtime=a.runtime)
                runs.append({"case": f"{rw} 4k qd{qd}", "target": target,
                             "rep": rep, "iops": iops})
                print(f"{rw:9} qd{qd:<2} rep {rep} {target:9} {iops:10.0f} IOPS",
                      flush=True)

    summary = []
    for rw, qd in CASES:
        case = f"{rw} 4k qd{qd}"
        lin = statistics.median(r["iops"] for r in runs
                                if r["case"] == case and r["target"] == "dm-linear")
        n2l = statistics.median(r["iops"] for r in runs
                                if r["case"] == case and r["target"] == "nswap2l")
        summary.append({"case": case, "dm_linear_iops": lin, "nswap2l_iops": n2l,
                        "ratio": n2l / lin, "target_ratio": 0.90,
                        "meets_target": n2l / lin >= 0.90})
    icount = os.environ.get("N2L_ICOUNT") == "1"
    result = {
        "benchmark": "overhead",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "environment": {
            "kernel": platform.release(),
            "qemu": os.environ.get("N2L_QEMU", ""),
            "fio": sh("fio --version").strip(),
            "vcpus": os.cpu_count(),
            "mode": "icount shift=0,sleep=off (1 vCPU, guest time = instructions)"
                    if icount else "TCG wall clock (noisy: +-20%)",
            "device": f"null_blk {SIZE_MB + 64} MiB, no memory backing, irqmode=0, "
                      f"4 KiB blocks; {SIZE_MB} MiB region, preconditioned",
            "fio": f"libaio, direct, {a.runtime} s + 1 s ramp per run, "
                   f"{a.reps} interleaved runs per target and case, median",
        },
        "summary": summary,
        "runs": runs,
    }
    with open(os.path.join(OUT, "overhead.json"), "w") as f:
        json.dump(result, f, indent=1)
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
    with open(os.path.join(OUT, "overhead.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
