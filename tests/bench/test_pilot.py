# SPDX-License-Identifier: GPL-2.0-only
"""The pilot gate: which runs stop a benchmark, which are flagged, and
that the runner stops at the first and says where and why."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "userspace", "pylib"))
import n2lbench  # noqa: E402
import pilot  # noqa: E402
import runner  # noqa: E402


def run_cell(config="n2l-lrs", target=1000, moved=900, activations=60, reads=100,
             slots=1000, **kw):
    return dict({"config": config, "workload": "radix", "rep": 0, "status": "ok",
                 "seconds": 3.0, "prefetch_target": target, "prefetched": moved,
                 "prefetch_activations": activations, "prefetch_reads": reads,
                 "read_slots": slots}, **kw)


def test_an_engine_that_moves_what_it_is_told_passes():
    cell = run_cell()
    assert pilot.check(cell, applied=True) == []
    assert cell["pilot"] == {"stop": [], "flag": []}
    # exactly 80% and exactly 50 activations and 5% served pass
    assert pilot.check(run_cell(moved=800, activations=50, reads=50), True) == []


@pytest.mark.parametrize("kw,why", [
    ({"moved": 33}, "moved 33 of the 1000 slots its policy asked for (3.3%), under 80%"),
    ({"activations": 11}, "11 prefetch activations, fewer than 50"),
    ({"target": None}, "the module reports no prefetch_target"),
    ({"activations": None}, "the module reports no prefetch_target"),
])
def test_a_fixed_policy_that_falls_short_stops_the_run(kw, why):
    for config in ("n2l-rr", "n2l-random", "n2l-lrs", "n2l-mrs@all", "n2l-lrs@50"):
        cell = run_cell(config=config, **kw)
        stop = pilot.check(cell, applied=True)
        assert len(stop) == 1 and stop[0].startswith(why), (config, stop)
        assert cell["pilot"]["stop"] == stop


def test_both_reasons_are_given():
    stop = pilot.check(run_cell(moved=10, activations=8), True)
    assert len(stop) == 2


def test_unread_prefetching_is_flagged_not_stopped():
    cell = run_cell(reads=49)                   # 4.9% of 1000 slots read
    assert pilot.check(cell, True) == []
    assert cell["pilot"]["flag"] == ["prefetched slots served 4.9% of the slots read "
                                     "(49 of 1000), under 5%"]
    assert pilot.lines([cell]) == [f"- n2l-lrs radix rep 0: flagged: {cell['pilot']['flag'][0]}"]


def test_auto_none_and_other_media_are_never_stopped():
    auto = run_cell(config="n2l-auto@all", moved=1, activations=1, reads=0)
    assert pilot.check(auto, True) == [] and len(auto["pilot"]["flag"]) == 1
    for config in ("n2l-none", "netram-only", "n2l-none@all", "nswap", "flash", "disk"):
        cell = run_cell(config=config, moved=0, activations=0, reads=0)
        assert pilot.check(cell, True) == [] and "pilot" not in cell
    failed = run_cell(moved=0, status="failed")
    assert pilot.check(failed, True) == [] and "pilot" not in failed


def test_where_the_gate_is_not_applied_it_flags_what_would_stop():
    cell = run_cell(activations=9, point={"procs": 8, "flash_speed": "fast"})
    assert pilot.check(cell, applied=False) == []
    assert cell["pilot"] == {"stop": [], "flag": ["9 prefetch activations, fewer than 50"]}
    assert pilot.where(cell) == "n2l-lrs radix rep 0 (procs 8, flash_speed fast)"


def test_the_runner_stops_at_the_first_run_that_fails_and_keeps_it(tmp_path):
    run = {"cells": []}
    progress = runner.Progress(4, str(tmp_path), run, gate=True)
    progress.start("n2l-none", "radix", 0)
    progress.done(run_cell(config="n2l-none", moved=0, activations=0, target=0))
    progress.start("n2l-lrs", "radix", 0)
    with pytest.raises(pilot.Stop, match="n2l-lrs radix rep 0: moved 33 of the 1000"):
        progress.done(run_cell(moved=33))
    saved = json.loads((tmp_path / "results.json").read_text())
    assert len(saved["cells"]) == 2 and saved["cells"][1]["pilot"]["stop"]
    assert saved["pilot_gate"]["stopped_at"] == "n2l-lrs radix rep 0"
    assert saved["cells"][1]["boot"] == n2lbench.boot_id()
    log = (tmp_path / "progress.log").read_text()
    assert "pilot gate: n2l-lrs radix rep 0: STOPPED: moved 33" in log
    # not applied: the same run is flagged and the runner goes on
    os.makedirs(tmp_path / "q")
    quiet = runner.Progress(4, str(tmp_path / "q"), {"cells": []}, gate=False)
    quiet.start("n2l-lrs", "radix", 0)
    quiet.done(run_cell(moved=33))
    assert "flagged: moved 33" in (tmp_path / "q" / "progress.log").read_text()
