# SPDX-License-Identifier: GPL-2.0-only
"""The sweep: its points, their order and profiles, how it is shared
between guests, and its report from a synthetic run."""
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "userspace", "pylib"))
import merge  # noqa: E402
import profiles  # noqa: E402
import results  # noqa: E402
import sweep  # noqa: E402
import sweep_report  # noqa: E402

REPORT = os.path.join(os.path.dirname(sweep.__file__), "report.py")


def test_each_configuration_runs_at_the_points_that_change_its_media():
    runs = sweep.latency_points("radix")
    by = {}
    for config, workload, point in runs:
        assert workload == "radix"
        by.setdefault(config, []).append((point["net_delay_us"], point["flash_lat_us"]))
    assert by["nswap"] == [(25, None), (50, None), (100, None)]
    assert by["flash"] == [(None, 80), (None, 160)]
    grid = [(d, lat) for d in (25, 50, 100) for lat in (80, 160)]
    assert by["n2l-none"] == by["n2l-rr"] == by["n2l-lrs"] == grid
    assert len(runs) == len(set(json.dumps(r) for r in runs)) == 23


def test_parallelism_runs_wl4_at_every_process_count_with_and_without_prefetching():
    runs = sweep.parallelism_points()
    assert {(c, p["procs"]) for c, w, p in runs if w == "wl4"} == \
        {(c, n) for c in ("n2l-none", "n2l-lrs") for n in (1, 2, 4, 8, 16)}


def test_order_is_shuffled_per_rep_and_repeats_for_a_seed():
    units = [("latency-radix", 0), ("parallelism", 0), ("latency-radix", 1)]
    first, again = sweep.run_order(units, 1), sweep.run_order(units, 1)
    assert first == again
    rep0 = [run for rep, run in first if rep == 0]
    rep1 = [run for rep, run in first if rep == 1]
    assert [rep for rep, _ in first] == [0] * len(rep0) + [1] * len(rep1)
    assert sorted(map(json.dumps, rep0)) == sorted(
        map(json.dumps, sweep.latency_points("radix") + sweep.parallelism_points()))
    assert sorted(map(json.dumps, rep1)) == sorted(map(json.dumps, sweep.latency_points("radix")))
    assert rep1 != sweep.latency_points("radix") and rep1 != \
        [run for run in rep0 if run[1] == "radix"]


def test_a_point_sets_only_what_it_names():
    base = profiles.get("sweep", flash_keys={"read_lat_us": 115, "read_mbps": 48,
                                             "write_lat_us": 140, "write_mbps": 19})
    p = sweep.profile_at(base, {"net_delay_us": 25, "flash_lat_us": 160, "procs": None})
    assert p.media()["net_delay_us"] == 25 and p.procs == base.procs
    assert p.flash_keys == {"read_lat_us": 160, "read_mbps": 48,
                            "write_lat_us": 240, "write_mbps": 19}
    assert base.flash_keys["read_lat_us"] == 115
    q = sweep.profile_at(base, {"net_delay_us": None, "flash_lat_us": None, "procs": 16})
    assert q.procs == 16 and q.media() == base.media() and q.flash_keys == base.flash_keys
    assert base.media()["net_delay_us"] == profiles.PAPER["net_delay_us"]


def test_units_are_shared_between_guests_whole_and_reps_apart():
    units = sweep.all_units(3)
    groups = sweep.split_units(units, 2)
    assert len(groups) == 2
    assert sorted(u for g in groups for u in g) == sorted(units)
    # the costliest part's reps do not all fall to one boot
    hpl = [[r for p, r in g if p == "latency-hpl"] for g in groups]
    assert all(hpl)
    assert sweep.parse_units(profiles.format_units(groups[0]), 3) == groups[0]
    assert sweep.parse_units(None, 2) == sweep.all_units(2)
    for bad in ("latency-radix", "nope/0", "parallelism/x"):
        with pytest.raises(SystemExit):
            sweep.parse_units(bad, 3)


def cell(config, workload, point, rep, seconds, **kw):
    return dict({"config": config, "workload": workload, "rep": rep, "status": "ok",
                 "seconds": seconds, "point": point}, **kw)


