#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Guest side of make bench-meta: what the metadata device costs.

One memory-backed null_blk is Flash for every target, another (zeroed
before each run) holds the slot map. Two questions, each answered by
targets run in turn, A, B, C, A, B, C, ..., in one instruction-counted
boot, so that their ratios repeat:

- swap: WL2 in a cgroup held to a limit, swapping onto Flash-only nswap2l
  with and without metadata:, and onto dm-linear over the same Flash;
  throughput is the inverse of the workload's guest seconds.
- fsync: fio random 4 KiB writes with an fsync every 32, into a
  fallocated file (so that first writes map slots), on ext4 over
  dm-linear, over nswap2l and over nswap2l with metadata:. The device's
  fsyncs (fio's count), Flash's flushes (its stat) and the map's
  commits (sysfs metadata) are counted in the timed part, so that
  commits per fsync show whether a flush costs one commit, not more.

The issue's targets: swap with metadata at least 0.95x without; fsync
on nswap2l with metadata at least 0.7x of dm-linear.
"""
import argparse
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pylib"))
import n2lbench  # noqa: E402
import n2llab  # noqa: E402
import nswap2l  # noqa: E402
import runner  # noqa: E402
import stage  # noqa: E402
import stats  # noqa: E402
from n2llab import sh  # noqa: E402

OUT = os.environ.get("N2L_OUT", "/tmp")
DEV_MB, FLASH_MB, META_MB, CACHE_MB = 256, 272, 8, 16
FLASH = META = None     # the null_blk devices, made by main()
NAME = "n2l-meta-bench"
MNT = "/tmp/n2l/meta-mnt"
TARGETS = ("dm-linear", "nswap2l", "nswap2l+metadata")
SWAP_TARGET = 0.95
FSYNC_TARGET = 0.70


def write_back(path):
    """The device's cache as the block layer sees it: flushes reach a
    "write back" one; above a "write through" one they are stripped, and
    fsync would cost dm-linear and nswap2l nothing."""
    name = os.path.basename(os.path.realpath(path))
    mode = open(f"/sys/block/{name}/queue/write_cache").read().strip()
    if mode != "write back":
        raise RuntimeError(f"{path}: write cache {mode!r}: flushes would not reach it")


def table(target, flash, meta):
    sectors = DEV_MB * 2048
    if target == "dm-linear":
        return f"0 {sectors} linear {flash} 0"
    features = (f"metadata:{meta}",) if target == "nswap2l+metadata" else ()
    return nswap2l.table_line(sectors, flash, features=features)


def create(target):
    """A fresh device of @target (an n2llab.Device: dm-linear too)."""
    if target == "nswap2l+metadata":
        # formatted anew: a map left by the last run would be loaded
        sh(f"dd if=/dev/zero of={META.path} bs=1M count={META_MB} oflag=direct status=none")
    dev = n2llab.Device(NAME, table(target, FLASH.path, META.path))
    write_back(dev.path)
    return dev


def commits(dev):
    """Map commits so far; None without a metadata device."""
    try:
        state = dev.sysfs_read("metadata").split()
    except FileNotFoundError:
        return None
    return int(state[2]) if state[0] != "none" else None


def swap_run(target, argv, limit_mb):
    dev = create(target)
    sh(f"mkswap -q {dev.path} && swapon {dev.path}")
    try:
        c0, t0 = commits(dev), time.monotonic()
        rc, output, figures = runner.run_in_cgroup(limit_mb, argv, timeout=1800, hard=True)
        seconds, c1 = time.monotonic() - t0, commits(dev)
    finally:
        sh(f"swapoff {dev.path}")
        dev.remove()
    line = output.strip().splitlines()[-1] if output.strip() else ""
    if rc or "status=ok" not in line:
        raise RuntimeError(f"{target}: workload failed ({rc}): {output[-500:]}")
    checksum = line.split("checksum=")[1].split()[0]
    return {"seconds": round(seconds, 4), "checksum": checksum,
            "major_faults": figures["major_faults"],
            "commits": None if c0 is None else c1 - c0}


def fsync_run(target, runtime):
    dev = create(target)
    try:
        sh(f"mkfs.ext4 -q -F {dev.path}")
        os.makedirs(MNT, exist_ok=True)
        sh(f"mount {dev.path} {MNT}")
        try:
            # fio fallocates the file: the first write of each block maps
            # a slot, a change the next flush must commit
            sh("sync")
            f0, c0 = FLASH.stat()["flushes"], commits(dev)
            out = sh(f"fio --name=fs --directory={MNT} --filename=f --size=64M "
                     f"--rw=randwrite --bs=4k --fsync=32 --ioengine=psync "
                     f"--time_based --runtime={runtime} --output-format=json")
            f1, c1 = FLASH.stat()["flushes"], commits(dev)
        finally:
            sh(f"umount {MNT}")
    finally:
        dev.remove()
    job = json.loads(out[out.index("{"):])["jobs"][0]
    return {"iops": job["write"]["iops"], "fsyncs": job["sync"]["total_ios"],
            "flash_flushes": f1 - f0, "commits": None if c0 is None else c1 - c0}


# (question, its runs' figure, the target compared, the one it is
# compared with, whether more of the figure is better, the goal)
COMPARISONS = [
    ("swap throughput", "swap", "seconds", "nswap2l+metadata", "nswap2l", False, SWAP_TARGET),
    ("swap throughput", "swap", "seconds", "dm-linear", "nswap2l", False, None),
    ("fsync=32 IOPS on ext4", "fsync", "iops", "nswap2l+metadata", "dm-linear", True,
     FSYNC_TARGET),
    ("fsync=32 IOPS on ext4", "fsync", "iops", "nswap2l", "dm-linear", True, None),
]


def paired(runs, question, key, a, b, more_is_better):
    """a's throughput over b's, from runs paired by rep: its Estimate, and
    (median, lo, hi) of the pairs' ratios."""
    by = {(r["target"], r["rep"]): r[key] for r in runs if r["question"] == question}
    logs = [math.log(by[(a, rep)] / by[(b, rep)]) * (1 if more_is_better else -1)
            for t, rep in by if t == a and (b, rep) in by]
    return stats.estimate(logs), stats.median_interval([math.exp(x) for x in logs])


def verdict(lo, hi, goal):
    """met when the whole interval is at or above the goal, missed when
    it is all below, else inconclusive."""
    if goal is None:
        return "—"
    if lo is None:
        return f">= {goal:.2f}: too few pairs"
    if lo >= goal:
        return f">= {goal:.2f}: met"
    return f">= {goal:.2f}: {'MISSED' if hi < goal else 'inconclusive'}"


def summarize(runs):
    """The comparisons, and the map's commits per fsync of nswap2l+metadata."""
    summary = []
    for question, kind, key, a, b, more, goal in COMPARISONS:
        est, (med, mlo, mhi) = paired(runs, kind, key, a, b, more)
        summary.append({"question": question, "target": a, "against": b,
                        "ratio": est.ratio, "lo": est.lo, "hi": est.hi, "pairs": est.n,
                        "goal": goal, "verdict": verdict(est.lo, est.hi, goal),
                        "median": med, "median_lo": mlo, "median_hi": mhi,
                        "median_verdict": verdict(mlo, mhi, goal)})
    mine = [r for r in runs if r["question"] == "fsync" and r["target"] == "nswap2l+metadata"]
    nc, nf = sum(r["commits"] for r in mine), sum(r["fsyncs"] for r in mine)
    return summary, {"commits": nc, "fsyncs": nf, "ratio": nc / nf if nf else None}


def interval(lo, hi):
    return "—" if lo is None else f"{lo:.3f}–{hi:.3f}"


def summary_lines(result):
    env = result["environment"]
    lines = ["# What the metadata device costs", "",
             f"{result['date']}, kernel {env['kernel']}, {env['mode']}.", "",
             f"Media: {env['media']}. {env['runs']}", "",
             "Throughput of a target over another's: the geometric mean of runs "
             "paired by rep, with its 95% interval (Student's t on the mean log "
             "ratio), and the median of the pairs' ratios, with the interval of "
             "order statistics that covers it at 95% or more (the sign test's, "
             "which one stray run cannot move: under instruction counting an idle "
             "guest's clock leaps to its next timer, so a wait on the host, such as "
             "a page of a program read back through virtiofs, may count many times "
             "over; runs took 1.5 to 24 times their time so, dm-linear's too). "
             "A goal is met when the "
             "whole interval is at or above it.", "",
             "| question | target / against | ratio [95% CI] | goal | "
             "median [CI] | goal | pairs |",
             "|---|---|---|---|---|---|---:|"]
    for q in result["summary"]:
        lines.append(f"| {q['question']} | {q['target']} / {q['against']} | "
                     f"{q['ratio']:.3f} [{interval(q['lo'], q['hi'])}] | {q['verdict']} | "
                     f"{q['median']:.3f} [{interval(q['median_lo'], q['median_hi'])}] | "
                     f"{q['median_verdict']} | {q['pairs']} |")
    lines += ["", "| question | target | rep | figure | commits | fsyncs | Flash flushes |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for r in result["runs"]:
        fig = f"{r['seconds']:.3f} s" if r["question"] == "swap" else f"{r['iops']:.0f} IOPS"
        lines.append(f"| {r['question']} | {r['target']} | {r['rep']} | {fig} | "
                     f"{r['commits'] if r['commits'] is not None else '—'} | "
                     f"{r.get('fsyncs', '—')} | {r.get('flash_flushes', '—')} |")
    c = result["commits_per_fsync"]
    lines += ["", "Map commits in the timed fsync runs of nswap2l+metadata: "
              f"{c['commits']} for {c['fsyncs']} fsyncs"
              + (f", {c['ratio']:.3f} an fsync" if c["ratio"] is not None else "")
              + " (a flush commits only when the map changed since the last commit)."]
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--runtime", type=int, default=3, help="guest seconds per fio run")
    ap.add_argument("--limit-mb", type=int, default=32)
    ap.add_argument("--passes", type=int, default=3)
    a = ap.parse_args()

    global FLASH, META
    n2llab.load_modules()
    # volatile write caches, so that flushes reach them
    FLASH = n2llab.NullBlk(FLASH_MB, cache_mb=CACHE_MB, prefix="n2lm")
    META = n2llab.NullBlk(META_MB, cache_mb=CACHE_MB, prefix="n2lm")
    staged = stage.Stage("/tmp/n2l/stage")
    staged.add(os.path.join(runner.WORKLOADS_DIR, "wl2"))
    argv = staged.argv("wl2", ["--limit-mb", str(a.limit_mb), "--passes", str(a.passes),
                               "--seed", "1"])
    # a run of each first, not counted: the first of a boot pays for
    # caches the others find warm
    for target in TARGETS:
        swap_run(target, argv, a.limit_mb)
        fsync_run(target, a.runtime)
    runs = []
    for rep in range(a.reps):
        for target in TARGETS:
            r = swap_run(target, argv, a.limit_mb)
            runs.append({"question": "swap", "target": target, "rep": rep, **r})
            print(f"swap  rep {rep} {target:17} {r['seconds']:8.3f} s "
                  f"{r['commits']} commits", flush=True)
    for rep in range(a.reps):
        for target in TARGETS:
            r = fsync_run(target, a.runtime)
            runs.append({"question": "fsync", "target": target, "rep": rep, **r})
            print(f"fsync rep {rep} {target:17} {r['iops']:8.0f} IOPS {r['fsyncs']} fsyncs "
                  f"{r['flash_flushes']} Flash flushes {r['commits']} commits", flush=True)
    sums = {r["checksum"] for r in runs if r["question"] == "swap"}
    if len(sums) != 1:
        raise RuntimeError(f"the swap runs computed different results: {sums}")

    summary, per_fsync = summarize(runs)
    result = {
        "benchmark": "meta",
        "date": n2lbench.now(),
        "environment": n2lbench.environment(
            media=f"Flash: null_blk {FLASH_MB} MiB, memory-backed, 4 KiB blocks, "
                  f"a volatile write cache of {CACHE_MB} MiB, a {DEV_MB} MiB device on "
                  f"it; metadata: null_blk {META_MB} MiB, the same cache, zeroed "
                  f"before each run",
            runs=f"swap: WL2 --limit-mb {a.limit_mb} --passes {a.passes} in a cgroup "
                 f"(memory.max {a.limit_mb} MiB, no memory.high), guest seconds; "
                 f"fsync: fio psync randwrite 4k fsync=32 on a fallocated 64 MiB file "
                 f"of a fresh ext4, {a.runtime} s; each a fresh device, a run of each target first "
                 f"(not counted), then {a.reps} reps of every target in turn."),
        "summary": summary,
        "commits_per_fsync": per_fsync,
        "runs": runs,
    }
    n2lbench.write_results(OUT, "meta", result, summary_lines(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
