# SPDX-License-Identifier: GPL-2.0-only
"""The runner's parsing of workload results and the arithmetic over cells."""
import json
import csv
import io

import pytest

import n2lbench
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
          "write 4k qd1": 240.0, "write 4k qd32": 75.0,
          "read 1m qd1": 10100.0, "read 1m qd32": 8800.0,
          "write 1m qd1": 9800.0, "write 1m qd32": 8800.0}
ZERO = {"randread 4k qd1": 30.0, "randwrite 4k qd1": 35.0,
        "read 1m qd1": 1200.0, "write 1m qd1": 1300.0}


def model_us(keys, zero, rw, bs, qd):
    """What the n2lmedia flash model makes a request cost alone (QD1: the
    guest's own cost, the bus time, the latency) or in a full queue
    (QD32: the bus time), for a direction whose bus alone limits it."""
    n = 4096 if bs == "4k" else 1 << 20
    bus = keys[f"{rw}_req_us"] + n / keys[f"{rw}_mbps"]
    if qd == 32:
        return bus
    xfer = keys.get(f"{rw}_xfer_mbps", 0)
    return (zero[f"{'rand' if bs == '4k' else ''}{rw} {bs} qd1"] + bus + keys[f"{rw}_lat_us"] +
            (n / xfer if xfer else 0))


@pytest.mark.parametrize("speed", ["paper", "fast"])
def test_flash_keeps_its_ratio_at_4k_and_1m(speed):
    keys = profiles.flash_keys(NETRAM, ZERO, speed)
    ratio = profiles.flash_ratio(speed)
    p = profiles.get("quick", flash_speed=speed)
    t = profiles.targets("flash", NETRAM, p)
    for rw in ("read", "write"):
        for bs, qd, name in (("4k", 1, f"rand{rw} 4k qd1"), ("4k", 32, f"rand{rw} 4k qd32"),
                             ("1m", 1, f"{rw} 1m qd1"), ("1m", 32, f"{rw} 1m qd32")):
            assert t[name] == {"us": round(NETRAM[name] * ratio[rw], 1)}
            got = model_us(keys, ZERO, rw, bs, qd)
            # QD32: the bus, fixed cost and bandwidth from the two streams,
            # within the rounding of whole us and MB/s (half a us of fast
            # Flash's 33 us page is 1.5%); QD1: the page's latency, which
            # with these figures fits 1 MiB too at the paper's ratios
            # (not at 0.833: that share of Network RAM's 1 MiB gap between
            # QD1 and QD32 is less than the guest's own cost of 1 MiB)
            if qd == 32 or speed == "paper":
                assert abs(got / t[name]["us"] - 1) < (0.02 if qd == 32 else 0.03), \
                    (name, got, t[name])
        assert keys[f"{rw}_req_us"] > 0 and keys[f"{rw}_qd"] == 32


def test_flash_at_the_papers_ratios_reads_and_writes():
    keys = profiles.flash_keys(NETRAM, ZERO)
    # reads: 40 x 1.08 = 43.2 us for 4 KiB, 8800 x 1.08 = 9504 us for
    # 1 MiB: (9504 - 43.2) / (1 MiB - 4 KiB) us a byte, 110 MB/s, and
    # 43.2 - 4096 / 110 = 6 us of fixed cost
    assert keys["read_mbps"] == 110 and keys["read_req_us"] == 6
    # QD1: a page's 216 us less the guest's 30 and the bus, 43.2 us:
    # 142.8 (1 MiB would want 10908 less 1200 and 9538.5: 169.5; it gets
    # the page's, 0.25% short)
    assert keys["read_lat_us"] == 143
    assert keys["write_mbps"] == round(1 / ((8800 - 80) * 1.62 / ((1 << 20) - 4096)))
    # the reads' and writes' shares of the paper
    assert profiles.FLASH_RATIO == {"read": 1.08, "write": 1.62}
    assert profiles.flash_ratio("paper") is profiles.FLASH_RATIO


def test_flash_without_a_fixed_cost_balances_the_sizes():
    # 4 KiB streams cheaper per byte than 1 MiB ones: no fixed cost fits,
    # one bandwidth misses both by the same share.
    netram = dict(NETRAM, **{"randread 4k qd32": 20.0})
    keys = profiles.flash_keys(netram, ZERO)
    assert keys["read_req_us"] == 0
    small = 4096 / keys["read_mbps"] / (20 * 1.08)
    large = (1 << 20) / keys["read_mbps"] / (8800 * 1.08)
    assert abs((small - 1) + (large - 1)) < 0.01 and small > 1 > large


