# SPDX-License-Identifier: GPL-2.0-only
"""The HPL driver: its process grid and sizing, what it writes for hpcc,
how it starts and judges hpcc (with a fake hpcc on PATH), and one real
hpcc run on two processes."""

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


def test_input_for_four_procs():
    hpl = load_driver()
    args = hpl.parse_args(["--limit-mb", "16", "--procs", "4",
                           "--passes", "2"])
    lines = hpl.hpcc_input(args).splitlines()
    n = int((1.5 * 16 * MIB / 8) ** 0.5)
    assert (args.n, args.nb) == (n, 64)
    assert lines[4].split()[0] == "2"
    assert lines[5].split()[:3] == [str(n), str(n), "Ns"]
    assert lines[7].split()[:2] == ["64", "NBs"]
    assert lines[9].split()[0] == "1"
    assert [lines[10].split(), lines[11].split()] == [["2", "Ps"],
                                                      ["2", "Qs"]]
    assert len(lines) == 36


def test_launch_command(tmp_path, monkeypatch):
    mpirun = tmp_path / "mpirun"
    mpirun.touch(mode=0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert load_driver().launcher("/bin/hpcc", 6) == [
        str(mpirun), "--allow-run-as-root", "--oversubscribe",
        "--mca", "btl", "self,vader", "--mca", "mpi_yield_when_idle", "1",
        "-np", "6", "/bin/hpcc"]


def test_singleton_without_mpirun(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert load_driver().launcher("/bin/hpcc", 1) == ["/bin/hpcc"]


@pytest.fixture
def fake_path(tmp_path):
    """PATH with the fake hpcc first; the real mpirun, if any, stays."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "hpcc").symlink_to(FAKE)
    return f"{bindir}{os.pathsep}{os.environ['PATH']}"


def driver(args, path, mode="PASSED", keep_input=None, extra_env=None):
    env = dict(os.environ, PATH=path, FAKE_HPCC=mode, **(extra_env or {}))
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
    assert (result["passes"], result["procs"], result["grid"],
            result["seed"]) == ("3", "1", "1x1", "9")
    lines = (tmp_path / "hpccinf.txt").read_text().splitlines()
    assert lines[4].split()[0] == "3"
    assert lines[5].split()[:3] == [str(n)] * 3
    assert lines[7].split()[0] == result["nb"]
    assert [lines[10].split()[0], lines[11].split()[0]] == ["1", "1"]
    assert len(lines) == 36


@needs_mpirun
def test_started_once_per_process(fake_path, tmp_path):
    starts = tmp_path / "starts"
    proc = driver(["--limit-mb", "16", "--procs", "4"], fake_path,
                  extra_env={"FAKE_HPCC_STARTS": str(starts)})
    assert proc.returncode == 0, proc.stderr
    result = parse_result(proc.stdout)
    assert result["status"] == "ok"
    assert (result["procs"], result["grid"]) == ("4", "2x2")
    assert float(result["seconds"]) == pytest.approx(1.25)
    # the fake also fails unless hpccinf.txt's grid takes all 4; PMIx keeps
    # its store in the processes, not in segments charged to the workload
    # (under a slow swap device their fallocate() failed, and MPI_Init)
    assert sorted(starts.read_text().splitlines()) == \
        ["0 4 hash", "1 4 hash", "2 4 hash", "3 4 hash"]


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


def test_procs_without_mpirun_is_a_setup_failure(fake_path):
    only_hpcc = fake_path.split(os.pathsep)[0]
    proc = driver(["--limit-mb", "4", "--procs", "2"], only_hpcc)
    assert proc.returncode == 3
    assert proc.stdout == "" and "mpirun" in proc.stderr


@pytest.mark.parametrize("args", BAD_OPTIONS + [
    ["--limit-mb", "4", "--passes", "21"],
    ["--limit-mb", "4", "--seed", "-1"],
], ids=" ".join)
def test_bad_options(fake_path, args):
    assert_usage_error(driver(args, fake_path))


@pytest.mark.parametrize("procs", ["0", "17", "2.5", "two"])
def test_bad_procs(fake_path, procs):
    proc = driver(["--limit-mb", "4", "--procs", procs], fake_path)
    assert_usage_error(proc)
    assert "--procs" in proc.stderr


def test_footprint_too_small_for_the_grid(fake_path):
    args = ["--limit-mb", "4", "--footprint-mb", "0.02"]
    assert load_driver().parse_args(args).n == 51
    proc = driver(args + ["--procs", "16"], fake_path)
    assert_usage_error(proc)
    assert "4x4" in proc.stderr


@pytest.mark.skipif(not shutil.which("hpcc"), reason="hpcc not installed")
@needs_mpirun
def test_real_hpcc():
    # A second alone; the suite runs it beside the VM tests, whose QEMUs
    # keep both cores busy, and the two processes then wait on each other
    # through every one of hpcc's small-message kernels: 16 s measured.
    proc = run([sys.executable, DRIVER, "--limit-mb", "4", "--footprint-mb",
                "1", "--passes", "2", "--procs", "2"], timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = parse_result(proc.stdout)
    assert result["status"] == "ok" and result["grid"] == "1x2"
    assert (result["n"], result["nb"]) == ("362", "16")
    assert float(result["residual"]) < 16
