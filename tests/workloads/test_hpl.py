# SPDX-License-Identifier: GPL-2.0-only
"""The HPL driver: its process grid and sizing, what it asks hpl-solve
for, how it starts and judges it (with a fake hpl-solve), and real
hpl-solve runs: right on two processes, and wrong when x is corrupted."""

import importlib.machinery
import importlib.util
import os
import shutil
import sys

import pytest

from conftest import BAD_OPTIONS, ROOT, assert_usage_error, parse_result, run

DRIVER = ROOT / "userspace" / "workloads" / "hpl"
FAKE = ROOT / "tests" / "workloads" / "fake-hpl-solve"
# Open MPI never frees what it allocates at start-up (some in components
# it has unloaded by exit, which no suppression can name): the sanitized
# hpl-solve runs with ASan and UBSan, leaks unchecked (run's leaks=False).
MIB = 1024 * 1024
GRIDS = {1: (1, 1), 2: (1, 2), 3: (1, 3), 4: (2, 2), 5: (1, 5), 6: (2, 3),
         7: (1, 7), 8: (2, 4), 9: (3, 3), 10: (2, 5), 11: (1, 11),
         12: (3, 4), 13: (1, 13), 14: (2, 7), 15: (3, 5), 16: (4, 4)}
needs_mpirun = pytest.mark.skipif(not shutil.which("mpirun"),
                                  reason="mpirun not installed")


def load_driver():
    loader = importlib.machinery.SourceFileLoader("hpl_driver", str(DRIVER))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.mark.parametrize("procs", sorted(GRIDS))
def test_process_grid(procs):
    assert load_driver().process_grid(procs) == GRIDS[procs]


@pytest.mark.parametrize("grid", [(1, 1), (1, 2), (2, 2), (4, 4)], ids=str)
@pytest.mark.parametrize("mb", [0.05, 1, 3, 64, 200, 1000, 4096])
def test_matrix_fills_the_footprint(mb, grid):
    footprint = int(mb * MIB)
    n, nb = load_driver().matrix_order(footprint, grid)
    span = max(grid)
    assert 8 * n * n <= footprint < 8 * (n + 1) ** 2
    assert n >= 8 * nb * span or nb == 8
    assert nb == 128 or 8 * 2 * nb * span > n


@pytest.mark.parametrize("grid", [(1, 1), (1, 2), (2, 2), (1, 13), (4, 4)],
                         ids=str)
def test_no_matrix_below_two_blocks_a_process(grid):
    hpl = load_driver()
    smallest = 2 * 8 * max(grid)
    assert hpl.matrix_order(8 * smallest ** 2, grid) == (smallest, 8)
    assert hpl.matrix_order(8 * smallest ** 2 - 1, grid)[0] == 0


def test_solver_asked_for_four_procs():
    hpl = load_driver()
    args = hpl.parse_args(["--limit-mb", "16", "--procs", "4",
                           "--passes", "2", "--seed", "7"])
    n = int((1.5 * 16 * MIB / 8) ** 0.5)
    assert (args.n, args.nb) == (n, 64)
    assert hpl.solver_argv(args) == [str(n), "64", "2", "2", "2", "7"]


