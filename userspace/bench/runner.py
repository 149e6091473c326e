#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The benchmark runner, guest side (userspace/bench/run boots the guest).

Every configuration of the profile (disk, Flash, Nswap, Nswap2L with each
prefetch policy, NBD, zram) runs every workload (WL1, WL2, WL4, Radix, IS,
HPL) in a cgroup held to the profile's limit, so that it swaps onto
that configuration's device, built fresh for the cell. Each
cell runs several times; a run that fails or computes a wrong result is
recorded as such and never timed. Progress goes to stdout, results to
results.json and results.csv after every cell.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pylib"))
import accounting  # noqa: E402
import calibrate  # noqa: E402
import configs  # noqa: E402
import n2lbench  # noqa: E402
import n2llab  # noqa: E402
import pilot  # noqa: E402
import profiles  # noqa: E402
import results  # noqa: E402
import stage  # noqa: E402

WORKLOADS_DIR = os.path.join(n2llab.REPO, "build", "workloads")
CGROUP = "/sys/fs/cgroup/n2l-bench"


def stage_workloads(profile):
    """The compiled workloads into tmpfs (stage.py says why); HPL is a
    Python script driving MPI and hpl-solve, and runs from where it is."""
    staged = stage.Stage("/tmp/n2l/stage")
    for w in profile.workloads:
        path = os.path.join(WORKLOADS_DIR, w)
        if stage.is_elf(path):
            staged.add(path)
    return staged


def workload_argv(profile, workload, staged=None):
    """Every run of a workload, on every configuration and in every rep,
    computes the same thing from the same seed: the reps of a cell differ
    only by what the machine did, and the checksums must all agree."""
    args = ["--limit-mb", str(profile.limit(workload)), "--seed", str(profile.seed)]
    if workload in profile.passes:
        args += ["--passes", str(profile.passes[workload])]
    if workload in profile.footprints:
        args += ["--footprint", str(profile.footprints[workload])]
    if profile.procs_of(workload):
        args += ["--procs", str(profile.procs_of(workload))]
    if staged and workload in staged.names:
        return staged.argv(workload, args)
    return [os.path.join(WORKLOADS_DIR, workload)] + args


def limit_cgroup(limit_mb, hard=False):
    """memory.high at the limit: the kernel throttles and reclaims a cgroup
    above it, however slow the swap device. memory.max alone OOM-kills a
    workload that allocates faster than a slow device writes (its reclaim
    gives up on pages still under writeback), which would time the device's
    backlog, not its speed. memory.max stays a backstop at twice the limit.
    @hard: memory.max at the limit, nothing else, for a device as fast as
    memory: memory.high's throttling sleeps for as long as the cgroup got
    over it, which varies from run to run more than the device does."""
    n2llab.sh("echo +memory > /sys/fs/cgroup/cgroup.subtree_control")
    os.makedirs(CGROUP, exist_ok=True)
    knobs = ((("memory.max", limit_mb),) if hard else
             (("memory.high", limit_mb), ("memory.max", 2 * limit_mb)))
    for knob, mb in knobs:
        with open(f"{CGROUP}/{knob}", "w") as f:
            f.write(f"{mb}M\n")


def run_in_cgroup(limit_mb, argv, timeout, hard=False):
    """The workload in the limited cgroup (limit_cgroup()): (rc, output,
    the cgroup's figures)."""
    limit_cgroup(limit_mb, hard)
    cmd = f"echo $$ > {CGROUP}/cgroup.procs && exec " + " ".join(argv)
    try:
        p = subprocess.run(cmd, shell=True, cwd="/tmp/n2l", capture_output=True,
                           text=True, timeout=timeout)
        rc, output = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        n2llab.run(f"echo 1 > {CGROUP}/cgroup.kill")
        rc, output = -1, f"{e.stdout or ''}\nworkload=? status=failed reason=timeout"
    try:
        n2llab.wait_for(lambda: not open(f"{CGROUP}/cgroup.procs").read().strip(),
                        timeout=60, what="the cgroup to empty")
        return rc, output, accounting.cgroup_figures(CGROUP)
    finally:
        os.rmdir(CGROUP)


