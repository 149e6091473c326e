"""The benchmark runner end to end, on the tiny smoke profile: every
configuration (disk, Flash, Nswap, Nswap2L with each prefetch policy,
NBD, zram) runs the random-access workload, verifying its result, and the
report comes out of it (test_workloads.py runs the other workloads)."""
import json
import os
import sys

import n2l
from n2l import run

BENCH = os.path.join(n2l.REPO, "userspace", "bench")
# Kept with the guest's logs (build/vm/tests/bench-smoke on the host).
OUT = os.path.join(os.environ.get("N2L_OUT", "/tmp/n2l"), "bench-smoke")
sys.path.insert(0, BENCH)
import profiles  # noqa: E402


def runner(out, *args):
    python = os.environ.get("N2L_PYTHON", sys.executable)
    p = run(f"{python} {BENCH}/runner.py --profile smoke --out {out} --timeout 600 "
            + " ".join(args), timeout=5400)
    assert p.returncode == 0, (p.stdout + p.stderr)[-6000:]
    with open(f"{out}/results.json") as f:
        return json.load(f)


def test_smoke_profile_runs_every_config_and_reports():
    res = runner(OUT)
    smoke = profiles.get("smoke")
    cells = res["cells"]
    assert len(cells) == len(smoke.configs) * len(smoke.workloads)
    assert [c for c in cells if c["status"] != "ok"] == []
    assert set(res["environment"]["calibration"]) == {"flash", "disk", "netram", "nbd"}
    for c in cells:
        assert c["seconds"] > 0 and c["swap_out_mb"] > 0, c
        if c["config"].startswith("n2l-") and c["config"] != "n2l-none":
            assert "prefetched" in c, c
    assert any(c["prefetched"] > 0 for c in cells if c["config"] == "n2l-lrs")
    p = run(f"{os.environ.get('N2L_PYTHON', sys.executable)} {BENCH}/report.py {OUT}")
    assert p.returncode == 0, p.stderr
    md = open(f"{OUT}/report.md").read()
    assert "## Speedup over disk swap" in md and "no good run" not in md
