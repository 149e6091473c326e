"""Every workload but the smoke profile's own (test_bench.py) runs under
the benchmark runner on Flash swap, in the guest, verifying its result:
WL1, WL4, Radix, IS and HPL (hpcc) each swap and finish correctly."""
from test_bench import OUT, runner
import profiles  # noqa: E402 (test_bench puts the runner on the path)


def test_every_workload_runs_and_verifies():
    others = [w for w in profiles.WORKLOADS if w not in profiles.get("smoke").workloads]
    res = runner(f"{OUT}-flash", "--configs", "flash", "--workloads", ",".join(others))
    assert [(c["workload"], c["status"]) for c in res["cells"]] == \
        [(w, "ok") for w in others], res["cells"]
    assert all(c["swap_out_mb"] > 0 for c in res["cells"]), res["cells"]
