# SPDX-License-Identifier: GPL-2.0-only
"""make bench-meta's arithmetic (userspace/bench/meta.py), on the host:
runs paired by rep, throughput ratios with intervals, the goals' verdicts
and commits per fsync."""
import math

import pytest

import meta


def runs(swap, fsync):
    """Runs from {target: [seconds by rep]} and {target: [iops by rep]}."""
    out = []
    for target, secs in swap.items():
        out += [{"question": "swap", "target": target, "rep": i, "seconds": s,
                 "commits": 2 if target == "nswap2l+metadata" else None}
                for i, s in enumerate(secs)]
    for target, iops in fsync.items():
        out += [{"question": "fsync", "target": target, "rep": i, "iops": x,
                 "fsyncs": 100, "flash_flushes": 100,
                 "commits": 40 if target == "nswap2l+metadata" else None}
                for i, x in enumerate(iops)]
    return out


SWAP = {"dm-linear": [1.8, 1.8, 1.8], "nswap2l": [2.0, 2.0, 2.0],
        "nswap2l+metadata": [2.0, 2.02, 2.04]}
FSYNC = {"dm-linear": [1000, 1000, 1000], "nswap2l": [950, 960, 970],
         "nswap2l+metadata": [600, 650, 700]}


def by_target(summary, question, target):
    return next(q for q in summary if q["question"].startswith(question) and
                q["target"] == target)


def test_throughput_is_paired_by_rep_and_inverted_for_seconds():
    summary, _ = meta.summarize(runs(SWAP, FSYNC))
    q = by_target(summary, "swap", "nswap2l+metadata")
    # logs of 2.0/2.0, 2.0/2.02, 2.0/2.04: more seconds, less throughput
    logs = [0, math.log(2.0 / 2.02), math.log(2.0 / 2.04)]
    assert q["ratio"] == pytest.approx(math.exp(sum(logs) / 3))
    assert q["pairs"] == 3 and q["lo"] == pytest.approx(0.966, abs=1e-3)
    assert q["verdict"] == ">= 0.95: met"
    assert by_target(summary, "swap", "dm-linear")["ratio"] == pytest.approx(2.0 / 1.8)
    assert by_target(summary, "swap", "dm-linear")["verdict"] == "—"


def test_a_goal_is_met_only_by_the_whole_interval():
    summary, _ = meta.summarize(runs(SWAP, FSYNC))
    q = by_target(summary, "fsync", "nswap2l+metadata")
    assert q["ratio"] == pytest.approx((0.6 * 0.65 * 0.7) ** (1 / 3))
    assert q["lo"] < 0.7 < q["hi"] and q["verdict"] == ">= 0.70: inconclusive"
    low = dict(FSYNC, **{"nswap2l+metadata": [500, 510, 520]})
    q = by_target(meta.summarize(runs(SWAP, low))[0], "fsync", "nswap2l+metadata")
    assert q["verdict"] == ">= 0.70: MISSED"
    one = {t: v[:1] for t, v in FSYNC.items()}
    q = by_target(meta.summarize(runs(SWAP, one))[0], "fsync", "nswap2l+metadata")
    assert q["lo"] is None and q["verdict"] == ">= 0.70: too few pairs"


def test_commits_per_fsync_and_the_report():
    r = runs(SWAP, FSYNC)
    summary, per = meta.summarize(r)
    assert per == {"commits": 120, "fsyncs": 300, "ratio": 0.4}
    env = {"kernel": "6.1", "mode": "icount", "media": "null_blk", "runs": "3 reps."}
    md = "\n".join(meta.summary_lines({"date": "today", "environment": env,
                                       "summary": summary, "commits_per_fsync": per,
                                       "runs": r}))
    assert ("| fsync=32 IOPS on ext4 | nswap2l+metadata / dm-linear | 0.649 [0.536–0.786] | "
            ">= 0.70: inconclusive | 0.650 [—] | >= 0.70: too few pairs | 3 |") in md
    assert "| swap | nswap2l+metadata | 2 | 2.040 s | 2 | — | — |" in md
    assert "| fsync | dm-linear | 0 | 1000 IOPS | — | 100 | 100 |" in md
    assert "120 for 300 fsyncs, 0.400 an fsync" in md


def test_one_stalled_run_moves_the_median_interval_not_the_verdict():
    """12 reps, two stalled (45.6 s and 31.7 s against 1.87, the one on
    each side, as under instruction counting a wait on the host leaps the
    guest's clock): the t interval spans 0.47-2.43 and says nothing; the
    median of the pairs' ratios and its sign-test interval (ranks 3 and
    10 of 12, 96.1%) still answer the goal."""
    base = [1.87, 1.88, 1.87, 1.86, 1.88, 1.87, 1.88, 1.87, 1.89, 1.87, 1.88, 1.87]
    plain = list(base)
    plain[1] = 45.6
    kept = [s * f for s, f in zip(base, (1.0, 1.003, 0.998, 1.004, 1.001, 0.999,
                                          1.002, 1.0, 0.997, 1.003, 1.0, 1.001))]
    kept[7] = 31.7
    swap = {"dm-linear": base, "nswap2l": plain, "nswap2l+metadata": kept}
    q = by_target(meta.summarize(runs(swap, FSYNC))[0], "swap", "nswap2l+metadata")
    assert q["lo"] < 0.95 and q["verdict"] == ">= 0.95: inconclusive"
    assert q["median"] == pytest.approx(1.0, abs=0.004)
    assert 0.99 < q["median_lo"] <= q["median"] <= q["median_hi"] < 1.01
    assert q["median_verdict"] == ">= 0.95: met"


def test_the_median_interval_is_the_sign_tests():
    import stats
    assert stats.median_interval([3, 1, 2]) == (2, None, None)
    xs = list(range(1, 13))
    # 12 values: ranks 3 and 10 cover the median at 96.1%, 4 and 9 at 85.4%
    assert stats.median_interval(xs) == (6.5, 3, 10)
    assert stats.median_interval(list(range(1, 7))) == (3.5, 1, 6)  # 96.9%
