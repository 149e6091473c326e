# SPDX-License-Identifier: GPL-2.0-only
"""Sharing a profile's configurations between guests, and merging their runs."""
import json
import os
import subprocess
import sys

import pytest

import merge
import profiles


def test_split_keeps_each_workloads_rep_whole_and_balances_cost():
    units = profiles.get("full", reps=3).all_units()
    groups = profiles.split(units, 2)
    assert sorted(u for g in groups for u in g) == sorted(units)
    cost = [sum(profiles.COST[w] for w, _ in g) for g in groups]
    assert abs(cost[0] - cost[1]) <= max(profiles.COST.values()), (groups, cost)
    # HPL's reps, the costliest units, fall to different guests (boots)
    assert all(any(w == "hpl" for w, _ in g) for g in groups), groups


@pytest.mark.parametrize("n", [1, 3, 20])
def test_split_never_makes_empty_groups(n):
    groups = profiles.split((("wl1", 0), ("is", 0), ("radix", 1)), n)
    assert len(groups) == min(n, 3) and all(groups)
    assert profiles.split((("is", 0), ("wl1", 1)), 1) == [[("is", 0), ("wl1", 1)]]


def test_units_round_trip_and_bad_units_are_refused():
    units = (("wl1", 0), ("hpl", 2))
    assert profiles.parse_units(profiles.format_units(units)) == units
    for bad in ("wl1", "wl9/0", "wl1/x", "wl1/0,"):
        with pytest.raises(ValueError, match="workload>/<rep"):
            profiles.parse_units(bad)


def test_a_guests_units_select_its_cells_of_every_configuration():
    p = profiles.get("quick", reps=2, units=(("wl2", 1), ("hpl", 0)))
    cells = p.cells()
    assert {(w, r) for _, w, r in cells} == {("wl2", 1), ("hpl", 0)}
    assert len(cells) == 2 * len(p.configs)
    assert [(c, w, r) for r, c, ws in p.blocks() for w in ws] == cells


def guest_run(configs, calib_us, date):
    cells = [{"config": c, "workload": w, "rep": r, "status": "ok", "seconds": 1.0}
             for r in (1, 0) for c in configs for w in ("wl2", "wl1")]
    return {"benchmark": "b", "date": date, "configs": {c: c.upper() for c in configs},
            "workloads": ["wl1", "wl2"], "cells": cells,
            "environment": {"profile": {"name": "full"},
                            "calibration": {"flash": {"read_4k_qd1_us": calib_us}}}}


def test_merge_unites_the_workloads_of_guests_in_profile_order():
    a = guest_run(["disk", "flash"], 1.0, "d")
    b = guest_run(["disk", "flash"], 1.0, "d")
    a["workloads"], b["workloads"] = ["hpl"], ["wl2", "wl1"]
    a["units"], b["units"] = "hpl/0", "wl2/0,wl1/0"
    a["environment"]["staged_in_tmpfs"] = []          # hpl is a script
    b["environment"]["staged_in_tmpfs"] = ["wl1", "wl2"]
    run = merge.merge_runs([a, b])
    assert run["workloads"] == ["wl1", "wl2", "hpl"]
    assert [g["units"] for g in run["environment"]["guests"]] == ["hpl/0", "wl2/0,wl1/0"]
    assert run["environment"]["staged_in_tmpfs"] == ["wl1", "wl2"]


def test_merge_orders_cells_and_keeps_each_guests_calibration():
    run = merge.merge_runs([guest_run(["zram", "flash"], 97.0, "2026-11-22T10:00:00Z"),
                            guest_run(["disk"], 98.0, "2026-11-22T09:59:00Z")])
    assert list(run["configs"]) == ["disk", "flash", "zram"]
    assert run["date"] == "2026-11-22T09:59:00Z"
    keys = [(c["rep"], c["config"], c["workload"]) for c in run["cells"]]
    assert keys[:3] == [(0, "disk", "wl1"), (0, "disk", "wl2"), (0, "flash", "wl1")]
    assert len(keys) == 12 and keys == sorted(keys, key=lambda k: (
        k[0], profiles.CONFIG_NAMES.index(k[1]), ["wl1", "wl2"].index(k[2])))
    assert [g["calibration"]["flash"]["read_4k_qd1_us"]
            for g in run["environment"]["guests"]] == [97.0, 98.0]


def test_merge_refuses_runs_of_different_profiles_or_none():
    other = guest_run(["disk"], 1, "d")
    other["environment"]["profile"]["name"] = "quick"
    with pytest.raises(ValueError, match="different profiles"):
        merge.merge_runs([guest_run(["flash"], 1, "d"), other])
    with pytest.raises(ValueError, match="no runs"):
        merge.merge_runs([])


def test_merge_cli_writes_json_and_csv_and_names_a_missing_guest(tmp_path):
    for i, configs in enumerate((["disk"], ["flash"])):
        d = tmp_path / f"g{i}"
        d.mkdir()
        (d / "results.json").write_text(json.dumps(guest_run(configs, 1, "d")))
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, os.path.join(os.path.dirname(merge.__file__), "merge.py"),
                        str(out), str(tmp_path / "g0"), str(tmp_path / "g1"),
                        str(tmp_path / "gone")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "gone/results.json is missing" in p.stderr
    run = json.loads((out / "results.json").read_text())
    assert len(run["cells"]) == 8
    assert (out / "results.csv").read_text().count("\n") == 9


def test_hpl_gets_its_own_limit_and_swap_covers_it():
    full = profiles.get("full")
    assert full.limit("hpl") == 88 and full.limit("wl2") == full.limit_mb == 12
    assert full.swap_mb() == 6 * 88
    assert profiles.get("full", workloads=("wl2",)).swap_mb() == 6 * 12
