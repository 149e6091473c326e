#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""One run from the runs of several guests that shared a profile, each
running every configuration of some (workload, rep) units (userspace/
bench/run starts one guest per host core: with instruction counting a
guest's times do not depend on what else the host runs; the runs a
paired comparison sets side by side are within one boot all the same).

    merge.py OUT_DIR GUEST_DIR...

Writes OUT_DIR/results.json and results.csv. The environment is the first
guest's; every guest's calibration is kept under environment.guests, so a
reader can check that the media measured the same in each."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profiles  # noqa: E402
import results  # noqa: E402


def merge_runs(runs):
    """The runs of one profile as one run: cells in the profile's order
    (rep, configuration, workload), configurations in CONFIGS order,
    workloads in WORKLOADS order."""
    if not runs:
        raise ValueError("no runs to merge")
    names = {r["environment"]["profile"]["name"] for r in runs}
    if len(names) != 1:
        raise ValueError(f"runs of different profiles: {sorted(names)}")
    configs = {}
    for r in runs:
        configs.update(r["configs"])
    order = {c[0]: i for i, c in enumerate(profiles.CONFIGS)}
    configs = dict(sorted(configs.items(), key=lambda kv: order.get(kv[0], len(order))))
    mine = {w for r in runs for w in r["workloads"]}
    workloads = [w for w in profiles.WORKLOADS if w in mine] + \
        sorted(mine - set(profiles.WORKLOADS))
    cells = [c for r in runs for c in r["cells"]]
    cells.sort(key=lambda c: (c["rep"], order.get(c["config"], len(order)),
                              workloads.index(c["workload"])
                              if c["workload"] in workloads else len(workloads)))
    env = dict(runs[0]["environment"])
    env["guests"] = [{"configs": list(r["configs"]), "units": r.get("units") or "all",
                      "calibration": r["environment"].get("calibration"),
                      "resumed": r["environment"].get("resumed", [])} for r in runs]
    env.pop("resumed", None)
    staged = [set(r["environment"]["staged_in_tmpfs"]) for r in runs
              if "staged_in_tmpfs" in r["environment"]]
    if staged:      # each guest staged the workloads it ran
        env["staged_in_tmpfs"] = sorted(set().union(*staged))
    merged = {"benchmark": runs[0]["benchmark"], "date": min(r["date"] for r in runs),
              "environment": env, "configs": configs, "workloads": workloads,
              "cells": cells}
    # The prefetch experiment's points, the same in every guest; a guest
    # the pilot gate stopped says where.
    if any("points" in r for r in runs):
        merged["points"] = next(r["points"] for r in runs if "points" in r)
    # ... its calibrations, one per Flash speed for every guest, and each
    # guest's check of them in its own boot.
    if any("calibrations" in r for r in runs):
        merged["calibrations"] = next(r["calibrations"] for r in runs if "calibrations" in r)
        for g, r in zip(env["guests"], runs):
            g["calibration_check"] = r.get("calibration_check")
    stopped = [r["pilot_gate"] for r in runs if r.get("pilot_gate")]
    if stopped:
        merged["pilot_gate"] = stopped[0]
    # A sweep's media at its points: each guest measured its own.
    if any("point_media" in r for r in runs):
        merged["point_media"] = runs[0].get("point_media")
        for g, r in zip(env["guests"], runs):
            g["point_media"] = r.get("point_media")
    return merged


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out, guests = argv[0], argv[1:]
    runs = []
    for d in guests:
        path = os.path.join(d, "results.json")
        if os.path.exists(path):
            with open(path) as f:
                runs.append(json.load(f))
        else:
            print(f"merge: {path} is missing: that guest's cells are left out",
                  file=sys.stderr)
    run = merge_runs(runs)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(run, f, indent=1)
    with open(os.path.join(out, "results.csv"), "w") as f:
        f.write(results.cells_to_csv(run["cells"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
