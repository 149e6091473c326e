# SPDX-License-Identifier: GPL-2.0-only
"""The prefetch experiment (prefetch.py): its points, configurations,
units and order, the profile fields it runs from, and its report from a
synthetic run."""
import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from types import SimpleNamespace

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "userspace", "pylib"))
import merge  # noqa: E402
import prefetch  # noqa: E402
import prefetch_report  # noqa: E402
import profiles  # noqa: E402

REPORT = os.path.join(os.path.dirname(prefetch.__file__), "report.py")
POLICIES = ("none", "lrs", "mrs", "auto")


def test_the_experiment_is_radix_at_2_and_8_and_wl2_with_four_policies():
    p = prefetch.experiment(profiles.get("prefetch"))
    assert p.prefetch_policies == POLICIES and p.pilot_gate and p.reps == 6
    assert p.flash_speeds == ("paper", "fast")
    assert p.configs == ("n2l-none@all", "n2l-lrs@all", "n2l-mrs@all", "n2l-auto@all")
    assert p.workloads == ("radix", "wl2")
    runs = prefetch.unit_runs(p)
    assert len(runs) == 2 * 3 * 4 and len({json.dumps(r) for r in runs}) == 24
    assert {(w, pt["procs"]) for _, w, pt in runs} == {("radix", 2), ("radix", 8), ("wl2", None)}
    assert {pt["flash_speed"] for _, _, pt in runs} == {"paper", "fast"}
    # a point sets its processes and its Flash speed's model, nothing else
    calibs = {"paper": {"flash_keys": {"read_lat_us": 121}},
              "fast": {"flash_keys": {"read_lat_us": 80}}}
    q = prefetch.profile_at(p, {"procs": 8, "flash_speed": "fast"}, calibs)
    assert (q.procs, q.flash_speed, q.flash_keys) == (8, "fast", {"read_lat_us": 80})
    q = prefetch.profile_at(p, {"procs": None, "flash_speed": "paper"}, calibs)
    assert q == replace(p, flash_keys={"read_lat_us": 121})


def test_the_policy_list_and_shares_are_profile_fields():
    p = prefetch.experiment(profiles.get("prefetch", prefetch_policies=("none", "rr"),
                                         netram_shares=("all", 0.5)))
    assert p.configs == ("n2l-none@all", "n2l-rr@all", "n2l-none@50", "n2l-rr@50")
    args = SimpleNamespace(profile="prefetch", reps=None, policies="none,lrs,mrs", shares=None,
                           passes=None)
    assert prefetch.profile_of(args).configs == ("n2l-none@all", "n2l-lrs@all", "n2l-mrs@all")
    args = SimpleNamespace(profile="prefetch", reps=None, policies="none,auto", shares="50,all",
                           passes="wl2=5")
    assert prefetch.profile_of(args).configs == ("n2l-none@50", "n2l-auto@50",
                                                 "n2l-none@all", "n2l-auto@all")
    assert prefetch.profile_of(args).passes == {"radix": 4, "wl2": 5}
    for bad in ("0", "100", "half", "50,"):
        with pytest.raises(SystemExit):
            prefetch.profile_of(SimpleNamespace(profile="prefetch", reps=None,
                                                policies=None, shares=bad, passes=None))
    for bad in ("wl2", "wl2=0", "wl2=x"):
        with pytest.raises(SystemExit):
            prefetch.profile_of(SimpleNamespace(profile="prefetch", reps=None,
                                                policies=None, shares=None, passes=bad))


def test_each_rep_is_a_unit_of_its_own_boot():
    p = profiles.get("prefetch")
    assert prefetch.all_units(p) == [0, 1, 2, 3, 4, 5]
    assert prefetch.parse_units("3", p) == [3]
    assert prefetch.parse_units("0,4", p) == [0, 4]
    assert prefetch.parse_units(None, p) == prefetch.all_units(p)
    for bad in ("paper/0", "1,x", "-1"):
        with pytest.raises(SystemExit):
            prefetch.parse_units(bad, p)


