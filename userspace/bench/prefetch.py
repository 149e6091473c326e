#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The prefetch experiment, guest side (make bench-prefetch: userspace/
bench/run prefetch boots the guests): whether and when prefetching to
Flash pays.

At every point of the profile (Profile.points: a workload and its
processes; prefetch's are Radix at 2 and 8 and WL2), every Flash speed
(Profile.flash_speeds: "paper", the paper's ratio to Network RAM, or
"fast", 20% faster than Network RAM in latency and bandwidth;
profiles.FLASH_SPEEDS) and every Network RAM of Profile.netram_shares
("all": Network RAM holds all the swap, the paper's "Nswap2L (to NW RAM
only)"; a number: that share of the footprint), Nswap2L runs with each
policy of Profile.prefetch_policies, `none` among them, the baseline the
others are set against: Flash and disk present, the same Network RAM,
nothing moved. The configurations are n2l-<policy>@<all|percent>
(profiles.n2l_config()).

A unit is one rep: one boot, which runs every point, speed and policy of
the rep in an order shuffled from the seed, each run on a device of its
own. The runs a comparison pairs (same workload, point, rep, seed) are
within one boot, and the reps fall to different boots.

The media are calibrated once per Flash speed, each in a boot of its own
(--calibrate-only --flash-speed S writes calibration.json, gated as
every calibration is); the units take those (--calibration FILE,...)
and check in their own boot that a 4 KiB random read at QD1 still takes
what it took there on Network RAM and on Flash at each speed (within
profiles.TOLERANCE; off target stops an instruction-counted unit, exit
status 3). Under instruction counting a calibration repeats within a few
percent from boot to boot (Network RAM's 4 KiB random read at QD1: 212.5
and 206.8 us in two boots of prefetch-smoke), and a whole one costs
about as much host time as a unit's runs. Without --calibration a unit
calibrates every speed itself.

Before anything is measured every policy is tried on a small device: a
policy the module does not know (an older module's, say) stops
the run, saying so (exit status 5). Every run then goes to the pilot
gate (pilot.py), which stops the run at a fixed policy's run whose
engine moved under 80% of what its policy asked or was activated fewer
than 50 times (exit status 4), and flags a run whose prefetched slots
served under 5% of reads.

    prefetch.py [--profile prefetch] [--units REP,...] [--out DIR]
                [--calibration FILE,...] [--policies a,b] [--shares all,50]
                [--passes wl2=5] [--reps N]
                [--resume] [--no-pilot-gate]
    prefetch.py --calibrate-only --flash-speed S [--out DIR]
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
import pilot  # noqa: E402
import profiles  # noqa: E402
import results  # noqa: E402
import runner  # noqa: E402
from nswap2l import table_line  # noqa: E402
from sweep import PointProgress  # noqa: E402

PROFILES = ("prefetch", "prefetch-smoke")
POINT_KEYS = ("procs", "flash_speed")
BASELINE = "none"
# What a unit checks of a calibration made in another boot.
CHECK_CASE = ("read", "rand", 1)
CHECK_NAME = profiles.case_name(*CHECK_CASE)


def config_names(profile):
    """Every configuration of the experiment: a policy at a Network RAM."""
    return tuple(profiles.n2l_config(p, share) for share in profile.netram_shares
                 for p in profile.prefetch_policies)


def experiment(profile):
    """The profile as the experiment runs it: its configurations, and
    the workloads of its points."""
    workloads = tuple(dict.fromkeys(w for w, _ in profile.points))
    return replace(profile, configs=config_names(profile), workloads=workloads)


def unit_runs(profile):
    """(config, workload, point) of one unit (a rep), in the profile's
    order: speeds, points, configurations."""
    return [(c, w, {"procs": procs, "flash_speed": speed})
            for speed in profile.flash_speeds for w, procs in profile.points
            for c in config_names(profile)]


def run_order(profile, reps):
    """(rep, run) of every unit, rep by rep, each rep's runs shuffled
    from the seed and the rep: the same order after a restart, another
    in each rep."""
    order = []
    for rep in reps:
        runs = unit_runs(profile)
        random.Random(f"prefetch/{profile.seed}/{rep}").shuffle(runs)
        order += [(rep, run) for run in runs]
    return order


def all_units(profile):
    return list(range(profile.reps))


def parse_units(text, profile):
    """"0,3" as [0, 3]; every rep of the profile without text."""
    if not text:
        return all_units(profile)
    words = text.split(",")
    if not all(w.isdigit() for w in words):
        raise SystemExit(f"prefetch: units are reps, 0,1,...: not {text!r}")
    return [int(w) for w in words]


def profile_at(base, point, calibs):
    """The profile of one point: base's, with its processes and its
    Flash speed's model."""
    speed = point["flash_speed"]
    over = {"flash_speed": speed, "flash_keys": calibs[speed]["flash_keys"]}
    if point["procs"]:
        over["procs"] = point["procs"]
    return replace(base, **over)


def cell_key(config, workload, rep, point):
    return (config, workload, rep) + tuple(point[k] for k in POINT_KEYS)


def kernel_log():
    return n2llab.run("dmesg").stdout.splitlines()


def unknown_policy(policy):
    """Why the module refuses a prefetch policy (what it logged), or None
    if it takes it: tried on a small device over a null_blk as Flash."""
    flash = n2llab.NullBlk(8)
    seen = len(kernel_log())
    try:
        n2llab.Device("bench-probe", table_line(8 << 11, flash.path, prefetch=policy)).remove()
        return None
    except n2llab.CommandError as e:
        n2llab.run("dmsetup remove bench-probe")
        said = [ln.strip() for ln in kernel_log()[seen:] if "nswap2l" in ln]
        return said[-1] if said else str(e).strip().splitlines()[0]
    finally:
        flash.remove()


def check_policies(policies):
    """Every policy the module does not know, with its reason: []."""
    return [f"{p}: {why}" for p in policies for why in [unknown_policy(p)] if why]


def calibrate_speed(profile, speed):
    """A whole calibration at one Flash speed and its gate: (calib, the
    cases off target if they stop the run)."""
    return calibrate.run(replace(profile, flash_speed=speed), f" at Flash speed {speed}")


def load_calibrations(paths, profile):
    """{speed: calibration} from calibrate-only boots' calibration.json;
    SystemExit if one is of another profile, failed its gate, or a speed
    of the profile has none."""
    calibs = {}
    for path in paths:
        calib = calibrate.load(path, profile, speeds=profile.flash_speeds)
        calibs[calib["flash_speed"]] = calib
    missing = [s for s in profile.flash_speeds if s not in calibs]
    if missing:
        raise SystemExit(f"prefetch: no calibration for Flash speed {', '.join(missing)}")
    return calibs


def read_us(path):
    return next(iter(calibrate.measure(path, 1, cases=[CHECK_CASE]).values()))


def check_calibrations(profile, calibs):
    """This boot's 4 KiB random read at QD1 on Network RAM and on Flash
    at each speed, against what the calibration measured: {what:
    {"calibrated", "measured", "off"}}."""
    got = {}
    dev, parts = calibrate.netram_topology(profile)
    try:
        got["netram"] = read_us(dev.path)
    finally:
        configs.remove_parts(parts)
    for speed, calib in calibs.items():
        f = configs.flash(profile, calibrate.REGION_MB, "check-flash", keys=calib["flash_keys"])
        try:
            got[f"flash {speed}"] = read_us(f.path)
        finally:
            f.remove()
    return judge(got, calibs, profile.flash_speeds[0])


def judge(got, calibs, first):
    """{what: {"calibrated", "measured", "off"}} of this boot's reads
    (got: {"netram" or "flash <speed>": us}) against the calibrations'
    (Network RAM's from the first speed's)."""
    check = {}
    for what, us in got.items():
        medium, _, speed = what.partition(" ")
        ref = calibs[speed or first]["media"][medium][CHECK_NAME]["measured"]
        check[what] = {"calibrated": ref, "measured": us,
                       "off": profiles.off_target(us, {"us": ref})}
    return check


def new_run(profile, calibs, units):
    first = calibs[profile.flash_speeds[0]]
    return {"benchmark": "nswap2l prefetch", "date": n2lbench.now(),
            "environment": runner.environment(profile, first),
            "calibrations": calibs,
            "configs": {c: profiles.config(c).label for c in profile.configs},
            "workloads": list(profile.workloads), "points": [list(p) for p in profile.points],
            "units": ",".join(map(str, units)), "cells": []}


def calibrated_run(profile, units, paths):
    """A new run with its calibrations (from paths, checked in this boot,
    or made here); None if a gate or the check stops it."""
    if paths:
        calibs = load_calibrations(paths, profile)
        check = check_calibrations(profile, calibs)
        print(f"== calibration check: {json.dumps(check)}", flush=True)
        off = [f"{what}: {c['off']}" for what, c in check.items() if c["off"]]
        for line in off:
            print(f"== calibration check off: {line}", flush=True)
        if off and n2lbench.exact_timing():
            return None
    else:
        calibs, check = {}, None
        for speed in profile.flash_speeds:
            calibs[speed], stop = calibrate_speed(profile, speed)
            if stop:
                return None
    run = new_run(profile, calibs, units)
    run["calibration_check"] = check
    return run


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="prefetch", choices=PROFILES)
    ap.add_argument("--units", help="reps to run, 0,1,...; default every rep")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--policies", help="comma-separated prefetch policies, instead of "
                    "the profile's")
    ap.add_argument("--shares", help="comma-separated Network RAM shares, instead of the "
                    "profile's: all (it holds all the swap) or a percent of the footprint")
    ap.add_argument("--passes", help="comma-separated WORKLOAD=N, passes instead of the "
                    "profile's (a run too short for the pilot gate's activations)")
    ap.add_argument("--calibration", help="calibration.json of each Flash speed, "
                    "comma-separated, from --calibrate-only boots")
    ap.add_argument("--calibrate-only", action="store_true",
                    help="calibrate at --flash-speed, write calibration.json, run nothing")
    ap.add_argument("--flash-speed", help="the Flash speed --calibrate-only calibrates at")
    ap.add_argument("--out", default=os.environ.get("N2L_OUT", "/tmp/n2l"))
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per run")
    ap.add_argument("--resume", action="store_true",
                    help="go on with the run in --out, if there is one")
    ap.add_argument("--no-pilot-gate", action="store_true",
                    help="flag what the pilot gate would stop at, and go on")
    return ap.parse_args(argv)


