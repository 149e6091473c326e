"""The benchmark runner end to end, on the tiny smoke profile: every
kind of configuration (disk, Flash, Nswap, Nswap2L without prefetching
and with LRS, NBD, zram) runs the random-access workload, verifying its
result, and the report comes out of it (test_workloads.py runs the other
workloads)."""
import json
import os
import sys

import n2l
from n2l import run

BENCH = os.path.join(n2l.REPO, "userspace", "bench")
# Kept with the guest's logs (build/vm/tests/bench-smoke on the host).
OUT = os.path.join(os.environ.get("N2L_OUT", "/tmp/n2l"), "bench-smoke")
sys.path.insert(0, BENCH)
import pilot  # noqa: E402
import profiles  # noqa: E402
import results  # noqa: E402


def runner(out, *args):
    python = os.environ.get("N2L_PYTHON", sys.executable)
    p = run(f"{python} {BENCH}/runner.py --profile smoke --out {out} --timeout 600 "
            + " ".join(args), timeout=5400)
    assert p.returncode == 0, (p.stdout + p.stderr)[-6000:]
    with open(f"{out}/results.json") as f:
        return json.load(f)


def assert_accounted(c):
    """The run's own account: the workload's CPU and faults from its
    cgroup, the servers' CPU where there are servers, the device's reads
    and their parallelism over time."""
    limit = profiles.get("smoke").limit(c["workload"])
    assert c["cpu_workload_s"] > 0 and c["cpu_busy_s"] >= c["cpu_workload_s"], c
    assert c["major_faults"] > 0 and c["memory_events"]["high"] > 0, c
    assert limit * 0.9 <= c["memory_peak_mb"] <= 2 * limit, c
    assert c["device_reads"] > 0, c
    # The block layer counts a read's time in whole jiffies: zram's reads
    # (a page decompressed in the caller) count only when one straddles a
    # tick, and on an idle host none may (0.00 in 3 of 3 runs).
    assert c["read_parallelism_time"] > 0 or (
        c["config"] == "zram" and c["read_parallelism_time"] == 0), c
    if c["config"] in ("nswap", "nbd"):      # all of it through a server
        assert c["cpu_servers_s"] > 0, c


def test_smoke_profile_runs_every_config_and_reports():
    res = runner(OUT)
    smoke = profiles.get("smoke")
    cells = res["cells"]
    assert len(cells) == len(smoke.configs) * len(smoke.workloads)
    assert [c for c in cells if c["status"] != "ok"] == []
    calib = res["environment"]["calibration"]
    assert set(calib["media"]) == {"flash", "disk", "netram", "nbd"}
    assert len(calib["media"]["nbd"]) == 12 and all(      # measured, not gated
        c["measured"] and not c["target"] for c in calib["media"]["nbd"].values()), calib
    for medium, cases in (("flash", 12), ("disk", 8)):   # the disk: 4 KiB only
        assert len(calib["media"][medium]) == cases and all(
            c["target"] and c["measured"] for c in calib["media"][medium].values()), calib
    # set from Network RAM as measured; the gate recorded, and applied only
    # where timing is exact (this guest's clock is the wall clock)
    assert calib["flash_keys"]["read_mbps"] > 0 and calib["flash_keys"]["write_lat_us"] >= 0
    assert calib["gate"]["applied"] is (os.environ.get("N2L_ICOUNT") == "1")
    assert res["environment"]["staged_in_tmpfs"] == ["wl2"]
    # saved for later runs of this boot (test_workloads.py takes it)
    with open(f"{OUT}/calibration.json") as f:
        saved = json.load(f)
    assert saved["calibration"] == calib and saved["boot"] == cells[0]["boot"], saved
    for c in cells:
        assert c["seconds"] > 0 and c["swap_out_mb"] > 0, c
        if c["config"].startswith("n2l-") and c["config"] != "n2l-none":
            assert "prefetched" in c, c
        if c["config"].startswith("n2l-"):
            # the engine's effort: counters from a module that has them,
            # None from one that has not; the slots read, Network RAM
            assert {"prefetch_target", "prefetch_activations"} <= set(c), c
            assert c["read_slots"] > 0 and c["netram_mb"] >= 8, c
        if c["config"] == "n2l-lrs":
            # smoke does not apply the pilot gate: it stops nothing and
            # flags what would have stopped it, if anything
            assert c["pilot"]["stop"] == [] and isinstance(c["pilot"]["flag"], list), c
        assert c["boot"] == cells[0]["boot"], c
        assert_accounted(c)
    assert any(c["prefetched"] > 0 for c in cells if c["config"] == "n2l-lrs")
    # each plan recorded (the tracepoint): lrs asked at every activation
    lrs = [c for c in cells if c["config"] == "n2l-lrs"]
    assert all(c["plans_asking"] >= c["prefetch_activations"] > 0 for c in lrs
               if c["prefetched"]), lrs
    assert all(0 <= c["idle_pm_asking"] <= 1000 for c in lrs if c["plans_asking"]), lrs
    # one seed: every configuration computed the same result
    assert results.checksum_disagreements(cells) == [] and all(c["checksum"] for c in cells)
    ran = [c["config"] for c in sorted(cells, key=lambda c: c["seq"])]
    assert sorted(c["seq"] for c in cells) == list(range(len(cells)))
    assert ran == smoke.config_order(0) and ran != list(smoke.configs)
    p = run(f"{os.environ.get('N2L_PYTHON', sys.executable)} {BENCH}/report.py {OUT}")
    assert p.returncode == 0, p.stderr
    md = open(f"{OUT}/report.md").read()
    assert "## Speedup over disk swap" in md and "no good run" not in md
    assert "## Pilot gate" in md and "estimate [95% CI]" in md
    gate = pilot.lines(cells)       # the runs flagged, each with its reasons
    assert all(line in md for line in gate) and (gate or "no run stopped or flagged" in md)
