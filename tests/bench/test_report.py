# SPDX-License-Identifier: GPL-2.0-only
"""The report: tables in the paper's shape from a synthetic run."""
import json
import os
import subprocess
import sys

import report

REPORT = os.path.join(os.path.dirname(report.__file__), "report.py")


def synthetic_run():
    cells = []
    times = {"disk": 60.0, "flash": 6.0, "nswap": 3.0, "n2l-none": 2.5, "n2l-lrs": 2.0}
    for w, factor in (("wl1", 1), ("radix", 2)):
        for c, t in times.items():
            for rep in range(2):
                cell = {"config": c, "workload": w, "rep": rep, "status": "ok",
                        "seconds": t * factor + rep * 0.2, "reason": ""}
                if c.startswith("n2l"):
                    cell["read_parallelism"] = 1.5 if c == "n2l-none" else 3.25
                if c == "n2l-lrs":
                    cell["read_prefetch_ratio"] = 0.5
                cells.append(cell)
    cells.append({"config": "flash", "workload": "radix", "rep": 2, "status": "wrong",
                  "seconds": None, "reason": "unsorted"})
    return {"date": "2026-11-22T00:00:00Z", "workloads": ["wl1", "radix", "hpl"],
            "configs": {c: c for c in times},
            "environment": {"kernel": "6.1", "mode": "icount", "profile": {"name": "t"},
                            "calibration": {"disk": {"read_4k_qd1_us": 8000,
                                                     "read_1m_mib_s": 90}}},
            "cells": cells}


def test_tables_hold_medians_speedups_parallelism_and_ratio():
    md = report.report_md(synthetic_run(), [])
    # wl1: disk 60.1 median, lrs 2.1 -> 28.6x; radix: 120.1 / 4.1 = 29.3x
    assert "| WL1 | 60.10 | 6.10 | 3.10 | 2.60 | 2.10 |" in md
    assert "28.6x (n2l-lrs) | 3.5x |" in md
    assert "| Radix |" in md and "29.3x (n2l-lrs) | 2.3x |" in md
    assert "| Radix | 1.50 | 3.25 | 5.4 / 13.7 |" in md
    assert "| WL1 | 0.500 |" in md


def test_missing_and_bad_runs_are_named_not_hidden():
    md = report.report_md(synthetic_run(), [])
    assert "- flash radix run 2: WRONG (unsorted)" in md
    assert "- disk hpl: no good run, no time" in md
    assert "| HPL | — | — |" in md
    assert "calibrated disk: 4 KiB read at QD1 8000 us" in md


def test_command_writes_report_and_plots(tmp_path):
    with open(tmp_path / "results.json", "w") as f:
        json.dump(synthetic_run(), f)
    p = subprocess.run([sys.executable, REPORT, str(tmp_path)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    md = (tmp_path / "report.md").read_text()
    for png in ("speedup.png", "parallelism.png"):
        assert (tmp_path / png).stat().st_size > 1000
        assert f"![{png}]({png})" in md


def test_command_without_results_fails(tmp_path):
    p = subprocess.run([sys.executable, REPORT, str(tmp_path)], capture_output=True)
    assert p.returncode != 0


def test_environment_says_how_many_runs_each_cell_got():
    run = synthetic_run()
    run["environment"]["profile"]["reps"] = 3
    md = report.report_md(run, [])
    assert "runs per cell: 3 planned, 2 to 3 done" in md
    assert "booted again" not in md
    # wl1 n2l-lrs: 2.0 and 2.2 s, 0.2 / 2.1
    assert "at most 9.5% (n2l-lrs WL1)" in md
    assert "calibrated disk: 4 KiB read at QD1 8000 us" in md
    run["environment"]["guests"] = [
        {"configs": ["disk"], "calibration": {"disk": {"read_4k_qd1_us": 8001}}},
        {"configs": ["flash"], "calibration": {}}]
    assert "calibrated disk (guest 1: disk): 4 KiB read at QD1 8001 us" in \
        report.report_md(run, [])


def test_hpl_gets_a_whole_run_row_timed_by_wall_seconds():
    run = synthetic_run()
    for c, solve, whole in (("disk", 9.6, 80.0), ("n2l-lrs", 9.6, 40.0)):
        run["cells"].append({"config": c, "workload": "hpl", "rep": 0, "status": "ok",
                             "seconds": solve, "wall_seconds": whole, "reason": ""})
    md = report.report_md(run, [])
    assert "| HPL | 9.60 | — | — | — | 9.60 |" in md
    assert "| HPL, whole hpcc run | 80.00 | — | — | — | 40.00 |" in md
    assert "2.0x (n2l-lrs) | 1.5x |" in md


def test_environment_names_a_guest_that_died_and_went_on():
    run = synthetic_run()
    run["environment"]["guests"] = [
        {"configs": ["disk"], "calibration": {}, "resumed": [{"cells_done": 7}]},
        {"configs": ["flash"], "calibration": {}, "resumed": []}]
    md = report.report_md(run, [])
    assert "the guest (guest 1: disk) died and was booted again 1 time(s), " \
        "going on after 7 cells" in md
    assert "guest 2: flash) died" not in md