def test_flash_speed_fast_is_20_percent_faster_both_ways():
    assert profiles.flash_ratio("fast") == {"read": 0.833, "write": 0.833}
    fast, paper = (profiles.flash_keys(NETRAM, ZERO, s) for s in ("fast", "paper"))
    assert fast["write_mbps"] > paper["write_mbps"] and fast["read_mbps"] > paper["read_mbps"]
    t = profiles.targets("flash", NETRAM, profiles.get("quick", flash_speed="fast"))
    assert t["randwrite 4k qd1"] == {"us": round(250 * 0.833, 1)}
    assert t["read 1m qd32"] == {"us": round(8800 * 0.833, 1)}
    with pytest.raises(ValueError, match="unknown flash_speed"):
        profiles.flash_keys(NETRAM, ZERO, "slow")
    assert profiles.get("quick").flash_speed == "paper"


def test_flash_targets_and_the_streams_bound():
    t = profiles.targets("flash", NETRAM, profiles.get("full"))
    assert t["randread 4k qd1"] == {"us": 216.0}
    assert t["randwrite 4k qd32"] == {"us": round(80 * 1.62, 1)}
    # a merged stream: Flash no faster than the ratio says
    assert t["write 4k qd32"] == {"min_us": round(75 * 1.62, 1)}
    assert t["write 1m qd1"] == {"us": round(9800 * 1.62, 1)}
    assert len(t) == 12
    assert profiles.targets("netram", NETRAM, profiles.get("full")) == {}
    # the disk: 4 KiB only
    assert len(profiles.targets("disk", NETRAM, profiles.get("full"))) == 8


def test_calibration_cases_are_4k_and_1m():
    names = [profiles.case_name(*c) for c in profiles.CALIBRATION_CASES]
    assert names == ["randread 4k qd1", "randread 4k qd32", "read 4k qd1", "read 4k qd32",
                     "randwrite 4k qd1", "randwrite 4k qd32", "write 4k qd1", "write 4k qd32",
                     "read 1m qd1", "read 1m qd32", "write 1m qd1", "write 1m qd32"]


def test_a_request_costs_the_runtime_over_requests_and_queue():
    # fio's runtime lasts until the queue drained, and counts none of it:
    # 88 requests of 1 MiB completed in 1367 ms at QD32 are 11392 us each
    # (the model had planned 11486), not fio's 1367 / 88 = 15534.
    assert n2lbench.us_per_request({"total_ios": 88, "runtime": 1367}, 32) == 11391.7
    assert n2lbench.us_per_request({"total_ios": 859, "runtime": 1001}, 1) == 1164.0
    assert n2lbench.us_per_request({"total_ios": 0, "runtime": 1000}, 1) is None


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


def test_measure_names_cases_of_either_form(monkeypatch):
    import calibrate
    jobs = []
    monkeypatch.setattr(calibrate.n2lbench, "fio", lambda *a, **k: (0, 0))
    monkeypatch.setattr(calibrate.n2lbench, "fio_jobs", lambda path, js, *a, **k:
                        jobs.extend(js) or [{"total_ios": 999, "runtime": 1000}] * len(js))
    got = calibrate.measure("/dev/x", 1, cases=[("read", "rand", 1),
                                                ("write", "seq", 32, "1m")])
    # a case without a block size is 4 KiB, as the sweep's point check
    assert got == {"randread 4k qd1": 1000.0, "write 1m qd32": round(1e6 / 1031, 1)}
    assert jobs == [("randread", "4k", 1), ("write", "1m", 32)]


def test_a_case_that_completed_nothing_runs_again_longer(monkeypatch):
    import calibrate
    calls = []

    def fio_jobs(path, js, size_mb, runtime, ramp):
        calls.append((list(js), runtime))
        if len(calls) == 1:
            return [{"total_ios": 999, "runtime": 1000}, {"total_ios": 0, "runtime": 1000}]
        return [{"total_ios": 3999, "runtime": 4000}] * len(js)
    monkeypatch.setattr(calibrate.n2lbench, "fio", lambda *a, **k: (0, 0))
    monkeypatch.setattr(calibrate.n2lbench, "fio_jobs", fio_jobs)
    got = calibrate.measure("/dev/x", "500ms", cases=[("read", "rand", 1), ("write", "rand", 1)])
    assert got == {"randread 4k qd1": 1000.0, "randwrite 4k qd1": 1000.0}
    assert calls[1] == ([("randwrite", "4k", 1)], "2000ms")
    assert calibrate.longer(1) == "4000ms"