def test_launch_command(tmp_path, monkeypatch):
    mpirun = tmp_path / "mpirun"
    mpirun.touch(mode=0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert load_driver().launcher(6) == [
        str(mpirun), "--allow-run-as-root", "--oversubscribe",
        "--mca", "btl", "self,vader", "--mca", "mpi_yield_when_idle", "1",
        "-np", "6"]


def test_singleton_without_mpirun(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert load_driver().launcher(1) == []


def driver(args, mode="PASSED", path=None, solver=FAKE, extra_env=None):
    env = dict(os.environ, FAKE_HPL=mode, HPL_SOLVE=str(solver),
               **(extra_env or {}))
    if path is not None:
        env["PATH"] = path
    return run([sys.executable, DRIVER, *args], env=env)


def test_passed(tmp_path):
    asked = tmp_path / "args"
    proc = driver(["--limit-mb", "16", "--passes", "3", "--seed", "9"],
                  extra_env={"FAKE_HPL_ARGS": str(asked)})
    assert proc.returncode == 0, proc.stderr
    result = parse_result(proc.stdout)
    n = int(result["n"])
    assert result["workload"] == "hpl" and result["status"] == "ok"
    assert n == int((1.5 * 16 * MIB / 8) ** 0.5)
    assert float(result["footprint_mb"]) == pytest.approx(24, rel=0.01)
    assert float(result["seconds"]) == pytest.approx(3 * 1.25)
    assert float(result["residual"]) == pytest.approx(0.005)
    assert (result["passes"], result["procs"], result["grid"],
            result["seed"]) == ("3", "1", "1x1", "9")
    assert asked.read_text().split() == [str(n), result["nb"], "1", "1", "3", "9"]


@needs_mpirun
def test_started_once_per_process(tmp_path):
    starts = tmp_path / "starts"
    proc = driver(["--limit-mb", "16", "--procs", "4"],
                  extra_env={"FAKE_HPL_STARTS": str(starts)})
    assert proc.returncode == 0, proc.stderr
    result = parse_result(proc.stdout)
    assert result["status"] == "ok"
    assert (result["procs"], result["grid"]) == ("4", "2x2")
    assert float(result["seconds"]) == pytest.approx(1.25)
    # the fake also fails unless the grid takes all 4; PMIx keeps its
    # store in the processes, not in segments charged to the workload
    # (under a slow swap device their fallocate() failed, and MPI_Init)
    assert sorted(starts.read_text().splitlines()) == \
        ["0 4 hash", "1 4 hash", "2 4 hash", "3 4 hash"]


@pytest.mark.parametrize("mode,reason", [("FAILED", "hpl-residual"),
                                         ("nan", "hpl-residual"),
                                         ("singular", "hpl-residual"),
                                         ("crash", "hpl-incomplete")])
def test_not_passed_is_wrong(mode, reason):
    proc = driver(["--limit-mb", "4", "--passes", "2"], mode=mode)
    assert proc.returncode == 1, proc.stderr
    result = parse_result(proc.stdout)
    assert result["status"] == "wrong" and result["reason"] == reason


def test_no_solver_is_a_setup_failure(tmp_path):
    proc = driver(["--limit-mb", "4"], solver=tmp_path / "none")
    assert proc.returncode == 3
    assert proc.stdout == "" and "hpl-solve" in proc.stderr


def test_procs_without_mpirun_is_a_setup_failure(tmp_path):
    proc = driver(["--limit-mb", "4", "--procs", "2"], path=str(tmp_path))
    assert proc.returncode == 3
    assert proc.stdout == "" and "mpirun" in proc.stderr


@pytest.mark.parametrize("args", BAD_OPTIONS + [
    ["--limit-mb", "4", "--passes", "21"],
    ["--limit-mb", "4", "--seed", "-1"],
], ids=" ".join)
def test_bad_options(args):
    assert_usage_error(driver(args))


@pytest.mark.parametrize("procs", ["0", "17", "2.5", "two"])
def test_bad_procs(procs):
    proc = driver(["--limit-mb", "4", "--procs", procs])
    assert_usage_error(proc)
    assert "--procs" in proc.stderr


def test_footprint_too_small_for_the_grid():
    args = ["--limit-mb", "4", "--footprint-mb", "0.02"]
    assert load_driver().parse_args(args).n == 51
    proc = driver(args + ["--procs", "16"])
    assert_usage_error(proc)
    assert "4x4" in proc.stderr


def solve(argv, bindir, procs=1):
    """hpl-solve of @bindir on @procs processes."""
    launch = load_driver().launcher(procs) if procs > 1 else []
    return run(launch + [bindir / "hpl-solve", *argv], timeout=600, leaks=False)


@needs_mpirun
def test_real_solve(bindir):
    proc = run([sys.executable, DRIVER, "--limit-mb", "4", "--footprint-mb",
                "1", "--passes", "2", "--procs", "2"], timeout=600,
               env=dict(os.environ, HPL_SOLVE=str(bindir / "hpl-solve")), leaks=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = parse_result(proc.stdout)
    assert result["status"] == "ok" and result["grid"] == "1x2"
    assert (result["n"], result["nb"]) == ("362", "16")
    assert 0 < float(result["residual"]) < 16


@pytest.mark.parametrize("grid", [(1, 1), (2, 2)], ids=str)
def test_real_solver_checks_its_answer(grid, bindir):
    """One element of x changed before the check: the residual is far over
    HPL's 16, on any grid; the second pass, untouched, passes."""
    p, q = grid
    if p * q > 1 and not shutil.which("mpirun"):
        pytest.skip("mpirun not installed")
    proc = solve(["256", "16", str(p), str(q), "2", "5", "--corrupt"], bindir, p * q)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, second = proc.stdout.splitlines()
    assert first.startswith("pass=0 ") and second.startswith("pass=1 ")
    assert float(first.split("residual=")[1].split()[0]) > 1e6
    assert float(second.split("residual=")[1].split()[0]) < 16


@needs_mpirun
def test_real_solver_same_system_on_any_grid(bindir):
    """A and b come from the seed, not from the grid: x agrees within
    rounding on 1x1, 1x2 and 2x2, and another seed gives another x."""
    def xsum(procs, p, q, seed="3"):
        proc = solve(["200", "16", p, q, "1", seed], bindir, procs)
        assert proc.returncode == 0, proc.stderr
        return float(proc.stdout.split("xsum=")[1].split()[0])

    sums = [xsum(1, "1", "1"), xsum(2, "1", "2"), xsum(4, "2", "2")]
    assert max(sums) - min(sums) <= 1e-9 * max(map(abs, sums)), sums
    assert abs(xsum(1, "1", "1", seed="4") - sums[0]) > 1e-6 * abs(sums[0])


@pytest.mark.parametrize("argv", [[], ["200", "16", "1", "1", "1"],
                                  ["0", "16", "1", "1", "1", "1"],
                                  ["200", "16", "1", "2", "1", "1"],
                                  ["200", "16", "1", "1", "21", "1"],
                                  ["200", "16", "1", "1", "1", "-1"],
                                  ["200", "x", "1", "1", "1", "1"]], ids=str)
def test_real_solver_bad_arguments(argv, bindir):
    proc = solve(argv, bindir)
    assert proc.returncode == 2
    assert proc.stdout == "" and "hpl-solve" in proc.stderr