def share_arg(word):
    """A Network RAM share as --shares names it: "all" or a percent."""
    if word == "all":
        return "all"
    try:
        percent = int(word)
    except ValueError:
        percent = 0
    if not 0 < percent < 100:
        raise SystemExit(f"prefetch: --shares takes all or a percent 1-99, not {word!r}")
    return percent / 100


def passes_arg(words):
    """{workload: passes} from --passes' WORKLOAD=N,..."""
    passes = {}
    for word in words.split(","):
        name, _, n = word.partition("=")
        if not n.isdigit() or int(n) < 1:
            raise SystemExit(f"prefetch: --passes takes WORKLOAD=N,..., not {word!r}")
        passes[name] = int(n)
    return passes


def profile_of(a):
    over = {}
    if a.reps:
        over["reps"] = a.reps
    if a.policies:
        over["prefetch_policies"] = tuple(a.policies.split(","))
    if a.shares:
        over["netram_shares"] = tuple(share_arg(s) for s in a.shares.split(","))
    if a.passes:
        over["passes"] = {**profiles.get(a.profile).passes, **passes_arg(a.passes)}
    return experiment(profiles.get(a.profile, **over))


def calibrate_only(base, a):
    if a.flash_speed not in base.flash_speeds:
        raise SystemExit(f"prefetch: --flash-speed one of {', '.join(base.flash_speeds)}")
    calib, stop = calibrate_speed(base, a.flash_speed)
    calibrate.save(a.out, base, calib)
    return 3 if stop else 0