def synthetic_sweep():
    """Radix: prefetching pays where the link is slow (delay 100), costs
    where it is fast (25); WL4's parallelism grows with its processes."""
    cells = []
    for rep in range(2):
        for config, w, point in sweep.latency_points("radix"):
            t = {"nswap": 2 * point["net_delay_us"] if point["net_delay_us"] else 0,
                 "flash": point["flash_lat_us"] or 0, "n2l-none": 200}.get(config)
            if t is None:
                t = {25: 240, 50: 200, 100: 150}[point["net_delay_us"]]
            cells.append(cell(config, w, point, rep, t / 10 + rep * 0.02))
        for config, w, point in sweep.parallelism_points():
            n = point["procs"]
            cells.append(cell(config, w, point, rep, 5.0, procs=n, read_parallelism=n / 2,
                              read_parallelism_time=n / 4))
    return {"benchmark": "nswap2l sweep", "date": "2026-11-25T00:00:00Z",
            "workloads": ["radix", "wl4"], "configs": {},
            "environment": {"kernel": "6.1", "profile": {"name": "sweep"}},
            "point_media": {"netram": {"25": 150.0, "100": 250.0}, "flash": {"80": 110.0}},
            "cells": cells}


def test_report_tables_and_the_answer():
    md = sweep_report.report_md(synthetic_sweep(), [])
    # delay 100, Flash 80: nswap 20.0, flash 8.0, none 20.0, rr and lrs 15.0;
    # pairs 15/20 and 15.02/20.02, logs -0.287682, -0.287349: se 0.000167,
    # half 12.706 x that = 0.002117 around 0.750 -> [0.7485, 0.7517]
    assert "| 100 | 80 | 20.01 (20.00–20.02) | 8.01 (8.00–8.02) | 20.01 (20.00–20.02) | " \
        "15.01 (15.00–15.02) | 15.01 (15.00–15.02) | 0.750 [0.749–0.752] faster | " \
        "0.750 [0.749–0.752] faster |" in md
    # delay 25: none 20.0 against 24.0: slower
    assert "| 25 | 160 | 5.01 (5.00–5.02) | 16.01 (16.00–16.02) | 20.01 (20.00–20.02) | " \
        "24.01 (24.00–24.02) |" in md
    assert "| 50 | 80 | 10.01 (10.00–10.02) | 8.01 (8.00–8.02) | 20.01 (20.00–20.02) | " \
        "20.01 (20.00–20.02) | 20.01 (20.00–20.02) | 1.000 [1.000–1.000] no difference |" \
        in md
    assert "runs of one cell differ" not in md
    # pooled: 4 pairs at 1.2, 4 at 1, 4 at 0.75: exp((4 ln 1.2 + 4 ln 0.75) / 12)
    # = 0.966, an interval that takes in 1
    assert "- Radix: n2l-lrs / n2l-none 0.966 [0.849–1.098] inconclusive (12 pairs), " \
        "pooled over every point; at a point alone faster at 100/80, 100/160, slower " \
        "at 25/80, 25/160 (delay/latency, us)" in md
    assert "| Network RAM, 25 us each way | 150.0 |" in md
    assert "| 16 | 8.00 | 4.00 | 5.00 | 8.00 | 4.00 | 5.00 |" in md


def test_one_run_a_point_calls_nothing():
    run = synthetic_sweep()
    run["cells"] = [c for c in run["cells"] if c["rep"] == 0]
    md = sweep_report.report_md(run, [])
    assert "0.750 [—] too few pairs" in md and "faster at none, slower at none" in md


def test_csv_has_the_point_and_keeps_the_workload_procs():
    rows = results.cells_to_csv([cell("n2l-rr", "radix", {"net_delay_us": 25,
                                                           "flash_lat_us": 80, "procs": None},
                                      0, 1.0, procs=2)]).splitlines()
    row = dict(zip(rows[0].split(","), rows[1].split(",")))
    assert (row["net_delay_us"], row["flash_lat_us"], row["procs"]) == ("25", "80", "2")


def test_guests_merge_and_report_with_plots(tmp_path):
    run = synthetic_sweep()
    halves = []
    for i, keep in enumerate(("radix", "wl4")):
        part = dict(run, cells=[c for c in run["cells"] if c["workload"] == keep])
        part["environment"] = dict(run["environment"], calibration={})
        d = tmp_path / f"g{i}"
        d.mkdir()
        (d / "results.json").write_text(json.dumps(part))
        halves.append(str(d))
    out = tmp_path / "out"
    assert merge.main([str(out)] + halves) == 0
    merged = json.loads((out / "results.json").read_text())
    assert merged["point_media"] == run["point_media"] and len(merged["cells"]) == len(run["cells"])
    proc = subprocess.run([sys.executable, REPORT, str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    md = (out / "report.md").read_text()
    assert md.startswith("# Nswap2L sweep") and "0.750 [0.749–0.752] faster" in md
    if "sweep-latency.png" in proc.stdout:
        assert (out / "sweep-latency.png").stat().st_size > 0
        assert (out / "sweep-parallelism.png").stat().st_size > 0
