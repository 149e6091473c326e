#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The sweep, guest side (userspace/bench/run sweep boots the guests): the
paper's own question, when prefetching to Flash pays.

  latency      Radix and HPL on Nswap (Network RAM only), Flash, and
               Nswap2L without prefetching and with two prefetch
               policies (RR, LRS), at every Network RAM delay x Flash
               latency: the link's delay each way 25, 50 (the paper's)
               and 100 us; the Flash model's read latency 80 and 160 us
               (its writes the paper's 1.5 times slower, its bandwidth
               as calibrated). A configuration runs only at the points
               that change its media: Nswap at each delay, Flash at each
               latency.
  parallelism  WL4 at 1, 2, 4, 8 and 16 processes on Nswap2L without
               prefetching and with LRS, at the paper's media: the
               degree of read parallelism, at issue and over time.

Every run is a runner.py cell (its own device, the profile's cgroup
limit and seed) tagged with its point; a 4 KiB random read at QD1 is
timed on each medium at each point, so that the report can put the
runtimes against what the media actually took. The calibration and its
gate come first, as for every run.

    sweep.py [--units <part>/<rep>,...] [--reps N] [--out DIR] [--resume]

A unit is one part in one rep; userspace/bench/run shares them between
guests (split_units), so that every comparison lies within one boot and
the reps of a part fall to different boots.
"""
import argparse
import json
import os
import random
import sys
from dataclasses import replace

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pylib"))
import calibrate  # noqa: E402
import configs  # noqa: E402
import n2lbench  # noqa: E402
import n2llab  # noqa: E402
import profiles  # noqa: E402
import results  # noqa: E402
import runner  # noqa: E402

NETRAM_DELAY_US = (25, 50, 100)
FLASH_LAT_US = (80, 160)
LATENCY_CONFIGS = ("nswap", "flash", "n2l-none", "n2l-rr", "n2l-lrs")
PARALLELISM_CONFIGS = ("n2l-none", "n2l-lrs")
WL4_PROCS = (1, 2, 4, 8, 16)
# A part's runs are compared with each other, so a guest runs a part's rep
# whole: a unit.
PARTS = {"latency-radix": "radix", "latency-hpl": "hpl", "parallelism": "wl4"}
POINT_KEYS = ("net_delay_us", "flash_lat_us", "procs")


def media_of(config):
    return next(c[2] for c in profiles.CONFIGS if c[0] == config)


def latency_points(workload):
    """(config, workload, point) of the latency sweep, each once."""
    runs = []
    for delay in NETRAM_DELAY_US:
        for lat in FLASH_LAT_US:
            for config in LATENCY_CONFIGS:
                media = media_of(config)
                point = {"net_delay_us": delay if "netram" in media else None,
                         "flash_lat_us": lat if "flash" in media else None,
                         "procs": None}
                if (config, workload, point) not in runs:
                    runs.append((config, workload, point))
    return runs


def parallelism_points():
    return [(config, "wl4", {"net_delay_us": None, "flash_lat_us": None, "procs": n})
            for n in WL4_PROCS for config in PARALLELISM_CONFIGS]


def part_runs(part):
    return parallelism_points() if part == "parallelism" else latency_points(PARTS[part])


def run_order(units, seed):
    """(rep, run) of every (part, rep) unit, rep by rep, each rep's runs
    shuffled from the seed: the same order after a restart, another in
    each rep."""
    order = []
    for rep in sorted({r for _, r in units}):
        runs = [run for part, r in units if r == rep for run in part_runs(part)]
        random.Random(f"sweep/{seed}/{rep}").shuffle(runs)
        order += [(rep, run) for run in runs]
    return order


def flash_keys_at(calibrated, lat_us):
    """The calibrated Flash with its latency set: writes keep the paper's
    ratio to reads, both directions keep their calibrated bandwidth."""
    keys = dict(calibrated)
    keys["read_lat_us"] = lat_us
    keys["write_lat_us"] = round(lat_us * profiles.FLASH_RATIO["write"]
                                 / profiles.FLASH_RATIO["read"])
    return keys


def profile_at(base, point):
    """The profile of one point: base's, with the point's link delay,
    Flash latency and process count where it sets one."""
    over = {}
    if point["net_delay_us"] is not None:
        over["net_delay_us"] = point["net_delay_us"]
    if point["flash_lat_us"] is not None:
        over["flash_keys"] = flash_keys_at(base.flash_keys, point["flash_lat_us"])
    if point["procs"] is not None:
        over["procs"] = point["procs"]
    return replace(base, **over)


# What each point's media are measured by: a 4 KiB random read at QD1.
POINT_CASE = ("read", "rand", 1)


def read_us(path):
    """A 4 KiB random read at QD1 on path, us, after a fill."""
    return next(iter(calibrate.measure(path, 1, cases=[POINT_CASE]).values()))


def point_media(base, parts):
    """{"netram": {delay: us}, "flash": {lat: us}}: what a read took on
    each medium at the points these parts run."""
    delays = sorted({p["net_delay_us"] for part in parts for _, _, p in part_runs(part)
                     if p["net_delay_us"] is not None})
    lats = sorted({p["flash_lat_us"] for part in parts for _, _, p in part_runs(part)
                   if p["flash_lat_us"] is not None})
    out = {"netram": {}, "flash": {}}
    for delay in delays:
        dev, parts_up = calibrate.netram_topology(replace(base, net_delay_us=delay))
        try:
            out["netram"][str(delay)] = read_us(dev.path)
        finally:
            configs.remove_parts(parts_up)
    for lat in lats:
        f = configs.flash(base, calibrate.REGION_MB, "sweep-flash",
                          keys=flash_keys_at(base.flash_keys, lat))
        try:
            out["flash"][str(lat)] = read_us(f.path)
        finally:
            f.remove()
    return out


class PointProgress(runner.Progress):
    """runner's progress, each cell tagged with the point it ran at."""

    point = {}

    def done(self, cell):
        cell["point"] = dict(self.point)
        super().done(cell)


