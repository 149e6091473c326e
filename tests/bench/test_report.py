# SPDX-License-Identifier: GPL-2.0-only
"""The report: tables in the paper's shape from a synthetic run."""
import json
import os
import subprocess
import sys

import report

REPORT = os.path.join(os.path.dirname(report.__file__), "report.py")


def calibration(disk_us):
    return {"media": {"disk": {"randread 4k qd32": {"measured": disk_us,
                                                    "target": {"us": 7981.0}}},
                      "netram": {"randread 4k qd1": {"measured": 201.5, "target": None}}},
            "flash_keys": {"read_lat_us": 150},
            "gate": {"passed": disk_us < 9178, "applied": True,
                     "off_target": [] if disk_us < 9178 else ["disk ..."]}}


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
                            "calibration": calibration(8000.0)},
            "cells": cells}


def test_tables_hold_medians_speedups_parallelism_and_ratio():
    md = report.report_md(synthetic_run(), [])
    # wl1: disk 60.1 median, lrs 2.1 -> 28.6x; radix: 120.1 / 4.1 = 29.3x
    assert "| WL1 | 60.10 (60.00–60.20) | 6.10 (6.00–6.20) | 3.10 (3.00–3.20) | " \
        "2.60 (2.50–2.70) | 2.10 (2.00–2.20) |" in md
    # every configuration's own speedup, none picked as best after the fact
    assert "| WL1 | 9.9x | 19.4x | 23.1x | 28.6x |" in md and "best" not in md
    # against the paper: its Nswap2L (to NW RAM only) is our nswap
    assert "| WL1 | 19.4x | 3.5x | 9.9x | 2.7x |" in md
    assert "| Radix | 19.7x | 2.3x | 9.9x | 1.7x |" in md
    # at issue / over time (no time-averaged figure in this run)
    assert "| Radix | 1.50 / — | 3.25 / — | 5.4 / 13.7 |" in md
    assert "| WL1 | 0.500 / — |" in md


def test_missing_and_bad_runs_are_named_not_hidden():
    md = report.report_md(synthetic_run(), [])
    assert "- flash radix run 2: WRONG (unsorted)" in md
    assert "- disk hpl: no good run, no time" in md
    assert "| HPL | — | — |" in md
    assert "| 1 | disk | randread 4k qd32 | 7981.0 | 8000.0 | ok |" in md
    assert "| 1 | netram | randread 4k qd1 | — | 201.5 | — |" in md
    assert 'Flash model, set from Network RAM as measured: {"read_lat_us": 150}' in md
    assert "calibration gate: every medium within its target" in md
    run = synthetic_run()
    run["environment"]["calibration"]["nbd_error"] = "server 10.77.1.2:10809 did not listen:\n"
    run["environment"]["calibration"]["nvme_error"] = "timed out after 30s waiting for x\n"
    md = report.report_md(run, [])
    assert "- NBD not calibrated: server 10.77.1.2:10809 did not listen:" in md
    assert "- NVMe/TCP not calibrated: timed out after 30s waiting for x" in md


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
    run["environment"]["guests"] = [
        {"configs": ["disk"], "calibration": calibration(9200.0)},
        {"configs": ["flash"], "calibration": {}}]
    md = report.report_md(run, [])
    assert "calibration gate (guest 1: disk): 1 case(s) off target" in md
    assert "| 1 | disk | randread 4k qd32 | 7981.0 | 9200.0 | OFF: 9200.0 us, target " \
        "7981.0 us +-15% |" in md


def test_hpl_gets_a_whole_run_row_timed_by_wall_seconds():
    run = synthetic_run()
    for c, solve, whole in (("disk", 9.6, 80.0), ("n2l-lrs", 9.6, 40.0)):
        run["cells"].append({"config": c, "workload": "hpl", "rep": 0, "status": "ok",
                             "seconds": solve, "wall_seconds": whole, "reason": ""})
    md = report.report_md(run, [])
    assert "| HPL | 9.60 (9.60–9.60) | — | — | — | 9.60 (9.60–9.60) |" in md
    assert "| HPL, whole run | 80.00 (80.00–80.00) | — | — | — | 40.00 (40.00–40.00) |" in md
    assert "| HPL, whole run | — | — | — | 2.0x |" in md
    assert "| HPL | — | 1.5x | — | 1.4x |" in md