def run_cell(profile, target, workload, rep, timeout, staged):
    try:
        target.fresh()
        meter = accounting.Meter(target.path)
        out0, in0 = configs.vmstat_swap_mb()
        meter.start()
        rc, output, figures = run_in_cgroup(profile.limit(workload),
                                            workload_argv(profile, workload, staged),
                                            timeout)
        stats = meter.stop()
        out1, in1 = configs.vmstat_swap_mb()
        stats.update(target.stats(), **figures)
        stats.update(swap_out_mb=round(out1 - out0, 1), swap_in_mb=round(in1 - in0, 1))
    except Exception as e:  # a broken run is a failed run, not a dead runner
        rc, output, stats = -1, f"workload={workload} status=failed reason=run:{e}", {}
    cell = results.cell_from_run(target.config, workload, rep, rc, output, stats)
    if cell["status"] != "ok":
        cell["output"] = output[-4000:]
    return cell


def run_block(profile, config, workloads, rep, timeout, report, staged):
    """The workloads of one configuration, on one device made for them."""
    target = configs.SwapTarget(profile, config, workloads)
    try:
        target.setup()
        setup_error = None
    except Exception as e:  # every cell of the block fails, the run goes on
        setup_error = f"workload=? status=failed reason=setup:{e}"
    try:
        for workload in workloads:
            report.start(config, workload, rep)
            if setup_error:
                cell = results.cell_from_run(config, workload, rep, -1, setup_error)
            else:
                cell = run_cell(profile, target, workload, rep, timeout, staged)
            report.done(cell)
    finally:
        target.teardown()


class Progress:
    """Prints where the run is, keeps the cells and saves them after each,
    and puts each to the pilot gate (pilot.py), which stops the run by
    raising pilot.Stop where gate is True."""

    def __init__(self, total, out_dir, run, cells=(), gate=False):
        self.total, self.begin, self.cells = total, time.monotonic(), list(cells)
        self.out_dir, self.run, self.gate = out_dir, run, gate
        self.boot = n2lbench.boot_id()
        self.first = len(self.cells)     # done before this boot: not timed here
        self.log = open(os.path.join(out_dir, "progress.log"), "a" if cells else "w")

    def say(self, line):
        print(line, flush=True)
        self.log.write(line + "\n")
        self.log.flush()

    def start(self, config, workload, rep):
        done = len(self.cells)
        elapsed = time.monotonic() - self.begin
        here = done - self.first
        eta = elapsed / here * (self.total - done) if here else 0
        self.say(f"[{done + 1}/{self.total}] {config:10} {workload:6} rep {rep} "
                 f"| guest clock: {elapsed / 60:5.1f} min in, about {eta / 60:5.1f} min to go")
        self.cell_began = time.monotonic()

    def done(self, cell):
        cell["cell_seconds"] = round(time.monotonic() - self.cell_began, 2)
        cell["seq"] = len(self.cells)       # where in this guest's run order
        cell["boot"] = self.boot            # pairs are made within one boot
        stop = pilot.check(cell, self.gate)
        shown = f"{cell['seconds']:.2f} s" if cell["status"] == "ok" else \
            f"{cell['status'].upper()}: {cell['reason']}"
        self.say(f"    -> {shown} (the cell took {cell['cell_seconds']:.1f} s)")
        for line in pilot.lines([cell]):
            self.say(f"    pilot gate: {line[2:]}")
        self.cells.append(cell)
        if stop:
            self.run["pilot_gate"] = {"stopped_at": pilot.where(cell), "why": stop}
        save(self.out_dir, self.run, self.cells)
        if stop:
            raise pilot.Stop(f"{pilot.where(cell)}: {'; '.join(stop)}")


def stopped_by_gate(progress, e):
    """The run's end when the pilot gate stopped it: exit status 4."""
    progress.say(f"== pilot gate: the run stops at {e}")
    return 4


def environment(profile, calib):
    return n2lbench.environment(
        cpu=platform.processor() or platform.machine(),
        memory_mb=meminfo_total_mb(),
        cgroup="memory.high = the workload's limit, memory.max = twice that",
        profile=dict(vars(profile)),
        media=profile.media(),
        calibration=calib)


def meminfo_total_mb():
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 0


def save(out_dir, run, cells):
    run["cells"] = cells
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(run, f, indent=1)
    with open(os.path.join(out_dir, "results.csv"), "w") as f:
        f.write(results.cells_to_csv(cells))