def cell_key(config, workload, rep, point):
    return (config, workload, rep) + tuple(point[k] for k in POINT_KEYS)


def new_run(base, calib, units):
    return {"benchmark": "nswap2l sweep", "date": n2lbench.now(),
            "environment": runner.environment(base, calib),
            "configs": {c[0]: c[1] for c in profiles.CONFIGS
                        if c[0] in LATENCY_CONFIGS + PARALLELISM_CONFIGS},
            "workloads": sorted({PARTS[p] for p, _ in units}),
            "units": profiles.format_units(units), "cells": []}


def calibrated_run(base, units, out):
    """The calibration, its gate, and a new run; None if the gate stops."""
    calib, stop = calibrate.run(base)
    if stop:
        calibrate.save(out, base, calib)
        return None
    run = new_run(base, calib, units)
    parts = sorted({p for p, _ in units})
    run["point_media"] = point_media(replace(base, flash_keys=calib["flash_keys"]), parts)
    print(f"== media at the points: {json.dumps(run['point_media'])}", flush=True)
    return run


def all_units(reps):
    return [(part, rep) for rep in range(reps) for part in PARTS]


def split_units(units, n):
    """(part, rep) units in at most n groups of about equal cost
    (profiles.COST of the part's workload times its runs). A unit runs
    whole in one boot: the runs it compares share it."""
    return profiles.split(units, n,
                          cost=lambda p: profiles.COST[PARTS[p]] * len(part_runs(p)),
                          order=lambda p: p)


def parse_units(text, reps):
    """"latency-hpl/0,parallelism/1" as units; every part of every rep
    without text."""
    if not text:
        return all_units(reps)
    units = []
    for word in text.split(","):
        part, slash, rep = word.partition("/")
        if part not in PARTS or not slash or not rep.isdigit():
            raise SystemExit(f"sweep: not <part>/<rep>: {word!r} (parts: {', '.join(PARTS)})")
        units.append((part, int(rep)))
    return units


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="sweep", choices=["sweep"])
    ap.add_argument("--units", help="<part>/<rep>,... (parts: " + ", ".join(PARTS) +
                    "); default every part of every rep")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--out", default=os.environ.get("N2L_OUT", "/tmp/n2l"))
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per run")
    ap.add_argument("--resume", action="store_true",
                    help="go on with the run in --out, if there is one")
    a = ap.parse_args()
    base = profiles.get(a.profile, **({"reps": a.reps} if a.reps else {}))
    units = parse_units(a.units, base.reps)
    os.makedirs(a.out, exist_ok=True)
    n2llab.load_modules()
    configs.no_other_swap()

    run = runner.resumed_run(a.out, base) if a.resume else None
    if not run:
        run = calibrated_run(base, units, a.out)
        if not run:
            print("== calibration gate: media off target, no run", flush=True)
            return 3
    base = replace(base, flash_keys=run["environment"]["calibration"]["flash_keys"])
    staged = runner.stage_workloads(replace(base, workloads=tuple(run["workloads"])))
    run["environment"]["staged_in_tmpfs"] = sorted(staged.names)
    todo = run_order(units, base.seed)
    done = {cell_key(c["config"], c["workload"], c["rep"], c["point"]) for c in run["cells"]}
    progress = PointProgress(len(todo), a.out, run, run["cells"])
    for rep, (config, workload, point) in todo:
        if cell_key(config, workload, rep, point) in done:
            continue
        progress.point = point
        runner.run_block(profile_at(base, point), config, (workload,), rep,
                         a.timeout, progress, staged)
    bad = results.bad_runs(progress.cells)
    progress.say(f"== {len(progress.cells) - len(bad)} runs ok, {len(bad)} failed or wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
