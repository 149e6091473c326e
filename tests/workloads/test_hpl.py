# SPDX-License-Identifier: GPL-2.0-only
"""The HPL driver: its sizing, what it writes for hpcc, how it judges
hpcc's output (with a fake hpcc on PATH), and one real hpcc run."""

import importlib.machinery
import importlib.util
import os
import shutil
import sys

import pytest

from conftest import BAD_OPTIONS, ROOT, assert_usage_error, parse_result, run

DRIVER = ROOT / "userspace" / "workloads" / "hpl"
FAKE = ROOT / "tests" / "workloads" / "fake-hpcc"
MIB = 1024 * 1024


def load_driver():
    loader = importlib.machinery.SourceFileLoader("hpl_driver", str(DRIVER))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("mb", [0.05, 1, 3, 64, 200, 1000, 4096])
def test_matrix_fills_the_footprint(mb):
    footprint = int(mb * MIB)
    n, nb = load_driver().matrix_order(footprint)
    assert 8 * n * n <= footprint < 8 * (n + 1) ** 2
    assert n >= 8 * nb or nb == 8
    assert nb == 128 or 8 * 2 * nb > n


def test_no_matrix_below_a_few_blocks():
    assert load_driver().matrix_order(8 * 15 * 15)[0] == 0


@pytest.fixture
def fake_path(tmp_path):
    """PATH with the fake hpcc first; the real mpirun, if any, stays."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "hpcc").symlink_to(FAKE)
    return f"{bindir}{os.pathsep}{os.environ['PATH']}"


def driver(args, path, mode="PASSED", keep_input=None):
    env = dict(os.environ, PATH=path, FAKE_HPCC=mode)
    if keep_input:
        env["FAKE_HPCC_INPUT"] = str(keep_input)
    return run([sys.executable, DRIVER, *args], env=env)


def test_passed(fake_path, tmp_path):
    proc = driver(["--limit-mb", "16", "--passes", "3", "--seed", "9"],
                  fake_path, keep_input=tmp_path / "hpccinf.txt")
    assert proc.returncode == 0, proc.stderr
    result = parse_result(proc.stdout)
    n = int(result["n"])
    assert result["workload"] == "hpl" and result["status"] == "ok"
    assert n == int((1.5 * 16 * MIB / 8) ** 0.5)
    assert float(result["footprint_mb"]) == pytest.approx(24, rel=0.01)
    assert float(result["seconds"]) == pytest.approx(3 * 1.25)
    assert (result["passes"], result["procs"], result["seed"]) == \
        ("3", "1", "9")
    lines = (tmp_path / "hpccinf.txt").read_text().splitlines()
    assert lines[4].split()[0] == "3"
    assert lines[5].split()[:3] == [str(n)] * 3
    assert lines[7].split()[0] == result["nb"]
    assert [lines[10].split()[0], lines[11].split()[0]] == ["1", "1"]
    assert len(lines) == 36


@pytest.mark.parametrize("mode,reason", [("FAILED", "hpl-residual"),
                                         ("crash", "hpcc-incomplete")])
def test_not_passed_is_wrong(fake_path, mode, reason):
    proc = driver(["--limit-mb", "4"], fake_path, mode=mode)
    assert proc.returncode == 1, proc.stderr
    result = parse_result(proc.stdout)
    assert result["status"] == "wrong" and result["reason"] == reason


def test_no_hpcc_is_a_setup_failure(tmp_path):
    proc = driver(["--limit-mb", "4"], str(tmp_path))
    assert proc.returncode == 3
    assert proc.stdout == "" and "hpcc" in proc.stderr


@pytest.mark.parametrize("args", BAD_OPTIONS + [
    ["--limit-mb", "4", "--passes", "21"],
    ["--limit-mb", "4", "--procs", "2"],
    ["--limit-mb", "4", "--seed", "-1"],
], ids=" ".join)
def test_bad_options(fake_path, args):
    assert_usage_error(driver(args, fake_path))


@pytest.mark.skipif(not shutil.which("hpcc"), reason="hpcc not installed")
def test_real_hpcc():
    proc = run([sys.executable, DRIVER, "--limit-mb", "4", "--footprint-mb",
                "4", "--passes", "2"], timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = parse_result(proc.stdout)
    assert result["status"] == "ok" and result["n"] == "724"
    assert float(result["residual"]) < 16
