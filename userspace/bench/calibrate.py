# SPDX-License-Identifier: GPL-2.0-only
"""The media calibration every run starts with, and its gate.

fio measures reads and writes, random and sequential, at queue depth 1
and 32, 4 KiB each, and sequential 1 MiB reads and writes at queue depth
1 and 32 (profiles.CALIBRATION_CASES), on every medium the profile uses,
as its configurations use it: Network RAM over the same servers and
links, NBD over its link, Flash and the disk (4 KiB only) through the
n2lmedia models.

Network RAM is what it is: the link's shape and the guest's TCP stack.
The paper's device table sets Flash against it (reads 1.08 times
Network RAM's time, writes 1.62 times; a profile's flash_speed "fast":
0.833 both ways), so Flash is set from Network RAM as measured
(profiles.flash_keys()): the fixed cost and bandwidth of a request's
bus time make 4 KiB and 1 MiB QD32 streams take their share longer, the
latency's fixed part and its part per byte a page and 1 MiB at QD1
(less what the guest itself costs each through a model of no delay).
The disk is the model's 7200 rpm disk:
about 8 ms a random request, one at a time, sequential ones 50 or more
times cheaper.

Every case gets a target (profiles.targets(); for a merged sequential
4 KiB stream only a bound), 1 MiB as 4 KiB; one measured more than
profiles.TOLERANCE off
stops the run (gate()) where timing is exact, under instruction
counting. On a noisy wall clock the figures are recorded and the gate
only reported. results.json keeps per medium and case `target` and
`measured`.

A calibration is saved as calibration.json (save()); a later run of the
same profile and Flash speed can take it instead of calibrating (load():
the prefetch experiment's units, and a runner given --calibration)."""
import json
import os

import configs
import n2lbench
import n2llab
import profiles
from nswap2l import table_line

# The region every case runs over (profiles.CALIB_REGION_MB; the smoke
# profile's own is smaller).
REGION_MB = profiles.CALIB_REGION_MB
RAMP = "250ms"
# A random request costs the disk 8 ms: 125 a second. Idle time costs
# nothing under instruction counting, so the disk gets runs this many
# times as long as the others', for a thousand seeks.
DISK_RUNTIME_FACTOR = 8
# A case that completed no request in its window runs again once, this
# many times as long: under the wall clock a guest among busy ones can
# stall for the whole of a short window, and a medium left without a
# figure leaves Flash without a target (stop 38's pre-check).
RETRY_FACTOR = 4


def longer(runtime):
    """fio's runtime (seconds, or "<n>ms") RETRY_FACTOR times over."""
    if isinstance(runtime, str) and runtime.endswith("ms"):
        ms = int(runtime[:-2])
    else:
        ms = int(runtime) * 1000
    return f"{ms * RETRY_FACTOR}ms"


def measure(path, runtime, cases=profiles.CALIBRATION_CASES, region_mb=REGION_MB):
    """Precondition, then {case: us per request} (at QD1 the latency, at
    QD32 the time a request costs a full queue: n2lbench.us_per_request)
    for each of cases, (rw, pattern, queue depth[, block size]: 4 KiB
    if left out, as callers that measure one 4 KiB case have it). A
    queue of 32 fills in well under RAMP; under instruction counting a
    second holds thousands of 4 KiB requests of every medium but the disk, and
    about a hundred of 1 MiB, and repeats exactly."""
    n2lbench.fio(path, "write", "1M", 4, region_mb, runtime=None)
    names, jobs = [], []
    for case in cases:
        rw, pattern, qd, bs = (*case, "4k")[:4]
        names.append(profiles.case_name(rw, pattern, qd, bs))
        jobs.append((names[-1].split()[0], bs, qd))
    results = n2lbench.fio_jobs(path, jobs, region_mb, runtime=runtime, ramp=RAMP)
    empty = [i for i, res in enumerate(results) if not res["total_ios"]]
    if empty:
        again = n2lbench.fio_jobs(path, [jobs[i] for i in empty], region_mb,
                                  runtime=longer(runtime), ramp=RAMP)
        for i, res in zip(empty, again):
            results[i] = res
    return {name: n2lbench.us_per_request(res, qd)
            for name, res, (_, _, qd) in zip(names, results, jobs)}


def verdicts(calib):
    """Every case off its target: ["medium case: why", ...]."""
    bad = []
    for medium, cases in calib["media"].items():
        for name, c in cases.items():
            why = c.get("target") and profiles.off_target(c["measured"], c["target"])
            if why:
                bad.append(f"{medium} {name}: {why}")
    return bad


def record(calib, medium, measured, netram, profile):
    tg = profiles.targets(medium, netram, profile)
    calib["media"][medium] = {name: {"measured": us, "target": tg.get(name)}
                              for name, us in measured.items()}


def netram_topology(profile):
    """The link and servers the Network RAM configurations use, and a
    device over them: (device, parts to remove)."""
    link = configs.network(profile)
    parts = [link]
    region_mb = profile.calib_region_mb
    servers = configs.page_servers(link, region_mb + 8)
    parts += servers
    dev = n2llab.Device("calib-net", table_line(region_mb << 11,
                                                 servers=[s.name for s in servers]))
    parts.append(dev)
    n2llab.wait_for(lambda: dev.servers_up(len(servers)), what="servers up")
    return dev, parts


