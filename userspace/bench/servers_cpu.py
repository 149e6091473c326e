#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Guest side of userspace/bench/servers-cpu: what charging the page
servers' CPU to the workload's clock does to the benchmark.

The benchmark runs its nswapd page servers in this guest, in network
namespaces behind netem-shaped veth links, on the one vCPU that also runs
the workload: under instruction counting every instruction of theirs is
the workload's time. A cluster runs them on other machines. Here a
workload (Radix at the quick profile's size unless told) runs on each
configuration (Nswap and Nswap2L without prefetching unless told) with
its servers

  local    in this guest, as the benchmark has them;
  remote   in another guest, on a vCPU of their own, over the link
           between the guests (n2l-vm --link; --remote).

Two guests' instruction counts are not one clock, so the remote servers
are timed on the wall clock, both placements in one boot, interleaved,
each rep in its own shuffled order. The link between the guests is
slower than the benchmark's; --match-latency sets the local link's netem
delay so that a 4 KiB read at QD1 from local servers takes what one from
the remote servers does, so that the placements differ in where the
servers' CPU goes and not in the link.

Every cell keeps the runner's account (runner.run_cell): the servers'
CPU (cpu_servers_s), softirq, the workload's own. Without --remote the
run is the benchmark's own, instruction-counted when N2L_ICOUNT=1, and
bounds what the servers' CPU costs: a run whose servers ran elsewhere
takes at least its time less the servers' CPU.
"""
import argparse
import json
import math
import os
import random
import socket
import statistics
import sys
import time
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
import stats  # noqa: E402
from nswap2l import table_line  # noqa: E402

LATENCY_CASE = ("read", "rand", 1, "4k")


def qd1_read_us(device):
    """A 4 KiB random read at QD1 on a Network RAM device, us."""
    return next(iter(calibrate.measure(device.path, 1, cases=[LATENCY_CASE]).values()))


def remote_read_us(servers):
    dev = n2llab.Device("sc-remote", table_line(calibrate.REGION_MB << 11, servers=servers))
    try:
        n2llab.wait_for(lambda: dev.servers_up(len(servers)), what="remote servers up",
                        timeout=300)
        return qd1_read_us(dev)
    finally:
        dev.remove()


def local_read_us(profile, delay_us):
    dev, parts = calibrate.netram_topology(replace(profile, net_delay_us=delay_us))
    try:
        return qd1_read_us(dev)
    finally:
        configs.remove_parts(parts)


def match_latency(profile, servers, tries=4):
    """The netem delay (each way) that gives local servers the QD1 read
    latency of the remote ones, and what was measured on the way:
    (delay, [(delay or "remote", us)]). Each way's delay adds to a read
    twice."""
    want = remote_read_us(servers)
    seen = [("remote", want)]
    delay = profile.media()["net_delay_us"]
    for _ in range(tries):
        got = local_read_us(profile, delay)
        seen.append((delay, got))
        print(f"== latency: remote {want} us, local at {delay} us each way {got} us",
              flush=True)
        if abs(got - want) <= 0.05 * want:
            break
        delay = max(0, round(delay + (want - got) / 2))
    best = min((s for s in seen if s[0] != "remote"), key=lambda s: abs(s[1] - want))
    return best[0], seen


def wait_remote(addr, plan, timeout=900):
    """Until every server of the other guest takes connections: that
    guest boots beside this one."""
    deadline = time.monotonic() + timeout
    for port, _ in plan:
        while True:
            try:
                socket.create_connection((addr, port), timeout=5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"servers_cpu: no page server at {addr}:{port}")
                time.sleep(2)


def log_ratio_ci(pairs):
    """Geometric mean of paired ratios with its 95% interval (stats.py),
    as JSON, or None."""
    est = stats.estimate([math.log(a / b) for a, b in pairs if a and b])
    if est is None:
        return None
    if est.lo is None:
        return {"ratio": est.ratio, "n": est.n}
    return {"ratio": est.ratio, "low": est.lo, "high": est.hi, "n": est.n}


def fmt(ci):
    if not ci:
        return "-"
    if "low" not in ci:
        return f"{ci['ratio']:.3f} (n=1)"
    return f"{ci['ratio']:.3f} [{ci['low']:.3f}-{ci['high']:.3f}] (n={ci['n']})"


def seconds(cells, config, placement, rep):
    for c in cells:
        if (c["config"], c["servers"], c["rep"]) == (config, placement, rep) and \
                c["status"] == "ok":
            return c["seconds"]
    return None


def summary(run):
    cells, cfgs, places = run["cells"], run["configs"], run["placements"]
    reps = sorted({c["rep"] for c in cells})
    out = {"ratios": {}, "placement": {}, "bound": {}}
    if len(cfgs) == 2:
        a, b = cfgs
        for pl in places:
            out["ratios"][f"{a}/{b} {pl}"] = log_ratio_ci(
                [(seconds(cells, a, pl, r), seconds(cells, b, pl, r)) for r in reps])
    if len(places) == 2:
        for cfg in cfgs:
            out["placement"][cfg] = log_ratio_ci(
                [(seconds(cells, cfg, "remote", r), seconds(cells, cfg, "local", r))
                 for r in reps])
    for cfg in cfgs:
        ok = [c for c in cells if c["config"] == cfg and c["servers"] == "local"
              and c["status"] == "ok"]
        if ok:
            t = statistics.mean(c["seconds"] for c in ok)
            srv = statistics.mean(c.get("cpu_servers_s", 0) for c in ok)
            sirq = statistics.mean(c.get("cpu_softirq_s", 0) for c in ok)
            out["bound"][cfg] = {"seconds": round(t, 3), "cpu_servers_s": round(srv, 3),
                                 "cpu_softirq_s": round(sirq, 3),
                                 "at_least_s": round(t - srv, 3)}
    return out


def report(run):
    s = run["summary"]
    env = run["environment"]
    lines = ["# The page servers' CPU and the workload's clock", "",
             f"{run['date']}, kernel {env['kernel']}, {env['mode']}.", "",
             f"{run['workload']} at the {run['profile']} profile's size, configurations "
             f"{', '.join(run['configs'])}, servers {', '.join(run['placements'])}, "
             f"{run['reps']} reps, each in its own shuffled order, in one boot.", ""]
    if run.get("latency"):
        lat = run["latency"]
        lines += [f"Local link matched to the remote one: netem {lat['delay_us']} us each "
                  f"way (4 KiB random read at QD1: "
                  + ", ".join(f"{d if d == 'remote' else f'local at {d} us'} {us} us"
                              for d, us in lat["measured"]) + ").", ""]
    lines += ["| ratio (geometric mean of paired runs, 95% CI) | |", "|---|---|"]
    for k, ci in s["ratios"].items():
        lines.append(f"| {k} | {fmt(ci)} |")
    for k, ci in s["placement"].items():
        lines.append(f"| {k} remote / local | {fmt(ci)} |")
    lines += ["", "| configuration, local servers | seconds | servers' CPU s | softirq s | "
              "with the servers elsewhere, at least s |", "|---|---:|---:|---:|---:|"]
    for cfg, b in s["bound"].items():
        lines.append(f"| {cfg} | {b['seconds']} | {b['cpu_servers_s']} | "
                     f"{b['cpu_softirq_s']} | {b['at_least_s']} |")
    return lines


def one_cell(profile, config, workload, rep, timeout, staged):
    """runner.run_cell() on a device of its own; a device that cannot be
    set up is a failed cell, as in runner.run_block()."""
    target = configs.SwapTarget(profile, config)
    try:
        target.setup()
    except Exception as e:  # the run goes on with the next cell
        target.teardown()
        cell = results.cell_from_run(config, workload, rep, -1,
                                     f"workload={workload} status=failed reason=setup")
        cell["output"] = str(e)
        return cell
    try:
        return runner.run_cell(profile, target, workload, rep, timeout, staged)
    finally:
        target.teardown()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="quick", choices=sorted(profiles.PROFILES))
    ap.add_argument("--workload", default="radix")
    ap.add_argument("--configs", default="nswap,n2l-none")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--remote", action="store_true",
                    help="also servers in the other guest (n2l-vm --link), whose "
                    "servers follow configs.remote_plan()")
    ap.add_argument("--match-latency", action="store_true",
                    help="with --remote: the local link's delay matched to the remote one")
    ap.add_argument("--flash-keys", help="calibration.json whose Flash keys to use, "
                    "instead of calibrating")
    ap.add_argument("--out", default=os.environ.get("N2L_OUT", "/tmp/n2l"))
    ap.add_argument("--timeout", type=int, default=3600)
    a = ap.parse_args()

    cfgs = tuple(a.configs.split(","))
    profile = profiles.get(a.profile, workloads=(a.workload,), configs=cfgs, reps=a.reps)
    os.makedirs(a.out, exist_ok=True)
    n2llab.load_modules()
    configs.no_other_swap()
    if a.flash_keys:
        with open(a.flash_keys) as f:
            calib = json.load(f)["calibration"]
    else:
        calib = calibrate.media(profile)
        calibrate.gate(calib, exact=n2lbench.exact_timing())
    profile = replace(profile, flash_keys=calib["flash_keys"])
    places = ["local"]
    plan, addr, latency = None, None, None
    local = profile
    if a.remote:
        addr = n2llab.remote_link("client") and "10.88.0.2"
        if not addr:
            raise SystemExit("servers_cpu: --remote needs the link to the servers' guest")
        plan = configs.remote_plan(profile)
        wait_remote(addr, plan)
        places.append("remote")
        if a.match_latency:
            biggest = max(mb for _, mb in plan)
            servers = [f"{addr}:{p}" for p, mb in plan if mb == biggest]
            delay, seen = match_latency(profile, servers)
            local = replace(profile, net_delay_us=delay)
            latency = {"delay_us": delay, "measured": seen}
    run = {"benchmark": "servers-cpu", "date": n2lbench.now(), "profile": profile.name,
           "workload": a.workload, "configs": list(cfgs), "placements": places,
           "reps": a.reps, "remote_plan": plan, "latency": latency,
           "environment": n2lbench.environment(calibration=calib,
                                               media=local.media()),
           "cells": []}
    staged = runner.stage_workloads(profile)
    for rep in range(a.reps):
        order = [(c, pl) for c in cfgs for pl in places]
        random.Random(f"servers-cpu/{rep}").shuffle(order)
        for cfg, pl in order:
            configs.use_remote(addr, plan if pl == "remote" else None)
            prof = local if pl == "local" else profile
            cell = one_cell(prof, cfg, a.workload, rep, a.timeout, staged)
            cell.update(servers=pl, net_delay_us=prof.media()["net_delay_us"])
            print(f"rep {rep} {cfg:9} servers {pl:6} {cell['status']} "
                  f"{cell['seconds']} s (servers' CPU {cell.get('cpu_servers_s')} s)",
                  flush=True)
            run["cells"].append(cell)
            run["summary"] = summary(run)
            with open(os.path.join(a.out, "servers-cpu.json"), "w") as f:
                json.dump(run, f, indent=1)
    configs.use_remote(None, None)
    n2lbench.write_results(a.out, "servers-cpu", run, report(run))
    return 0 if all(c["status"] == "ok" for c in run["cells"]) else 1


if __name__ == "__main__":
    sys.exit(main())
