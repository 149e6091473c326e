# SPDX-License-Identifier: GPL-2.0-only
"""A run resumed on a new machine, from its committed results alone."""
import json
import os
import subprocess
import sys

import merge
import restore

def rep_run(rep, check):
    """What a prefetch guest of one rep writes."""
    cells = [{"config": c, "workload": w, "rep": rep, "point": p, "status": "ok",
              "seconds": 10.0 + rep}
             for c in ("n2l-none@all", "n2l-lrs@all") for w, p in (("wl2", "wl2"),)]
    return {"benchmark": "prefetch", "date": f"2026-11-27T1{rep}:00:00Z", "units": str(rep),
            "configs": {"n2l-none@all": "none", "n2l-lrs@all": "lrs"},
            "workloads": ["wl2"], "cells": cells, "points": ["wl2"],
            "calibrations": {"paper": {"boot": "b0"}},
            "calibration_check": check,
            "environment": {"profile": {"name": "prefetch"}, "calibration": {"boot": "b0"},
                            "resumed": [{"cells_done": rep}]}}


def committed(tmp_path, reps, partial):
    """results/<run>/ as a session left it: reps merged, PARTIAL naming
    the guests not finished."""
    res = tmp_path / "results"
    res.mkdir()
    run = merge.merge_runs([rep_run(r, {"netram": r}) for r in reps])
    (res / "results.json").write_text(json.dumps(run))
    (res / "calibration-paper.json").write_text(json.dumps({"flash_speed": "paper"}))
    if partial:
        (res / "PARTIAL").write_text(f"PARTIAL: guests not finished: {' '.join(partial)}\n"
                                     "go on with: N2L_BENCH_RESUME=x userspace/bench/run\n")
    return res


def test_finished_guests_come_back_whole_and_the_unfinished_ones_go_on(tmp_path):
    res = committed(tmp_path, (0, 1), ["g-2", "g-3"])
    dirs = {str(r): str(tmp_path / f"g-{r + 1}") for r in range(3)}
    assert restore.restore_guests(str(res), dirs) == [dirs["0"], dirs["1"]]
    g1 = json.loads((tmp_path / "g-1" / "results.json").read_text())
    assert (tmp_path / "g-1" / "status").read_text() == "0\n"
    # rep 1 ran in guest 2, which PARTIAL names: it has its cells, no status
    assert not (tmp_path / "g-2" / "status").exists()
    g2 = json.loads((tmp_path / "g-2" / "results.json").read_text())
    assert {c["rep"] for c in g1["cells"]} == {0} and {c["rep"] for c in g2["cells"]} == {1}
    assert len(g1["cells"]) == 2 and g2["calibration_check"] == {"netram": 1}
    assert g2["environment"]["resumed"] == [{"cells_done": 1}]
    assert g2["environment"]["restored_from"] == str(res)
    assert "guests" not in g2["environment"] and g2["units"] == "1"
    # merging them again gives the committed run back
    again = merge.merge_runs([g1, g2])
    before = json.loads((res / "results.json").read_text())
    assert again["cells"] == before["cells"]
    assert [g["units"] for g in again["environment"]["guests"]] == ["0", "1"]
    # rep 2 never ran: nothing to restore, it boots anew
    assert not (tmp_path / "g-3").exists()


def test_a_guest_directory_that_is_still_there_is_newer_and_kept(tmp_path):
    res = committed(tmp_path, (0,), [])
    d = tmp_path / "g-1"
    d.mkdir()
    (d / "results.json").write_text("{\"mine\": 1}")
    assert restore.restore_guests(str(res), {"0": str(d)}) == []
    assert json.loads((d / "results.json").read_text()) == {"mine": 1}


def test_calibrations_come_back_unless_there(tmp_path):
    res = committed(tmp_path, (0,), [])
    cal = tmp_path / "cal-paper"
    fast = tmp_path / "cal-fast"
    assert restore.restore_calibrations(str(res), {"paper": str(cal), "fast": str(fast)}) \
        == [str(cal)]
    assert json.loads((cal / "calibration.json").read_text()) == {"flash_speed": "paper"}
    assert not fast.exists()       # no calibration-fast.json was committed


def test_units_select_reps_pairs_or_everything():
    cells = [{"workload": w, "rep": r} for w in ("wl1", "wl2") for r in (0, 1)]
    assert restore.cells_of(cells, "1") == [cells[1], cells[3]]
    assert restore.cells_of(cells, "wl2/0,wl1/1") == [cells[1], cells[2]]
    assert restore.cells_of(cells, "all") == cells


def test_a_sweeps_guest_is_not_restored_but_runs_again(tmp_path, capsys):
    res = committed(tmp_path, (0,), [])
    run = json.loads((res / "results.json").read_text())
    run["environment"]["guests"][0]["units"] = "latency-hpl/0"
    (res / "results.json").write_text(json.dumps(run))
    assert restore.restore_guests(str(res), {"latency-hpl/0": str(tmp_path / "g")}) == []
    assert "runs again" in capsys.readouterr().err


def test_the_cli_refuses_a_pair_without_a_directory(tmp_path):
    res = committed(tmp_path, (0,), [])
    p = subprocess.run([sys.executable, restore.__file__, str(res), "--guest", "0"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "expected KEY=DIR" in p.stderr



def test_a_guest_stopped_in_its_first_cell_keeps_its_calibration(tmp_path):
    """runner.py saves results.json once it has calibrated: a guest whose
    first cell outlasted the session comes back with no cells and its
    calibration, and goes on without calibrating again."""
    first = {"benchmark": "nswap2l workloads", "date": "2026-12-02T17:00:00Z",
             "units": "hpl/0", "configs": {"nbd": "NBD"}, "workloads": ["hpl"],
             "cells": [], "environment": {"profile": {"name": "full"},
                                          "calibration": {"boot": "b1"}}}
    res = tmp_path / "results"
    res.mkdir()
    (res / "results.json").write_text(json.dumps(merge.merge_runs([first])))
    (res / "PARTIAL").write_text("PARTIAL: guests not finished: g-1\n")
    d = str(tmp_path / "g-1")
    assert restore.restore_guests(str(res), {"hpl/0": d}) == [d]
    back = json.loads((tmp_path / "g-1" / "results.json").read_text())
    assert back["cells"] == [] and back["environment"]["calibration"] == {"boot": "b1"}
    assert not (tmp_path / "g-1" / "status").exists()
