# SPDX-License-Identifier: GPL-2.0-only
"""A saved calibration (calibrate.save/load): what a later run of the
runner (--calibration) takes instead of calibrating, and what it refuses."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "userspace", "pylib"))
import calibrate  # noqa: E402
import profiles  # noqa: E402


def calibration(speed, passed=True):
    return {"flash_speed": speed, "flash_keys": {"read_lat_us": 114},
            "gate": {"passed": passed}, "media": {}}


def test_a_saved_calibration_loads_for_its_profile_and_speed_only(tmp_path, monkeypatch):
    smoke = profiles.get("smoke")
    calibrate.save(str(tmp_path), smoke, calibration("paper"))
    path = str(tmp_path / "calibration.json")
    got = calibrate.load(path, smoke)
    assert got["flash_keys"] == {"read_lat_us": 114} and got["source"] == path
    # a subset of the profile's workloads or configurations is the same profile
    assert calibrate.load(path, profiles.get("smoke", workloads=("wl1",)))["source"] == path
    with pytest.raises(SystemExit, match="calibrated profile 'smoke', not 'quick'"):
        calibrate.load(path, profiles.get("quick"))
    with pytest.raises(SystemExit, match="calibrated Flash speed 'paper', not fast"):
        calibrate.load(path, profiles.get("smoke", flash_speed="fast"))


def test_a_calibration_that_failed_its_gate_is_refused_only_where_timing_is_exact(
        tmp_path, monkeypatch):
    smoke = profiles.get("smoke")
    calibrate.save(str(tmp_path), smoke, calibration("paper", passed=False))
    path = str(tmp_path / "calibration.json")
    monkeypatch.delenv("N2L_ICOUNT", raising=False)
    assert calibrate.load(path, smoke)["gate"]["passed"] is False
    monkeypatch.setenv("N2L_ICOUNT", "1")
    with pytest.raises(SystemExit, match="failed its gate"):
        calibrate.load(path, smoke)