def resumed_run(out_dir, profile):
    """The run a guest that died left in out_dir, to go on with, or None.
    Its cells stay (a finished cell was saved whole); each boot that goes
    on with it is recorded, so the report can say a guest was restarted."""
    path = os.path.join(out_dir, "results.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        run = json.load(f)
    if run["environment"].get("profile", {}).get("name") != profile.name:
        raise SystemExit(f"{path} is a run of another profile: not going on with it")
    run["environment"].setdefault("resumed", []).append(
        {"date": n2lbench.now(), "cells_done": len(run["cells"])})
    return run


def calibrated(profile, a):
    """The run's calibration, from a.calibration or measured here and
    saved for later runs: (calib, whether its gate stops the run)."""
    if a.calibration:
        print(f"== calibration from {a.calibration}", flush=True)
        return calibrate.load(a.calibration, profile), False
    calib, stop = calibrate.run(profile)
    calibrate.save(a.out, profile, calib)
    return calib, stop


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="quick", choices=sorted(profiles.PROFILES))
    ap.add_argument("--out", default=os.environ.get("N2L_OUT", "/tmp/n2l"))
    ap.add_argument("--reps", type=int)
    ap.add_argument("--configs", help="comma-separated subset")
    ap.add_argument("--workloads", help="comma-separated subset")
    ap.add_argument("--units", help="<workload>/<rep>,...: only these runs (of every "
                    "configuration)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per run")
    ap.add_argument("--resume", action="store_true",
                    help="go on with the run in --out, if there is one")
    ap.add_argument("--no-pilot-gate", action="store_true",
                    help="flag what the pilot gate would stop at, and go on")
    ap.add_argument("--calibrate-only", action="store_true",
                    help="calibrate the media, write calibration.json, run nothing")
    ap.add_argument("--calibration", help="a calibration.json of this profile, from "
                    "an earlier run: used instead of calibrating")
    a = ap.parse_args()
    if a.calibration and a.calibrate_only:
        ap.error("--calibration and --calibrate-only: one or the other")

    over = {}
    if a.reps:
        over["reps"] = a.reps
    if a.configs:
        over["configs"] = tuple(a.configs.split(","))
    if a.workloads:
        over["workloads"] = tuple(a.workloads.split(","))
    if a.units:
        over["units"] = profiles.parse_units(a.units)
    profile = profiles.get(a.profile, **over)
    os.makedirs(a.out, exist_ok=True)
    n2llab.load_modules()
    configs.no_other_swap()

    print(f"== profile {profile.name}: media {profile.media()}", flush=True)
    run = resumed_run(a.out, profile) if a.resume else None
    if run:
        print(f"== going on with {len(run['cells'])} cells done", flush=True)
    else:
        calib, stop = calibrated(profile, a)
        if stop:
            print("== calibration gate: media off target, no run", flush=True)
            return 3
        if a.calibrate_only:
            return 0
        run = {"benchmark": "nswap2l workloads", "date": n2lbench.now(),
               "environment": environment(profile, calib),
               "configs": {c: profiles.config(c).label for c in profile.configs},
               "workloads": list(profile.workloads),
               "units": profiles.format_units(profile.units), "cells": []}
        # saved before any cell: a guest stopped in its first cell (an HPL
        # run longer than the session left) goes on without calibrating
        # again, here or, through results/<run>/, in a new session
        save(a.out, run, [])
    staged = stage_workloads(profile)
    print(f"== staged in tmpfs: {', '.join(sorted(staged.names)) or 'none'}", flush=True)
    run["environment"]["staged_in_tmpfs"] = sorted(staged.names)
    profile = replace(profile, flash_keys=run["environment"]["calibration"]["flash_keys"])
    progress = Progress(len(profile.cells()), a.out, run, run["cells"],
                        gate=profile.pilot_gate and not a.no_pilot_gate)
    done = {(c["config"], c["workload"], c["rep"]) for c in run["cells"]}
    try:
        for rep, config, workloads in profile.blocks(done):
            run_block(profile, config, workloads, rep, a.timeout, progress, staged)
    except pilot.Stop as e:
        return stopped_by_gate(progress, e)
    bad = results.bad_runs(progress.cells)
    progress.say(f"== {len(progress.cells) - len(bad)} runs ok, {len(bad)} failed or wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
