# SPDX-License-Identifier: GPL-2.0-only
"""The runner's parsing of workload results and the arithmetic over cells."""
import csv
import io

import pytest

import profiles
import results

OK = ("workload=wl2 status=ok seconds=12.5 wall_seconds=13.0 footprint_mb=28 "
      "limit_mb=16 passes=2 procs=1 seed=1 pages=7168 touches=14336 checksum=ab")


def test_result_line_parses_and_last_line_wins():
    f = results.parse_result_line("noise\nworkload=x status=ok seconds=1\n" + OK + "\n")
    assert f["workload"] == "wl2" and f["status"] == "ok"
    assert f["seconds"] == 12.5 and f["wall_seconds"] == 13.0
    assert f["pages"] == "7168"


@pytest.mark.parametrize("text,why", [
    ("", "no result line"),
    ("hello world", "no result line"),
    ("workload=wl1 status=ok seconds=fast", "is not a number"),
    ("workload=wl1 seconds=1", "without status"),
    ("workload=wl1 status=ok garbage", "not key=value"),
    ("workload=wl1 status=ok =3", "not key=value"),
])
def test_bad_result_lines_are_refused(text, why):
    with pytest.raises(results.ResultLineError, match=why):
        results.parse_result_line(text)


def test_ok_cell_is_timed_and_keeps_stats():
    c = results.cell_from_run("n2l-lrs", "wl2", 1, 0, OK, {"read_parallelism": 2.5})
    assert c["status"] == "ok" and c["seconds"] == 12.5 and c["reason"] == ""
    assert c["read_parallelism"] == 2.5 and c["limit_mb"] == "16"


@pytest.mark.parametrize("rc,out,status,reason", [
    (1, "workload=wl1 status=wrong reason=page-content seconds=3", "wrong", "page-content"),
    (0, "workload=wl1 status=wrong reason=bad seconds=3", "wrong", "bad"),
    (-11, "Segmentation fault", "failed", "exit -11: no result line (workload=...)"),
    (3, "workload=wl1 status=failed reason=mmap", "failed", "mmap"),
    (1, OK, "failed", "exit 1"),   # said ok, exited 1: not trusted
])
def test_bad_runs_are_never_timed(rc, out, status, reason):
    c = results.cell_from_run("disk", "wl1", 0, rc, out)
    assert c["status"] == status and c["reason"] == reason
    assert c["seconds"] is None and c["wall_seconds"] is None


def cells():
    def cell(config, workload, rep, seconds, **kw):
        c = {"config": config, "workload": workload, "rep": rep,
             "status": "ok" if seconds else "failed", "seconds": seconds}
        c.update(kw)
        return c
    return [cell("disk", "wl2", 0, 90.0), cell("disk", "wl2", 1, 110.0),
            cell("disk", "wl2", 2, None),
            cell("nswap", "wl2", 0, 3.0, read_parallelism=1.5),
            cell("nswap", "wl2", 1, 5.0, read_parallelism=2.5),
            cell("flash", "wl2", 0, None)]


def test_medians_speedups_and_missing_cells():
    cs = cells()
    assert results.cell_median(cs, "disk", "wl2") == 100.0
    assert results.cell_median(cs, "nswap", "wl2", "read_parallelism") == 2.0
    assert results.speedup(cs, "nswap", "wl2") == 25.0
    assert results.speedup(cs, "flash", "wl2") is None
    assert results.missing_cells(cs, ["disk", "nswap", "flash"], ["wl2"]) == [("flash", "wl2")]
    assert [c["config"] for c in results.bad_runs(cs)] == ["disk", "flash"]


def test_csv_has_every_field_in_order_and_blanks_for_none():
    text = results.cells_to_csv(cells())
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == list(results.CSV_FIELDS)
    assert rows[2]["seconds"] == "" and rows[0]["seconds"] == "90.0"
    assert len(rows) == 6


