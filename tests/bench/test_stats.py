# SPDX-License-Identifier: GPL-2.0-only
"""Paired log-ratio estimates and their 95% intervals (stats.py), against
values worked by hand and Student's t table."""
import math

import pytest

import stats


@pytest.mark.parametrize("df,t", [
    # closed forms: df 1 is Cauchy's, tan(pi (p - 1/2)); df 2:
    # (2p - 1) sqrt(2 / (4 p (1 - p)))
    (1, math.tan(math.pi * 0.475)),
    (2, 0.95 * math.sqrt(2 / (4 * 0.975 * 0.025))),
    # Student's table (two-sided 95%)
    (3, 3.182446), (5, 2.570582), (10, 2.228139), (17, 2.109816),
    (30, 2.042272), (120, 1.979930),
])
def test_t_quantile_matches_closed_forms_and_the_table(df, t):
    assert stats.t_quantile(0.975, df) == pytest.approx(t, rel=1e-6)
    assert stats.t_quantile(0.025, df) == pytest.approx(-t, rel=1e-6)


def test_t_quantile_tends_to_the_normal_and_refuses_nonsense():
    assert stats.t_quantile(0.975, 1e7) == pytest.approx(1.959964, rel=1e-6)
    assert stats.t_quantile(0.5, 4) == pytest.approx(0, abs=1e-9)
    # df 1 at 0.995: tan(0.495 pi) = 63.657
    assert stats.t_quantile(0.995, 1) == pytest.approx(63.656741, rel=1e-6)
    for p, df in ((0, 3), (1, 3), (0.9, 0)):
        with pytest.raises(ValueError):
            stats.t_quantile(p, df)


def test_betainc_closed_forms():
    # I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 - (1 - x)^b
    assert stats.betainc(1, 1, 0.3) == pytest.approx(0.3)
    assert stats.betainc(2.5, 1, 0.4) == pytest.approx(0.4 ** 2.5)
    assert stats.betainc(1, 3, 0.2) == pytest.approx(1 - 0.8 ** 3)
    assert stats.betainc(3, 2, 0) == 0 and stats.betainc(3, 2, 1) == 1


def test_interval_of_three_pairs_by_hand():
    # log ratios 0, 0.02, 0.04: mean 0.02, sd 0.02, se 0.02 / sqrt 3 =
    # 0.0115470; t(0.975, 2) = 4.302653: half width 0.0496828
    est = stats.estimate([0.0, 0.02, 0.04])
    assert est.n == 3
    assert est.ratio == pytest.approx(math.exp(0.02))            # 1.0202
    assert est.lo == pytest.approx(math.exp(0.02 - 0.0496828), rel=1e-6)  # 0.9708
    assert est.hi == pytest.approx(math.exp(0.02 + 0.0496828), rel=1e-6)  # 1.0722
    assert str(est) == "1.020 [0.971–1.072]" and est.verdict() == "inconclusive"


def cells_of(a_times, b_times, a="auto", b="none", **kw):
    return [dict({"config": c, "workload": "radix", "rep": r, "seed": "1",
                  "status": "ok", "seconds": t}, **kw)
            for c, times in ((a, a_times), (b, b_times)) for r, t in enumerate(times)]


def test_verdicts_need_the_interval_to_say_so():
    # two pairs, ratios 0.8 and 2.2/2.7: logs -0.223144, -0.204794; mean
    # -0.213969 (0.8074); sd 0.012975, se 0.009175, t(1) 12.706205:
    # half 0.116577 -> [0.7185, 0.9072]
    est = stats.compare(cells_of([2.0, 2.2], [2.5, 2.7]), "auto", "none")
    assert str(est) == "0.807 [0.719–0.907]" and est.verdict() == "faster"
    assert stats.line("auto", "none", est) == \
        "auto / none 0.807 [0.719–0.907] faster (2 pairs)"
    assert stats.compare(cells_of([2.5, 2.7], [2.0, 2.2]), "auto", "none").verdict() == "slower"
    # 5 pairs a hair apart, both ways: within +-1%, no difference
    est = stats.compare(cells_of([10.01, 9.99, 10.02, 9.98, 10.0], [10] * 5), "auto", "none")
    assert 0.99 <= est.lo < 1 < est.hi <= 1.01 and est.verdict() == "no difference"
    # the same spread around 1 but wider than 1%: inconclusive, not "no difference"
    est = stats.compare(cells_of([10.3, 9.7, 10.4, 9.6, 10.0], [10] * 5), "auto", "none")
    assert est.lo < 0.99 and est.verdict() == "inconclusive"
    # one pair: a ratio, no interval, no verdict
    est = stats.compare(cells_of([5.0], [10.0]), "auto", "none")
    assert (est.ratio, est.lo, est.n) == (0.5, None, 1)
    assert str(est) == "0.500 [—]" and est.verdict() == "too few pairs"
    assert stats.compare(cells_of([5.0], []), "auto", "none") is None


def test_only_runs_of_one_workload_point_rep_seed_and_boot_pair():
    cells = cells_of([2.0, 4.0], [1.0, 2.0])
    cells += [{"config": "auto", "workload": "wl2", "rep": 0, "seed": "1", "status": "ok",
               "seconds": 9.0},                                     # no wl2 of none
              {"config": "none", "workload": "radix", "rep": 2, "seed": "1",
               "status": "failed", "seconds": None},                # failed
              {"config": "auto", "workload": "radix", "rep": 2, "seed": "1", "status": "ok",
               "seconds": 1.0}]
    assert sorted(stats.pairs(cells, "auto", "none")) == [(2.0, 1.0), (4.0, 2.0)]
    # another seed, another point, another boot: not a pair
    for key, value in (("seed", "2"), ("point", {"procs": 8}), ("boot", "b2")):
        other = [dict(c, **{key: value}) if c["config"] == "auto" and c["rep"] == 1 else c
                 for c in cells]
        assert stats.pairs(other, "auto", "none") == [(2.0, 1.0)], key
    both = [dict(c, boot="b1") for c in cells]
    assert len(stats.pairs(both, "auto", "none")) == 2


def test_points_asking_the_same_question_pool():
    cells = []
    for procs, ratios in ((2, (1.01, 1.03)), (8, (1.02, 1.04))):
        for r, x in enumerate(ratios):
            for c, t in (("rr", 10 * x), ("none", 10.0)):
                cells.append({"config": c, "workload": "radix", "rep": r, "seed": "1",
                              "status": "ok", "seconds": t, "point": {"procs": procs}})
    est = stats.compare(cells, "rr", "none")
    logs = [math.log(x) for x in (1.01, 1.03, 1.02, 1.04)]
    assert est.n == 4 and est.ratio == pytest.approx(math.exp(sum(logs) / 4))
    assert est.lo > 1 and est.verdict() == "slower"
    two = stats.compare(cells, "rr", "none", where=lambda c: c["point"]["procs"] == 2)
    assert two.n == 2 and two.ratio == pytest.approx(math.sqrt(1.01 * 1.03))
