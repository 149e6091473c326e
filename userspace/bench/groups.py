# SPDX-License-Identifier: GPL-2.0-only
"""The guests userspace/bench/run shares a run out to: a line each, the
units one guest runs (its --units). Options the runner takes that change
what the run holds count here too: --reps (a run asked for 12 reps of a
profile of 6 boots 12 guests, not 6) and --workloads (the workloads named
run in one guest).

    groups.py PROFILE GUESTS [the runner's options]"""
import argparse
import sys

import prefetch
import profiles
import sweep


def groups(name, guests, argv):
    ap = argparse.ArgumentParser(add_help=False)
    ap.add_argument("--reps", type=int)
    ap.add_argument("--workloads")
    a, _ = ap.parse_known_args(argv)
    profile = profiles.get(name, **({"reps": a.reps} if a.reps else {}))
    if name in ("prefetch", "prefetch-smoke"):
        return [str(u) for u in prefetch.all_units(profile)]
    if name == "sweep":
        return [profiles.format_units(g)
                for g in sweep.split_units(sweep.all_units(profile.reps), guests)]
    if a.workloads:
        return [a.workloads]
    return [profiles.format_units(g) for g in profiles.split(profile.all_units(), guests)]


if __name__ == "__main__":
    print(*groups(sys.argv[1], int(sys.argv[2]), sys.argv[3:]), sep="\n")