def test_order_is_shuffled_per_rep_and_repeats():
    p = prefetch.experiment(profiles.get("prefetch"))
    first = prefetch.run_order(p, [0, 1])
    assert first == prefetch.run_order(p, [0, 1])
    rep0 = [run for rep, run in first if rep == 0]
    rep1 = [run for rep, run in first if rep == 1]
    assert [rep for rep, _ in first] == [0] * 24 + [1] * 24
    assert sorted(map(json.dumps, rep0)) == sorted(map(json.dumps, prefetch.unit_runs(p)))
    assert rep0 != rep1 and rep0 != prefetch.unit_runs(p)
    # speeds mixed: no speed's runs all before the other's
    speeds = [pt["flash_speed"] for _, _, pt in rep0]
    assert speeds[:12] != ["paper"] * 12 and speeds[:12] != ["fast"] * 12
    # a restarted rep goes on in the same order; another seed, another one
    assert prefetch.run_order(p, [1]) == [(1, r) for r in rep1]
    assert prefetch.run_order(experiment_seed(2), [0, 1]) != first


def experiment_seed(seed):
    return prefetch.experiment(profiles.get("prefetch", seed=seed))


def calibration(speed, netram_us, flash_us, passed=True):
    return {"flash_speed": speed, "flash_keys": {"read_lat_us": flash_us},
            "gate": {"passed": passed},
            "media": {"netram": {"randread 4k qd1": {"measured": netram_us}},
                      "flash": {"randread 4k qd1": {"measured": flash_us}}}}


def test_reps_take_the_calibrations_of_their_own_boots_and_check_them(tmp_path, monkeypatch):
    p = prefetch.experiment(profiles.get("prefetch"))
    paths = []
    for speed, flash in (("paper", 216.0), ("fast", 167.0)):
        path = tmp_path / f"{speed}.json"
        path.write_text(json.dumps({"profile": "prefetch", "flash_speed": speed,
                                    "calibration": calibration(speed, 200.0, flash)}))
        paths.append(str(path))
    calibs = prefetch.load_calibrations(paths, p)
    assert set(calibs) == {"paper", "fast"} and calibs["fast"]["source"] == paths[1]
    with pytest.raises(SystemExit, match="no calibration for Flash speed fast"):
        prefetch.load_calibrations(paths[:1], p)
    with pytest.raises(SystemExit, match="calibrated profile 'prefetch'"):
        prefetch.load_calibrations(paths, prefetch.experiment(profiles.get("prefetch-smoke")))
    (tmp_path / "bad.json").write_text(json.dumps({
        "profile": "prefetch", "flash_speed": "fast",
        "calibration": calibration("fast", 200.0, 167.0, passed=False)}))
    monkeypatch.setenv("N2L_ICOUNT", "1")
    with pytest.raises(SystemExit, match="failed its gate"):
        prefetch.load_calibrations([paths[0], str(tmp_path / "bad.json")], p)
    # this boot's reads against the calibration's, within 15%
    check = prefetch.judge({"netram": 229.0, "flash paper": 216.0, "flash fast": 200.0},
                           calibs, "paper")
    assert check["netram"] == {"calibrated": 200.0, "measured": 229.0, "off": None}
    assert check["flash paper"]["off"] is None
    assert "target 167.0 us +-15%" in check["flash fast"]["off"]


def test_flash_speeds_are_what_the_calibration_sets_flash_from():
    assert profiles.flash_ratio("paper") == profiles.FLASH_RATIO
    fast = profiles.flash_ratio("fast")
    assert fast["read"] == fast["write"] == round(1 / 1.2, 3)
    netram = {"randread 4k qd1": 200.0, "randread 4k qd32": 40.0,
              "randwrite 4k qd1": 250.0, "randwrite 4k qd32": 80.0,
              "read 1m qd32": 4000.0, "write 1m qd32": 9000.0}
    zero = {"randread 4k qd1": 30.0, "randwrite 4k qd1": 35.0}
    keys = profiles.flash_keys(netram, zero, "fast")
    # a request holds the bus req_us + bytes / mbps: 4 KiB and 1 MiB at
    # QD32 both 1 / 1.2 of Network RAM's, to the keys' whole us and MB/s
    for rw in ("read", "write"):
        def bus(size):
            return keys[f"{rw}_req_us"] + size / keys[f"{rw}_mbps"]
        assert bus(4096) == pytest.approx(netram[f"rand{rw} 4k qd32"] * 0.833, abs=1)
        assert bus(profiles.LARGE) == pytest.approx(netram[f"{rw} 1m qd32"] * 0.833, rel=0.01)
        # a page at QD1: the latency on top of the bus and the model's own cost
        assert keys[f"{rw}_lat_us"] + zero[f"rand{rw} 4k qd1"] + bus(4096) == \
            pytest.approx(netram[f"rand{rw} 4k qd1"] * 0.833, abs=1)
    t = profiles.targets("flash", netram, profiles.get("prefetch", flash_speed="fast"))
    assert t["randread 4k qd1"] == {"us": round(200 * 0.833, 1)}
    with pytest.raises(ValueError, match="unknown flash_speed"):
        profiles.flash_ratio("slow")