def test_calibration_runs_each_case_as_long_and_over_the_region_the_profile_says(monkeypatch):
    import calibrate
    import profiles
    seen = []

    class Medium:
        path = "/dev/x"

        def remove(self):
            pass

    def measure(path, runtime, cases=profiles.CALIBRATION_CASES, region_mb=None):
        seen.append((runtime, region_mb, len(cases)))
        return {profiles.case_name(*(*c, "4k")[:4]): 100.0 for c in cases}
    monkeypatch.setattr(calibrate, "measure", measure)
    monkeypatch.setattr(calibrate, "netram_topology", lambda p: (Medium(), []))
    monkeypatch.setattr(calibrate.configs, "remove_parts", lambda parts: None)
    monkeypatch.setattr(calibrate.configs, "media_used", lambda p: {"flash", "disk"})
    monkeypatch.setattr(calibrate.configs, "flash", lambda *a, **k: Medium())
    monkeypatch.setattr(calibrate.configs, "disk", lambda *a, **k: Medium())
    calibrate.media(profiles.get("quick"))
    assert {r for r, _, _ in seen} == {"1000ms", "8000ms"} and {m for _, m, _ in seen} == {64}
    seen.clear()
    calibrate.media(profiles.get("smoke"))
    # netram, the model of no delay (a page and 1 MiB), Flash; the disk 8
    # times as long
    assert seen == [("500ms", 16, 12), ("500ms", 16, 4), ("500ms", 16, 12),
                    ("4000ms", 16, len(profiles.SMALL_CASES))]


# A calibration's Network RAM and model of no delay under instruction
# counting (quick profile, build/vm/media-calib, 2026-11-26): a lone
# 1 MiB read costs Network RAM 2.9 ms more than one in a full queue, a
# page 133 us more.
NETRAM_VM = {"randread 4k qd1": 212.8, "randread 4k qd32": 79.5, "read 4k qd1": 206.2,
             "read 4k qd32": 66.4, "randwrite 4k qd1": 242.5, "randwrite 4k qd32": 134.9,
             "write 4k qd1": 234.4, "write 4k qd32": 117.5, "read 1m qd1": 10702.1,
             "read 1m qd32": 7791.4, "write 1m qd1": 10458.3, "write 1m qd32": 8632.7}
ZERO_VM = {"randread 4k qd1": 23.5, "randwrite 4k qd1": 23.6, "read 1m qd1": 1275.2,
           "write 1m qd1": 1271.9}


def test_flash_pages_and_1m_at_qd1_keep_their_ratio():
    # Network RAM's QD1 gap over QD32 is 2.9 ms for 1 MiB and 0.13 ms for
    # a page: a fixed latency that fits the page left 1 MiB 14.9% short
    # for reads (the gate's tolerance is 15%); the latency's part per
    # byte makes up the rest, and the page's fixed part gives it back.
    keys = profiles.flash_keys(NETRAM_VM, ZERO_VM)
    t = profiles.targets("flash", NETRAM_VM, profiles.get("quick"))
    for rw in ("read", "write"):
        for case, bs in ((f"rand{rw} 4k qd1", "4k"), (f"{rw} 1m qd1", "1m")):
            got = model_us(keys, ZERO_VM, rw, bs, 1)
            assert abs(got / t[case]["us"] - 1) < 0.01, (case, got, t[case])
        assert keys[f"{rw}_xfer_mbps"] > 0


def test_flash_1m_at_qd1_already_slow_enough_gets_no_latency_per_byte():
    # Where the bus and the guest's own cost already make 1 MiB at QD1
    # take its share (or more: a latency cannot be negative), the
    # latency is the page's alone, as before.
    netram = dict(NETRAM_VM, **{"read 1m qd1": 8000.0})
    keys = profiles.flash_keys(netram, ZERO_VM)
    assert keys["read_xfer_mbps"] == 0
    page = model_us(keys, ZERO_VM, "read", "4k", 1)
    assert abs(page / (netram["randread 4k qd1"] * 1.08) - 1) < 0.01
    # without the guest's own cost of 1 MiB (an old calibration), none
    keys = profiles.flash_keys(NETRAM_VM, {k: v for k, v in ZERO_VM.items() if "1m" not in k})
    assert keys["read_xfer_mbps"] == keys["write_xfer_mbps"] == 0


def test_fio_jobs_run_one_after_the_other_in_one_fio(monkeypatch):
    cmds = []
    out = {"jobs": [{"read": {"total_ios": 1}, "write": {"total_ios": 0}},
                    {"read": {"total_ios": 0}, "write": {"total_ios": 2}}]}
    monkeypatch.setattr(n2lbench, "sh", lambda cmd, **k: cmds.append(cmd) or json.dumps(out))
    got = n2lbench.fio_jobs("/dev/x", [("randread", "4k", 1), ("write", "1m", 32)], 64,
                            runtime=1, ramp="250ms")
    assert got == [{"total_ios": 1}, {"total_ios": 2}] and len(cmds) == 1
    jobs = cmds[0].split("--name=")[1:]
    assert [j.split() for j in jobs] == [
        ["job0", "--rw=randread", "--bs=4k", "--iodepth=1", "--stonewall"],
        ["job1", "--rw=write", "--bs=1m", "--iodepth=32", "--stonewall"]]
    assert "--time_based --runtime=1 --ramp_time=250ms" in cmds[0].split("--name=")[0]
