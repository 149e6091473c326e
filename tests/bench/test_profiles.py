# SPDX-License-Identifier: GPL-2.0-only
"""Profiles: what each workload is asked to run."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "userspace", "pylib"))
import profiles  # noqa: E402
import runner  # noqa: E402


def procs_arg(profile, workload):
    argv = runner.workload_argv(profile, workload)
    return argv[argv.index("--procs") + 1] if "--procs" in argv else None


def test_each_workload_gets_its_process_count():
    p = profiles.get("quick", procs=8, hpl_procs=4)
    assert [procs_arg(p, w) for w in profiles.WORKLOADS] == \
        [None, None, "8", "8", "8", "4"]
    assert procs_arg(profiles.get("quick"), "hpl") == "1"


def test_full_runs_several_processes_with_a_matrix_over_the_limit():
    full = profiles.get("full")
    assert full.procs == 8 and full.hpl_procs == 4
    # 4 MPI processes held 41 MiB of their own in the guest (memory.peak):
    # the matrix is at least 1.5 times what the limit leaves it
    matrix = full.footprints["hpl"] * full.limit("hpl")
    assert matrix >= 1.5 * (full.limit("hpl") - 41)