def test_environment_names_a_guest_that_died_and_went_on():
    run = synthetic_run()
    run["environment"]["guests"] = [
        {"configs": ["disk"], "calibration": {}, "resumed": [{"cells_done": 7}]},
        {"configs": ["flash"], "calibration": {}, "resumed": []}]
    md = report.report_md(run, [])
    assert "the guest (guest 1: disk) died and was booted again 1 time(s), " \
        "going on after 7 cells" in md
    assert "guest 2: flash) died" not in md


def test_guests_are_named_by_their_units():
    run = synthetic_run()
    run["environment"]["guests"] = [
        {"units": "wl1/0,radix/1", "calibration": calibration(7000.0)},
        {"units": "hpl/0", "calibration": {}}]
    assert "calibration gate (guest 1: wl1/0,radix/1): every medium within" in \
        report.report_md(run, [])


def test_differences_are_paired_estimates_with_intervals():
    md = report.report_md(synthetic_run(), [])
    # lrs 2.0, 2.2 against none 2.5, 2.7: 0.800 0.815, log mean -0.213969,
    # half width 12.706 x 0.009175 = 0.116577 (test_stats.py)
    assert "| WL1 | n2l-lrs / n2l-none | 0.800 0.815 | 0.807 [0.719–0.907] | faster |" in md
    # none against nswap on radix: 5.0/6.0, 5.2/6.2, logs -0.182322,
    # -0.175891: mean -0.179107 (0.836), se 0.003216, half 12.706 x that =
    # 0.040857 -> [0.803, 0.871]
    assert "| Radix | n2l-none / nswap | 0.833 0.839 | 0.836 [0.803–0.871] | faster |" in md
    # flash against disk on radix: 12.0/120.0, 12.2/120.2, rep 2 is wrong
    assert "| Radix | flash / disk | 0.100 0.101 |" in md
    assert "max–min" not in md and "twice the larger spread" not in md
    assert "only where the whole interval lies within ±1%" in md


def test_cpu_memory_and_every_run_are_reported():
    run = synthetic_run()
    for c in run["cells"]:
        c.update(cpu_workload_s=5.0, cpu_servers_s=1.25, memory_peak_mb=12.5,
                 swap_out_mb=300.0, memory_events={"high": 40, "max": 0}, seq=3,
                 checksum="abc")
    md = report.report_md(run, [])
    assert "| WL1 | nswap | 5.00 | 1.25 | — | — | — | — |" in md
    assert "| WL1 | nswap | 300.0 | — | — | 12.5 | 40.0 |" in md
    assert "| n2l-lrs | WL1 | 1 | 3 | ok | 2.200 | — | abc |" in md
    assert "every good run of a workload computed the same checksum" in md
    run["cells"][0]["checksum"] = "abd"
    md = report.report_md(run, [])
    assert "- WL1: abd from disk 0; abc from disk 1, flash 0" in md


def test_scale_says_which_runs_fall_short_of_the_floor():
    run = synthetic_run()
    run["environment"]["profile"]["prefetch_args"] = ["interval_ms", "100", "percent", "10"]
    for c in run["cells"]:
        big = c["workload"] == "radix"
        c["swap_in_mb"] = 300.0 if big else 255.0
        if big and c["status"] == "ok":
            c["seconds"] = 12.0
    md = report.report_md(run, [])
    # disk runs are left out: 4 configurations x 2 reps per workload
    assert "4 prefetch intervals" not in md and "8 of 16 verified runs off the disk reach it" in md
    assert "| Radix | 8 | 300 | 12.0 | 120 | none |" in md
    # wl1: 255 MiB, a median of 2.85 s, 28.5 intervals of 0.1 s
    assert "| WL1 | 8 | 255 | 2.9 | 28 | MiB in, seconds, intervals |" in md


def test_flash_targets_are_stated_at_the_runs_flash_speed():
    # a run from before flash_speed: the paper's ratios
    assert "x 1.08 (reads) and x 1.62 (writes), flash_speed paper, the paper's ratios" \
        in report.report_md(synthetic_run(), [])
    run = synthetic_run()
    run["environment"]["calibration"]["flash_speed"] = "fast"
    md = report.report_md(run, [])
    assert "x 0.833 (reads) and x 0.833 (writes), flash_speed fast, both sizes" in md
    assert "the paper's ratios" not in md