def test_profiles_scale_link_and_disk_together():
    m1, m2 = profiles.get("quick").media(), profiles.get("quick", scale=2.0).media()
    assert m2["net_delay_us"] == 2 * m1["net_delay_us"]
    assert m2["net_rate_mbit"] * 2 == m1["net_rate_mbit"]
    assert m2["disk_seek_max_us"] == 2 * m1["disk_seek_max_us"]
    assert m2["disk_rpm"] * 2 == m1["disk_rpm"] and m2["disk_mbps"] * 2 == m1["disk_mbps"]
    assert abs(profiles.get("quick", scale=2.0).disk_random_us() -
               2 * profiles.get("quick").disk_random_us()) < 0.2


def test_disk_meets_the_issue_bounds_at_the_papers_scale():
    p = profiles.get("full")
    # seek 1000 + 5200 x 8/15, half a rotation at 7200 rpm, 4 KiB at 100 MB/s
    assert p.disk_random_us() == round(1000 + 5200 * 8 / 15 + 30e6 / 7200 + 40.96, 1)
    assert 1e6 / p.disk_random_us() <= profiles.DISK_MAX_RANDOM_IOPS
    assert p.disk_keys() == {"mbps": 100, "seek_min_us": 1000, "seek_max_us": 6200,
                             "rpm": 7200}
    t = profiles.targets("disk", {}, p)
    assert t["randread 4k qd32"] == {"us": p.disk_random_us()}
    assert t["write 4k qd1"] == {"max_us": round(p.disk_random_us() / 50, 1)}
    assert len(t) == 8


NETRAM = {"randread 4k qd1": 200.0, "randread 4k qd32": 40.0, "read 4k qd1": 190.0,
          "read 4k qd32": 38.0, "randwrite 4k qd1": 250.0, "randwrite 4k qd32": 80.0,
          "write 4k qd1": 240.0, "write 4k qd32": 75.0}


def test_flash_is_set_from_network_ram_at_the_papers_ratios():
    zero = {"randread 4k qd1": 30.0, "randwrite 4k qd1": 35.0}
    keys = profiles.flash_keys(NETRAM, zero)
    # QD32: 40 us x 1.08 a request -> 4096 bytes / 43.2 us = 95 MB/s
    assert keys["read_mbps"] == 95 and keys["write_mbps"] == round(4096 / (80 * 1.62))
    # QD1: 200 x 1.08 = 216 us, less the guest's 30 us and the transfer
    assert keys["read_lat_us"] == round(216 - 30 - 4096 / 95)
    assert keys["write_lat_us"] == round(250 * 1.62 - 35 - 4096 / keys["write_mbps"])
    assert keys["read_qd"] == keys["write_qd"] == 32
    t = profiles.targets("flash", NETRAM, profiles.get("full"))
    assert t["randread 4k qd1"] == {"us": 216.0}
    assert t["randwrite 4k qd32"] == {"us": round(80 * 1.62, 1)}
    # a merged stream: Flash no faster than the ratio says
    assert t["write 4k qd32"] == {"min_us": round(75 * 1.62, 1)}
    assert profiles.targets("netram", NETRAM, profiles.get("full")) == {}
    assert profiles.FLASH_RATIO == {"read": 1.08, "write": 1.62}


def test_off_target_within_tolerance_only():
    assert profiles.off_target(114.9, {"us": 100}) is None
    assert "target 100 us" in profiles.off_target(115.1, {"us": 100})
    assert "target 100 us" in profiles.off_target(84.9, {"us": 100})
    assert profiles.off_target(10.0, {"max_us": 160}) is None
    assert "at most 160" in profiles.off_target(185.0, {"max_us": 160})
    assert profiles.off_target(None, {"us": 1}) == "no I/O completed"
    assert profiles.off_target(500.0, {"min_us": 60}) is None
    assert "at least 60" in profiles.off_target(50.0, {"min_us": 60})