def test_configurations_say_how_much_network_ram_they_have():
    p = profiles.get("quick")
    # the paper's column: Flash and disk present, Network RAM all the swap
    only = profiles.config("netram-only")
    assert only.media == ("netram", "flash", "disk") and only.prefetch == "none"
    assert p.netram_mb(only, ("radix",)) == p.swap_mb() == 96
    # n2l-<policy>: netram_share of the limit, as before (4 MiB a server)
    assert p.netram_mb(profiles.config("n2l-lrs"), ("radix",)) == 4
    # a share of the footprint: Radix 1.5 x 8, WL2 1.75 x 8 MiB
    half = profiles.config("n2l-lrs@50")
    assert (half.prefetch, half.netram) == ("lrs", 0.5)
    assert p.netram_mb(half, ("radix",)) == 6 and p.netram_mb(half, ("radix", "wl2")) == 7
    assert "50% of the workload's footprint" in half.label
    assert p.netram_mb(profiles.config("flash"), ("radix",)) is None
    assert p.netram_mb(profiles.config("nswap"), ("radix",)) == 96
    for bad in ("n2l-lrs@0", "n2l-lrs@101", "n2l-@all", "lrs@all", "n2l-lrs@half", "nope"):
        with pytest.raises(ValueError, match="unknown configuration"):
            profiles.config(bad)


def test_default_footprints_are_the_workloads_own():
    src = os.path.join(os.path.dirname(os.path.dirname(prefetch.__file__)), "workloads")
    for w, factor in profiles.DEFAULT_FOOTPRINT.items():
        if w == "hpl":
            text = open(os.path.join(src, "hpl")).read()
            assert f'"--footprint", type=positive, default={factor})' in text
        else:
            assert f".footprint = {factor}," in open(os.path.join(src, f"{w}.c")).read(), w


def test_the_full_profile_has_the_papers_column_and_the_gate():
    full = profiles.get("full")
    assert "netram-only" in full.configs and full.pilot_gate
    assert not profiles.get("quick").pilot_gate and "netram-only" not in profiles.get("quick").configs


# A synthetic run: none takes 10 s everywhere; LRS pays on fast Flash
# (9.0, 9.1, 9.2 s in reps 0-2) and costs 5% on the paper's; MRS changes
# nothing; auto does LRS's on fast Flash and none's on the paper's.
TIMES = {("lrs", "fast"): (9.0, 9.1, 9.2), ("lrs", "paper"): (10.5,) * 3,
         ("mrs", "fast"): (10.0,) * 3, ("mrs", "paper"): (10.0,) * 3,
         ("auto", "fast"): (9.0, 9.1, 9.2), ("auto", "paper"): (10.0,) * 3,
         ("none", "fast"): (10.0,) * 3, ("none", "paper"): (10.0,) * 3}


def synthetic_run(speeds=("paper", "fast")):
    p = prefetch.experiment(profiles.get("prefetch", reps=3))
    cells = []
    for speed in speeds:
        for rep in range(3):
            for config, w, point in prefetch.unit_runs(replace(p, flash_speeds=(speed,))):
                policy = profiles.config(config).prefetch
                cell = {"config": config, "workload": w, "rep": rep, "seed": "1",
                        "status": "ok", "seconds": TIMES[(policy, speed)][rep],
                        "point": point, "boot": f"{speed}{rep}", "footprint_mb": "12.00",
                        "netram_mb": 48.0, "netram_reads": 900, "flash_reads": 100,
                        "disk_reads": 0, "read_slots": 1000, "read_parallelism": 2.0,
                        "cpu_busy_s": TIMES[(policy, speed)][rep] * 0.9}
                if policy != "none":
                    cell.update(prefetched=950, prefetch_target=1000,
                                prefetch_room_target=300 if policy == "auto" else 0,
                                prefetch_activations=60, prefetch_reads=200,
                                idle_pm_asking=250 if policy == "auto" else None,
                                net_us_asking=210 if policy == "auto" else None,
                                flash_us_asking=640 if policy == "auto" else None)
                cells.append(cell)
    return {"benchmark": "nswap2l prefetch", "date": "2026-11-26T00:00:00Z",
            "workloads": list(p.workloads), "points": [list(x) for x in p.points],
            "configs": {c: profiles.config(c).label for c in p.configs},
            "environment": {"kernel": "6.1", "profile": {"name": "prefetch", "reps": 3,
                                                         "prefetch_args": p.prefetch_args}},
            "cells": cells}


