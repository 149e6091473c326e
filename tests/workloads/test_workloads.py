# SPDX-License-Identifier: GPL-2.0-only
"""The C workloads, natively at a few MiB: they run, they report, they
refuse bad options, and -- the point of them -- a flipped byte in their
data (--corrupt-at, as a faulty swap device would) fails the run."""

import pytest

from conftest import BAD_OPTIONS, assert_usage_error, parse_result, run

MIB = 1024 * 1024
LIMIT_MB = 2
# name: default footprint (times the limit), passes, procs
DEFAULTS = {
    "wl1": (1.75, 3, 1),
    "wl2": (1.75, 3, 1),
    "wl4": (2.0, 3, 4),
    "radix": (1.5, 1, 4),
    "is": (1.5, 10, 4),
}
PAGED = ("wl1", "wl2", "wl4")
SORTS = ("radix", "is")
REASONS = {"page-content", "touch-count", "checksum", "unsorted",
           "digit-count", "key-range", "test-key", "partial-rank",
           "rank-range"}


def workload(bindir, name, *args):
    return run([bindir / name, "--limit-mb", LIMIT_MB, *args])


def result_ok(proc, name):
    assert proc.returncode == 0, proc.stderr
    result = parse_result(proc.stdout)
    assert result["workload"] == name
    assert result["status"] == "ok"
    return result


@pytest.mark.parametrize("name", DEFAULTS)
def test_defaults(bindir, name):
    factor, passes, procs = DEFAULTS[name]
    result = result_ok(workload(bindir, name), name)
    assert float(result["limit_mb"]) == LIMIT_MB
    assert float(result["footprint_mb"]) == pytest.approx(
        factor * LIMIT_MB, rel=0.01)
    assert int(result["passes"]) == passes
    assert int(result["procs"]) == procs
    assert int(result["seed"]) == 1


@pytest.mark.parametrize("name", DEFAULTS)
def test_options_are_used(bindir, name):
    procs = "1" if DEFAULTS[name][2] == 1 else "3"
    result = result_ok(workload(bindir, name, "--footprint-mb", "3",
                                "--passes", "2", "--procs", procs,
                                "--seed", "77"), name)
    assert float(result["footprint_mb"]) == pytest.approx(3, rel=0.01)
    assert (result["passes"], result["procs"], result["seed"]) == \
        ("2", procs, "77")


@pytest.mark.parametrize("name", PAGED)
def test_paged_counts(bindir, name):
    result = result_ok(workload(bindir, name, "--passes", "2"), name)
    pages = int(result["pages"])
    assert int(result["touches"]) == 2 * pages
    assert pages * 4096 == pytest.approx(float(result["footprint_mb"]) * MIB,
                                         abs=0.01 * MIB)


def test_radix_counts(bindir):
    result = result_ok(workload(bindir, "radix"), "radix")
    assert int(result["keys"]) == int(1.5 * LIMIT_MB * MIB) // 8
    assert result["digits"] == "4"


def test_is_counts(bindir):
    result = result_ok(workload(bindir, "is", "--passes", "4"), "is")
    keys, max_key = int(result["keys"]), int(result["max_key"])
    assert int(result["ranks_checked"]) == 5 * 4
    assert max_key & (max_key - 1) == 0
    assert 16 * max_key <= keys <= 33 * max_key
    assert 8 * keys + 4 * max_key == pytest.approx(1.5 * LIMIT_MB * MIB,
                                                   abs=8)


@pytest.mark.parametrize("name", DEFAULTS)
def test_checksum_follows_the_seed(bindir, name):
    def checksum(*args):
        return result_ok(workload(bindir, name, *args), name)["checksum"]

    assert checksum("--seed", "5") == checksum("--seed", "5")
    assert checksum("--seed", "5") != checksum("--seed", "6")


@pytest.mark.parametrize("name", SORTS)
def test_checksum_independent_of_threads(bindir, name):
    sums = {result_ok(workload(bindir, name, "--procs", p), name)["checksum"]
            for p in ("1", "2", "5")}
    assert len(sums) == 1


# (workload, extra arguments, operations after which a byte is flipped).
# 2 MiB * 1.75 is 896 pages: touches 1, 896 (the end of WL1's first
# sweep) and 2688 (the very last, caught only by the final sweep).
CORRUPTIONS = [
    ("wl1", [], [1, 500, 896, 2688]),
    ("wl2", [], [1, 1000, 2688]),
    ("wl4", [], [1, 300, 768]),
    ("radix", ["--passes", "2"], [1, 2, 3, 4, 5, 8]),
    ("is", [], [1, 4, 10]),
]


@pytest.mark.parametrize("name,args,at", [
    (name, args, at) for name, args, ats in CORRUPTIONS for at in ats])
@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_corruption_is_caught(bindir, name, args, at, seed):
    proc = workload(bindir, name, *args, "--seed", seed,
                    "--corrupt-at", str(at))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = parse_result(proc.stdout)
    assert result["status"] == "wrong"
    assert result["reason"] in REASONS


@pytest.mark.parametrize("name", DEFAULTS)
def test_corruption_past_the_end_changes_nothing(bindir, name):
    result_ok(workload(bindir, name, "--corrupt-at", "1000000000"), name)


@pytest.mark.parametrize("name", DEFAULTS)
@pytest.mark.parametrize("args", BAD_OPTIONS, ids=" ".join)
def test_bad_options(bindir, name, args):
    assert_usage_error(run([bindir / name, *args]))


@pytest.mark.parametrize("name", ("wl1", "wl2"))
def test_single_process_only(bindir, name):
    assert_usage_error(workload(bindir, name, "--procs", "2"))


def test_is_rejects_more_passes_than_keys_allow(bindir):
    assert_usage_error(workload(bindir, "is", "--footprint-mb", "0.3",
                                "--passes", "20000"))


@pytest.mark.parametrize("name", DEFAULTS)
def test_help(bindir, name):
    proc = run([bindir / name, "--help"])
    assert proc.returncode == 0 and proc.stdout.startswith("usage:")
