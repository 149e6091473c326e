# SPDX-License-Identifier: GPL-2.0-only
"""Staging a binary with everything it loads, and running it from there."""
import os
import subprocess

import pytest

import stage

WL1 = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "build", "workloads", "wl1")


@pytest.fixture
def wl1():
    if not os.path.exists(WL1):
        subprocess.run(["make", "-s", "-C", os.path.dirname(os.path.dirname(
            os.path.dirname(WL1))), "tools"], check=True)
    return WL1


def test_staged_binary_runs_from_the_stage_alone(tmp_path, wl1):
    st = stage.Stage(str(tmp_path))
    st.add(wl1)
    libs = sorted(os.listdir(tmp_path / "lib"))
    assert any(n.startswith("libc.so") for n in libs), libs
    assert any(n.startswith("ld-linux") for n in libs), libs
    argv = st.argv("wl1", ["--help"])
    assert argv[0].startswith(str(tmp_path)) and argv[3] == str(tmp_path / "wl1")
    # the process maps its program, libc and loader from the stage only
    p = subprocess.run(argv[:3] + ["--list", argv[3]], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    mapped = [ln.split("=>")[-1].split("(")[0].strip() for ln in p.stdout.splitlines()]
    assert all(m.startswith(str(tmp_path)) for m in mapped if m.startswith("/")), p.stdout
    p = subprocess.run(argv, capture_output=True, text=True)
    assert "usage: wl1" in p.stdout + p.stderr


def test_only_elf_binaries_are_staged(tmp_path):
    script = tmp_path / "hpl"
    script.write_text("#!/usr/bin/env python3\n")
    assert not stage.is_elf(str(script)) and stage.is_elf("/bin/true")