def measure_then_remove(medium, runtime, cases=profiles.CALIBRATION_CASES,
                        region_mb=REGION_MB):
    """measure() a medium made for it, and remove it whatever happens."""
    try:
        return measure(medium.path, runtime, cases, region_mb)
    finally:
        medium.remove()


def gate(calib, exact):
    """The gate's verdict, recorded in calib: the cases off target, and
    whether they stop the run (only where timing is exact)."""
    bad = verdicts(calib)
    calib["gate"] = {"off_target": bad, "tolerance": profiles.TOLERANCE,
                     "applied": exact, "passed": not bad}
    return bad and exact


def run(profile, label=""):
    """media() and its gate, each printed: (calib, the cases off target
    if they stop the run)."""
    calib = media(profile)
    print(f"== calibration{label}: {json.dumps(calib)}", flush=True)
    stop = gate(calib, exact=n2lbench.exact_timing())
    for line in calib["gate"]["off_target"]:
        print(f"== calibration off target{label}: {line}", flush=True)
    return calib, stop


def save(out_dir, profile, calib):
    with open(os.path.join(out_dir, "calibration.json"), "w") as f:
        json.dump({"profile": profile.name, "flash_speed": calib["flash_speed"],
                   "boot": n2lbench.boot_id(), "calibration": calib}, f, indent=1)


def load(path, profile, speeds=None):
    """The calibration save() wrote to path, with its path as "source".
    SystemExit if it is of another profile or of a Flash speed not in
    speeds (default: the profile's), or failed its gate where timing is
    exact."""
    with open(path) as f:
        got = json.load(f)
    if got.get("profile") != profile.name:
        raise SystemExit(f"{path} calibrated profile {got.get('profile')!r}, "
                         f"not {profile.name!r}")
    speeds = speeds or (profile.flash_speed,)
    if got.get("flash_speed") not in speeds:
        raise SystemExit(f"{path} calibrated Flash speed {got.get('flash_speed')!r}, "
                         f"not {' or '.join(speeds)}")
    if not got["calibration"]["gate"]["passed"] and n2lbench.exact_timing():
        raise SystemExit(f"{path}: its calibration failed its gate")
    got["calibration"]["source"] = path
    got["calibration"]["boot"] = got.get("boot")
    return got["calibration"]


def media(profile):
    """Calibrate every medium the profile uses, each case for the
    profile's calib_ms over its calib_region_mb. Returns
    {"flash_keys": the Flash model's keys, "media": {medium: {case:
    {"measured", "target"}}}}; Network RAM is measured whether or not a
    configuration uses it, as Flash is set from it."""
    used = configs.media_used(profile)
    runtime, region = f"{profile.calib_ms}ms", profile.calib_region_mb
    calib = {"media": {}}
    dev, parts = netram_topology(profile)
    try:
        netram = measure(dev.path, runtime, region_mb=region)
    finally:
        configs.remove_parts(parts)
    record(calib, "netram", netram, netram, profile)
    # the model's own defaults are 100 us: no delay at all, unlimited
    zero_us = measure_then_remove(configs.flash(profile, region, "calib-zero",
                                                keys={"read_lat_us": 0, "write_lat_us": 0}),
                                  runtime, profiles.ZERO_CASES, region)
    calib["flash_zero_model"] = zero_us
    calib["flash_keys"] = profiles.flash_keys(netram, zero_us, profile.flash_speed)
    calib["flash_speed"] = profile.flash_speed
    if "flash" in used:
        f = configs.flash(profile, region, "calib-flash", keys=calib["flash_keys"])
        record(calib, "flash", measure_then_remove(f, runtime, region_mb=region),
               netram, profile)
    if "disk" in used:
        d = configs.disk(profile, region, "calib-disk")
        disk_ms = profile.calib_ms * DISK_RUNTIME_FACTOR
        record(calib, "disk", measure_then_remove(d, f"{disk_ms}ms", profiles.SMALL_CASES,
                                                  region),
               netram, profile)
    for peer in sorted(set(configs.PEERS) & used):
        calibrate_peer(calib, peer, profile, netram, runtime, region)
    return calib


def calibrate_peer(calib, peer, profile, netram, runtime, region_mb):
    """NBD and NVMe/TCP are comparators, measured and not gated: an export
    that will not start (nbdkit once did not listen within a minute, in
    one of three instruction-counted calibrations) is recorded, and the
    run goes on (the peer's cells then fail, each saying why)."""
    link = configs.network(profile)
    try:
        export = configs.PEERS[peer](link, region_mb)
        record(calib, peer, measure_then_remove(export, runtime, region_mb=region_mb),
               netram, profile)
    except (n2llab.CommandError, AssertionError, OSError) as e:
        calib["media"][peer] = {}
        calib[f"{peer}_error"] = str(e)[-2000:]
        print(f"== calibration: {peer} not measured: {e}", flush=True)
    finally:
        link.remove()
