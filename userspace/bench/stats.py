# SPDX-License-Identifier: GPL-2.0-only
"""Paired comparisons of benchmark runs, with 95% confidence intervals.

Two configurations are compared by their runs in pairs: the same
workload at the same point (link delay, Flash, processes...), the same
rep and seed, within one boot (the boot id, where a run recorded one).
Each pair gives a log ratio, log(time of a / time of b); the estimate
is exp of their mean, its interval exp of Student's t-interval on that
mean, 95% two-sided:

    mean +- t(0.975, n - 1) * sd / sqrt(n)

Log ratios make "twice as slow" and "half the time" the same distance
from 1, and a product of ratios a sum. Pairs of several points that ask
the same question (RR against no prefetching on Radix, at every link
delay) are pooled: their log ratios are one sample, as if each were
another rep.

Verdicts: "faster" or "slower" only when the interval excludes 1; "no
difference" only when the whole interval lies within +-1% (0.99 to
1.01): the absence of a difference is shown, not assumed from the
absence of evidence; "inconclusive" otherwise; "too few pairs" under 2.

Written as `auto / none 0.987 [0.975–0.999]`. scipy is not installed
here: the t quantile inverts Student's distribution function, the
regularized incomplete beta function by its continued fraction
(Numerical Recipes, 2nd ed., 6.4), by bisection."""
import math
import statistics
from dataclasses import dataclass

LEVEL = 0.95
# "no difference": the whole interval within this of 1.
EQUIVALENCE = 0.01
MIN_PAIRS = 2


def _betacf(a, b, x):
    """The continued fraction of the incomplete beta function (modified
    Lentz), converging for x < (a + 1) / (a + b + 2)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                    -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < eps:
            return h
    raise ArithmeticError(f"incomplete beta: no convergence at a={a} b={b} x={x}")


def betainc(a, b, x):
    """The regularized incomplete beta function I_x(a, b)."""
    if not 0 <= x <= 1:
        raise ValueError(f"x = {x} is outside [0, 1]")
    if x in (0, 1):
        return float(x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_cdf(t, df):
    """P(T <= t) for Student's t with df degrees of freedom."""
    tail = 0.5 * betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t_quantile(p, df):
    """The t with P(T <= t) = p, to 1e-12 relative."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError(f"t quantile of p={p} with df={df}")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


@dataclass(frozen=True)
class Estimate:
    """A ratio of times a / b from n pairs, and its interval (None with
    fewer than two pairs)."""
    ratio: float
    lo: float
    hi: float
    n: int

    def verdict(self):
        if self.lo is None:
            return "too few pairs"
        if self.hi < 1:
            return "faster"
        if self.lo > 1:
            return "slower"
        if self.lo >= 1 - EQUIVALENCE and self.hi <= 1 + EQUIVALENCE:
            return "no difference"
        return "inconclusive"

    def __str__(self):
        if self.lo is None:
            return f"{self.ratio:.3f} [—]"
        return f"{self.ratio:.3f} [{self.lo:.3f}–{self.hi:.3f}]"


def estimate(log_ratios):
    """The Estimate of a sample of log ratios; None if it is empty."""
    n = len(log_ratios)
    if not n:
        return None
    mean = statistics.fmean(log_ratios)
    if n < MIN_PAIRS:
        return Estimate(math.exp(mean), None, None, n)
    half = t_quantile((1 + LEVEL) / 2, n - 1) * statistics.stdev(log_ratios) / math.sqrt(n)
    return Estimate(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n)


def median_interval(values, level=LEVEL):
    """(median, lo, hi) of @values: lo and hi the order statistics that
    cover the median at @level or more and lie closest to it (the sign
    test's interval, which assumes nothing of the distribution: a stray
    value, however far, moves neither); None and None when no pair does
    (under 6 values at 95%)."""
    xs = sorted(values)
    n = len(xs)
    lo = hi = None
    for j in range(n // 2):
        below = sum(math.comb(n, i) for i in range(j + 1)) / 2 ** n
        if 1 - 2 * below < level:
            break
        lo, hi = xs[j], xs[n - 1 - j]
    return statistics.median(xs), lo, hi


def point_of(cell):
    """Where a run ran, as a hashable key: its point (sweep.py, prefetch
    .py), or none."""
    return tuple(sorted((cell.get("point") or {}).items()))


def pair_key(cell):
    """What two runs must share to be a pair: workload, point, rep, seed,
    and the boot, where both recorded one (boot is None otherwise)."""
    return (cell["workload"], point_of(cell), cell["rep"], str(cell.get("seed", "")),
            cell.get("boot"))


def pairs(cells, a, b, key="seconds", where=None):
    """[(a's value, b's value)] of every pair of good runs of
    configurations a and b; where(cell) picks the runs that count."""
    def good(config):
        return {pair_key(c): c[key] for c in cells
                if c["config"] == config and c["status"] == "ok" and c.get(key)
                and (where is None or where(c))}
    mine, base = good(a), good(b)
    return [(mine[k], base[k]) for k in sorted(mine, key=repr) if k in base]


def log_ratios(cells, a, b, key="seconds", where=None):
    return [math.log(x / y) for x, y in pairs(cells, a, b, key, where)]


def compare(cells, a, b, key="seconds", where=None):
    """The Estimate of a / b over every pair of their runs that where()
    keeps (pooled over whatever points those runs are at); None without
    a pair."""
    return estimate(log_ratios(cells, a, b, key, where))


def line(a, b, est):
    """`a / b 0.987 [0.975–0.999] faster (18 pairs)`."""
    if est is None:
        return f"{a} / {b}: no pair"
    return f"{a} / {b} {est} {est.verdict()} ({est.n} pair{'s' if est.n != 1 else ''})"