def test_profile_cells_cover_the_matrix_reps_outermost():
    p = profiles.get("quick", reps=2)
    todo = p.cells()
    assert len(todo) == 2 * len(p.configs) * len(p.workloads)
    assert {c for c, _, _ in todo} == set(profiles.CONFIG_NAMES)
    assert {w for _, w, _ in todo} == set(profiles.WORKLOADS)
    half = len(todo) // 2
    assert all(r == 0 for _, _, r in todo[:half]) and all(r == 1 for _, _, r in todo[half:])
    # the blocks that share a device hold exactly those cells, in order
    flat = [(c, w, r) for r, c, ws in p.blocks() for w in ws]
    assert flat == todo


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="unknown profile"):
        profiles.get("huge")


def test_spread_compares_good_runs_of_one_cell():
    cells = [{"config": "a", "workload": "w", "status": "ok", "seconds": t}
             for t in (9.0, 10.0, 11.0)]
    cells += [{"config": "b", "workload": "w", "status": "ok", "seconds": 4.0},
              {"config": "b", "workload": "w", "status": "wrong", "seconds": None},
              {"config": "c", "workload": "w", "status": "ok", "seconds": 5.0},
              {"config": "c", "workload": "w", "status": "ok", "seconds": 5.0}]
    typical, worst, where = results.spread(cells)
    assert where == ("a", "w") and abs(worst - 0.2) < 1e-9
    assert abs(typical - 0.1) < 1e-9          # median of 0.2 and 0.0
    assert results.spread(cells[3:5]) is None  # one good run: nothing to compare


def test_blocks_leave_out_cells_done_before_a_restart():
    p = profiles.get("quick", reps=2, configs=("disk", "flash"),
                     workloads=("wl1", "wl2"))
    o0, o1 = p.config_order(0), p.config_order(1)
    assert p.blocks() == [(0, o0[0], ("wl1", "wl2")), (0, o0[1], ("wl1", "wl2")),
                          (1, o1[0], ("wl1", "wl2")), (1, o1[1], ("wl1", "wl2"))]
    done = {(o0[0], "wl1", 0), (o0[0], "wl2", 0), (o0[1], "wl1", 0)}
    assert p.blocks(done) == [(0, o0[1], ("wl2",)), (1, o1[0], ("wl1", "wl2")),
                              (1, o1[1], ("wl1", "wl2"))]


def test_configurations_run_in_a_shuffled_order_a_restart_repeats():
    p = profiles.get("full", reps=3)
    orders = [p.config_order(r) for r in range(3)]
    assert all(sorted(o) == sorted(p.configs) for o in orders)
    assert len({tuple(o) for o in orders}) == 3          # not one fixed order
    assert orders[0] != list(p.configs)
    assert profiles.get("full", reps=3).config_order(1) == orders[1]
    assert profiles.get("full", seed=2).config_order(1) != orders[1]


def test_checksums_must_agree_across_configurations_and_reps():
    cells = [{"config": c, "workload": "w", "rep": r, "status": "ok", "checksum": "aa"}
             for c in ("x", "y") for r in (0, 1)]
    cells.append({"config": "z", "workload": "w", "rep": 0, "status": "failed",
                  "checksum": "bb"})
    assert results.checksum_disagreements(cells) == []
    cells[3]["checksum"] = "cc"
    assert results.checksum_disagreements(cells) == [("w", {"aa": ["x 0", "x 1", "y 0"],
                                                             "cc": ["y 1"]})]


def test_csv_flattens_memory_events():
    cell = {"config": "x", "workload": "w", "rep": 0, "status": "ok",
            "memory_events": {"high": 7, "max": 0, "oom_kill": 1}}
    row = next(iter(__import__("csv").DictReader(results.cells_to_csv([cell]).splitlines())))
    assert (row["memory_high_events"], row["memory_max_events"], row["oom_kills"]) == \
        ("7", "0", "1")