def test_report_says_how_many_reps_ran():
    """The reps its cells have: a guest's profile says the reps of the
    share it ran, and a resumed run has more than the first guests knew."""
    run = synthetic_run()
    run["environment"]["profile"]["reps"] = 2
    md = prefetch_report.report_md(run, [])
    assert " 3 reps, each a boot of its own" in md
    assert " 3 runs per cell, " in md


def test_report_pools_where_the_question_is_the_same():
    md = prefetch_report.report_md(synthetic_run(), [])
    # LRS on fast Flash at Radix x2: logs of 0.90, 0.91, 0.92: mean
    # -0.0943509 (0.910), sd 0.010990, se 0.006345, t(2) 4.302653, half
    # 0.027300 -> [0.885, 0.935]
    assert "| Radix x2 | fast | 10.00 | 0.910 [0.885–0.935] faster | " \
        "1.000 [1.000–1.000] no difference | 0.910 [0.885–0.935] faster |" in md
    assert "| WL2 | paper | 10.00 | 1.050 [1.050–1.050] slower |" in md
    # pooled on fast Flash over the 3 points: 9 pairs, sd 0.0095172, se
    # 0.0031724, t(8) 2.306004: half 0.0073156 -> [0.903, 0.917]
    assert "- lrs / none 0.910 [0.903–0.917] faster (9 pairs): Flash fast, every point" in md
    assert "- lrs / none 1.050 [1.050–1.050] slower (9 pairs): Flash paper, every point" in md
    # Radix over its 2 and 8 processes on fast Flash: 6 pairs, sd 0.0098293,
    # se 0.0040128, t(5) 2.570582: half 0.0103152 -> [0.901, 0.919]
    assert "- lrs / none 0.910 [0.901–0.919] faster (6 pairs): Radix x2, x8, Flash fast" in md
    # over everything, 18 pairs of each policy: the answer depends on Flash
    assert "- lrs / none 0.977 [0.942–1.014] inconclusive (18 pairs): every point and " \
        "Flash speed" in md
    assert "- mrs / none 1.000 [1.000–1.000] no difference (18 pairs): every" in md
    assert "- lrs / none 0.977 [0.932–1.025] inconclusive (12 pairs): Radix x2, x8, every " \
        "Flash speed" in md
    assert "(6 pairs): WL2, every Flash speed" in md and "WL2, Flash fast" not in md
    # auto: 9 pairs at 1 and the 9 above: mean log -0.047175 (0.954), sd
    # 0.048982, se 0.011545, t(17) 2.109816: half 0.024358 -> [0.931, 0.977]
    assert "- auto / none 0.954 [0.931–0.977] faster (18 pairs)" in md


def test_report_checks_auto_against_its_targets_and_shows_the_engine():
    md = prefetch_report.report_md(synthetic_run(), [])
    assert "| Radix x2 | fast | 0.910 [0.885–0.935] faster | yes | " \
        "lrs: 1.000 [1.000–1.000] no difference | yes | yes (lrs faster) |" in md
    assert "| WL2 | paper | 1.000 [1.000–1.000] no difference | yes | " \
        "mrs: 1.000 [1.000–1.000] no difference | yes | no fixed policy faster |" in md
    # moved / asked 95%, 60 activations, 950 moved, none for room, 20% of
    # slots read, CPU busy 90% of the run, no plans recorded
    assert "| lrs | Radix x8 | paper | 95% | 60 | 950 | 0 | 20.0% | 2.00 | 90% | — | — / — | " \
        "10.50 |" in md
    # auto asked with the CPUs 25% idle, Network RAM reads 210 us, Flash 640
    assert "| auto | Radix x8 | paper | 95% | 60 | 950 | 300 | 20.0% | 2.00 | 90% | 25% | " \
        "210 / 640 |" in md
    assert "| WL2 | n2l-lrs@all | Network RAM holds all the swap | 48.0 | 12.0 | 400% | 90% |" in md
    assert "- no run stopped or flagged" in md


