#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Puts back what a run resumes from when only its results are left.

userspace/bench/run resumes a run from build/vm/ (each guest's
results.json and status, each Flash speed's calibration). A session that
starts on a new machine has none of that: results/<run>/ is all that is
left of what finished, and without this a resume would calibrate again
and boot every guest anew. Each guest that the run's results.json names
(by its units) gets back its own results.json, and its status 0 if
results/<run>/PARTIAL does not name it unfinished; each calibration-<speed>.json
goes back to its calibration guest. A guest directory that still has a
results.json is newer than the results: it is left as it is.

    restore.py RESULTS_DIR [--guest UNITS=DIR]... [--calibration SPEED=DIR]...
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profiles  # noqa: E402


def cells_of(cells, units):
    """The cells a guest of @units ran: a prefetch guest's units are reps
    ("4"), another's <workload>/<rep> pairs; "all" is every cell."""
    if units == "all":
        return list(cells)
    if all(u.isdigit() for u in units.split(",")):
        reps = {int(u) for u in units.split(",")}
        return [c for c in cells if c["rep"] in reps]
    mine = set(profiles.parse_units(units))
    return [c for c in cells if (c["workload"], c["rep"]) in mine]


def unfinished(results_dir):
    """Guest directory names results/<run>/PARTIAL says did not finish."""
    try:
        with open(os.path.join(results_dir, "PARTIAL")) as f:
            first = f.readline()
    except FileNotFoundError:
        return set()
    _, _, names = first.partition("guests not finished:")
    return {n for n in names.split("(")[0].split()}


def guest_run(run, guest, results_dir):
    """The results.json the guest @guest of the merged @run had written."""
    cells = cells_of(run["cells"], guest["units"])
    env = {k: v for k, v in run["environment"].items() if k != "guests"}
    env["calibration"] = guest.get("calibration")
    env["resumed"] = list(guest.get("resumed", []))
    env["restored_from"] = results_dir
    mine = {c["workload"] for c in cells}
    out = {"benchmark": run["benchmark"], "date": run["date"], "environment": env,
           "configs": {c: run["configs"][c] for c in guest["configs"]},
           "workloads": [w for w in run["workloads"] if w in mine],
           "units": None if guest["units"] == "all" else guest["units"],
           "cells": cells}
    for key in ("points", "calibrations"):
        if key in run:
            out[key] = run[key]
    if guest.get("calibration_check") is not None:
        out["calibration_check"] = guest["calibration_check"]
    return out


def write_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


def restore_guests(results_dir, guests):
    """@guests: {units: directory}. Returns the directories restored."""
    path = os.path.join(results_dir, "results.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        run = json.load(f)
    gone = unfinished(results_dir)
    done = []
    for guest in run["environment"].get("guests", []):
        d = guests.get(guest["units"])
        if not d or os.path.exists(os.path.join(d, "results.json")):
            continue
        try:
            mine = guest_run(run, guest, results_dir)
        except ValueError as e:     # a sweep's units name parts, not workloads
            print(f"restore: {d}: its cells cannot be told apart ({e}): it runs again",
                  file=sys.stderr)
            continue
        write_json(os.path.join(d, "results.json"), mine)
        if os.path.basename(os.path.normpath(d)) not in gone:
            with open(os.path.join(d, "status"), "w") as f:
                f.write("0\n")
        done.append(d)
    return done


def restore_calibrations(results_dir, calibrations):
    """@calibrations: {speed: directory}. Returns the directories restored."""
    done = []
    for speed, d in calibrations.items():
        src = os.path.join(results_dir, f"calibration-{speed}.json")
        dst = os.path.join(d, "calibration.json")
        if not os.path.exists(src) or os.path.exists(dst):
            continue
        with open(src) as f:
            write_json(dst, json.load(f))
        done.append(d)
    return done


def pairs(items, what):
    out = {}
    for item in items:
        key, sep, d = item.partition("=")
        if not sep or not key or not d:
            raise SystemExit(f"restore: --{what} {item!r}: expected KEY=DIR")
        out[key] = d
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results_dir")
    ap.add_argument("--guest", action="append", default=[])
    ap.add_argument("--calibration", action="append", default=[])
    a = ap.parse_args(argv)
    for d in restore_calibrations(a.results_dir, pairs(a.calibration, "calibration")):
        print(f"restore: {d}/calibration.json from {a.results_dir}")
    for d in restore_guests(a.results_dir, pairs(a.guest, "guest")):
        print(f"restore: {d}/results.json from {a.results_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
