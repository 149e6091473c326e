# SPDX-License-Identifier: GPL-2.0-only
"""Helpers for the workload tests, and the suite's closing line.

The C workloads are tested in both builds: build/workloads (what the
benchmarks run) and build/workloads-san (ASan/UBSan); `make
workloads-test` builds both first.
"""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILDS = {
    "opt": ROOT / "build" / "workloads",
    "san": ROOT / "build" / "workloads-san",
}
COMMON_KEYS = ("workload", "status", "seconds", "wall_seconds",
               "footprint_mb", "limit_mb", "passes", "procs", "seed")

counts = {"passed": 0, "failed": 0}


def pytest_runtest_logreport(report):
    if report.when == "call" and report.passed:
        counts["passed"] += 1
    elif report.failed:
        counts["failed"] += 1


def pytest_collectreport(report):
    if report.failed:
        counts["failed"] += 1


def pytest_unconfigure(config):
    # after pytest's own summary, so that it is the last line
    print(f"workloads: {counts['passed']} passed, {counts['failed']} failed")


# Wrong for every workload, the HPL driver included
BAD_OPTIONS = [
    [],
    ["--limit-mb"],
    ["--limit-mb", "x"],
    ["--limit-mb", "0"],
    ["--limit-mb", "-2"],
    ["--limit-mb", "2", "--footprint", "1", "--footprint-mb", "2"],
    ["--limit-mb", "2", "--footprint", "nan"],
    ["--limit-mb", "2", "--footprint-mb", "0.000001"],
    ["--limit-mb", "2", "--passes", "0"],
    ["--limit-mb", "2", "--passes", "-1"],
    ["--limit-mb", "2", "--passes", "2x"],
    ["--limit-mb", "2", "--procs", "0"],
    ["--limit-mb", "2", "--procs", "100000"],
    ["--limit-mb", "2", "--seed", "seven"],
    ["--limit-mb", "2", "--corrupt-at", "0"],
    ["--limit-mb", "2", "--bogus"],
    ["--limit-mb", "2", "-x"],
    ["--limit-mb", "2", "stray"],
]


def assert_usage_error(proc):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert "usage:" in proc.stderr


def parse_result(stdout):
    """The one result line as a dict; fails unless it is well formed."""
    lines = stdout.splitlines()
    assert len(lines) == 1, f"want one result line, got {stdout!r}"
    pairs = [field.split("=", 1) for field in lines[0].split(" ")]
    assert all(len(p) == 2 and p[0] and p[1] for p in pairs), lines[0]
    result = dict(pairs)
    assert len(result) == len(pairs), f"a key twice: {lines[0]}"
    assert list(result)[:2] == ["workload", "status"], lines[0]
    for key in COMMON_KEYS:
        assert key in result, f"no {key}= in {lines[0]}"
    for key in ("seconds", "wall_seconds", "footprint_mb", "limit_mb"):
        assert float(result[key]) >= 0, lines[0]
    for key in ("passes", "procs", "seed"):
        int(result[key])
    assert ("reason" in result) == (result["status"] == "wrong"), lines[0]
    return result


# A sanitizer's report must never pass for exit 1, "wrong data, caught"
SANITIZER_ENV = {
    "ASAN_OPTIONS": "exitcode=86",
    "LSAN_OPTIONS": "exitcode=87",
    "UBSAN_OPTIONS": "exitcode=88:print_stacktrace=1",
}


def run(cmd, timeout=120, env=None, leaks=True):
    """@cmd's result, sanitizer reports failing it; leaks=False leaves
    leaks unchecked (Open MPI's)."""
    env = dict(os.environ if env is None else env, **SANITIZER_ENV)
    if not leaks:
        env["ASAN_OPTIONS"] += ":detect_leaks=0"
    return subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.fixture(params=sorted(BUILDS))
def bindir(request):
    path = BUILDS[request.param]
    if not path.is_dir():
        pytest.fail(f"{path} missing: run make workloads-test")
    return path
