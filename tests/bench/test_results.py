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


def test_profiles_scale_media_together():
    quick = profiles.get("quick")
    m1, m2 = quick.media(), profiles.get("quick", scale=2.0).media()
    assert m2["flash_latency_us"] == 2 * m1["flash_latency_us"]
    assert m2["net_rate_mbit"] * 2 == m1["net_rate_mbit"]
    for scale in (0.1, 0.5, 1, 1.7, 3):
        d = profiles.get("quick", scale=scale).media()["disk_delay_ms"]
        assert d >= 4 and d % 4 == 0, (scale, d)


def test_media_bandwidth_comes_from_queueing():
    m = profiles.get("full").media()
    # 5 requests of 4 KiB in flight, 80 us each: the X25-M's 250 MB/s
    assert m["flash_queue_depth"] == 5
    assert 240 <= 5 * 4096 / m["flash_latency_us"] <= 260
    assert m["disk_transfer_us"] == 41            # 4 KiB at 100 MB/s
    slow = profiles.get("full", scale=4).media()
    assert slow["flash_queue_depth"] == 5         # latency up, bandwidth down
    assert slow["disk_transfer_us"] == 4 * 41


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
    assert p.blocks() == [(0, "disk", ("wl1", "wl2")), (0, "flash", ("wl1", "wl2")),
                          (1, "disk", ("wl1", "wl2")), (1, "flash", ("wl1", "wl2"))]
    done = {("disk", "wl1", 0), ("disk", "wl2", 0), ("flash", "wl1", 0)}
    assert p.blocks(done) == [(0, "flash", ("wl2",)), (1, "disk", ("wl1", "wl2")),
                              (1, "flash", ("wl1", "wl2"))]