def main(argv=None):
    a = parse_args(argv)
    base = profile_of(a)
    units = parse_units(a.units, base)
    os.makedirs(a.out, exist_ok=True)
    n2llab.load_modules()
    configs.no_other_swap()

    missing = check_policies(base.prefetch_policies)
    if missing:
        for line in missing:
            print(f"== prefetch policy unknown to this module: {line}", flush=True)
        print("== no run: every policy of the experiment must exist (--policies picks "
              "others)", flush=True)
        return 5
    if a.calibrate_only:
        return calibrate_only(base, a)
    run = runner.resumed_run(a.out, base) if a.resume else None
    if not run:
        run = calibrated_run(base, units, a.calibration and a.calibration.split(","))
        if not run:
            print("== calibration: media off target, no run", flush=True)
            return 3
    calibs = run["calibrations"]
    staged = runner.stage_workloads(base)
    run["environment"]["staged_in_tmpfs"] = sorted(staged.names)
    todo = run_order(base, units)
    done = {cell_key(c["config"], c["workload"], c["rep"], c["point"]) for c in run["cells"]}
    progress = PointProgress(len(todo), a.out, run, run["cells"],
                             gate=base.pilot_gate and not a.no_pilot_gate)
    try:
        for rep, (config, workload, point) in todo:
            if cell_key(config, workload, rep, point) in done:
                continue
            progress.point = point
            runner.run_block(profile_at(base, point, calibs), config, (workload,), rep,
                             a.timeout, progress, staged)
    except pilot.Stop as e:
        return runner.stopped_by_gate(progress, e)
    bad = results.bad_runs(progress.cells)
    progress.say(f"== {len(progress.cells) - len(bad)} runs ok, {len(bad)} failed or wrong")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