def test_auto_alone_is_not_called_far_from_a_best_fixed_policy_it_was_not_run_with():
    run = synthetic_run()
    run["cells"] = [c for c in run["cells"]
                    if profiles.config(c["config"]).prefetch in ("none", "auto")]
    run["configs"] = {k: v for k, v in run["configs"].items()
                      if profiles.config(k).prefetch in ("none", "auto")}
    md = prefetch_report.report_md(run, [])
    assert "| Radix x2 | fast | 0.910 [0.885–0.935] faster | yes | — | " \
        "no fixed policy run | no fixed policy faster |" in md


def test_auto_missing_at_a_point_is_not_near_the_best_there():
    """A run stopped before auto ran at a point, where fixed policies did."""
    run = synthetic_run()
    run["cells"] = [c for c in run["cells"] if not (
        profiles.config(c["config"]).prefetch == "auto" and c["workload"] == "wl2")]
    md = prefetch_report.report_md(run, [])
    assert "| WL2 | paper | — | no | mrs: — | no | no fixed policy faster |" in md


def test_report_names_runs_the_gate_stopped_or_flagged():
    run = synthetic_run()
    c = next(c for c in run["cells"] if c["config"] == "n2l-lrs@all")
    c["pilot"] = {"stop": ["11 prefetch activations, fewer than 50"], "flag": []}
    run["pilot_gate"] = {"stopped_at": "n2l-lrs@all radix rep 0", "why": ["11 ..."]}
    md = prefetch_report.report_md(run, [])
    assert f"- n2l-lrs@all {c['workload']} rep 0 (procs {c['point']['procs']}, flash_speed " \
        f"{c['point']['flash_speed']}): STOPPED: 11 prefetch activations" in md
    assert "**The run stopped at n2l-lrs@all radix rep 0" in md


def test_one_rep_calls_nothing():
    run = synthetic_run()
    run["cells"] = [c for c in run["cells"] if c["rep"] == 0]
    md = prefetch_report.report_md(run, [])
    assert "| Radix x2 | fast | 10.00 | 0.900 [—] too few pairs |" in md
    assert "- lrs / none 0.972 [" in md


def test_guests_merge_and_report_with_a_plot(tmp_path):
    run = synthetic_run()
    run["calibrations"] = {"paper": {"flash_keys": {"read_lat_us": 121}},
                           "fast": {"flash_keys": {"read_lat_us": 80}}}
    dirs = []
    for rep in range(3):
        part = dict(run, cells=[c for c in run["cells"] if c["rep"] == rep], units=str(rep))
        part["environment"] = dict(run["environment"], calibration={})
        part["calibration_check"] = {"netram": {"calibrated": 200.0, "measured": 200.0 + rep,
                                                "off": None}}
        d = tmp_path / str(rep)
        d.mkdir()
        (d / "results.json").write_text(json.dumps(part))
        dirs.append(str(d))
    out = tmp_path / "out"
    assert merge.main([str(out)] + dirs) == 0
    merged = json.loads((out / "results.json").read_text())
    assert merged["points"] == run["points"] and len(merged["cells"]) == len(run["cells"])
    assert merged["calibrations"] == run["calibrations"]
    assert [g["calibration_check"]["netram"]["measured"] for g in
            merged["environment"]["guests"]] == [200.0, 201.0, 202.0]
    proc = subprocess.run([sys.executable, REPORT, str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    md = (out / "report.md").read_text()
    assert md.startswith("# Nswap2L prefetch experiment") and "0.910 [0.903–0.917]" in md
    assert "| 3 | netram | 200.0 | 202.0 | ok |" in md
    if "prefetch.png" in proc.stdout:
        assert (out / "prefetch.png").stat().st_size > 1000


def test_hand_values_above():
    logs = [math.log(x) for x in (0.90, 0.91, 0.92)]
    mean = sum(logs) / 3
    assert math.exp(mean) == pytest.approx(0.909963, abs=1e-6)
