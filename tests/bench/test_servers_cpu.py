# SPDX-License-Identifier: GPL-2.0-only
"""Where the page servers run: the servers another guest must start for a
profile, how devices are pointed at them, and the comparison's
arithmetic (userspace/bench/servers_cpu.py)."""
import math

import pytest

import configs
import profiles
import servers_cpu


def test_remote_plan_has_the_servers_of_every_configuration():
    p = profiles.get("quick", workloads=("radix",), configs=("nswap", "n2l-none", "flash"))
    # Nswap: the whole swap (6 x the 8 MiB limit) on two servers; Nswap2L:
    # half the limit, at least 4 MiB a server.
    assert configs.remote_plan(p) == [(7070, 4), (7071, 4), (7072, 24), (7073, 24)]
    assert configs.remote_plan(profiles.get("quick", configs=("flash", "disk"))) == []


def test_devices_use_the_remote_servers_of_their_size():
    p = profiles.get("quick", workloads=("radix",), configs=("nswap", "n2l-none"))
    configs.use_remote("10.88.0.2", configs.remote_plan(p))
    try:
        t = configs.SwapTarget(p, "n2l-none")
        got = t._servers(configs.server_mb(t.cfg, p.netram_mb(t.cfg, t.workloads)))
        assert [s.name for s in got] == ["10.88.0.2:7070", "10.88.0.2:7071"]
        assert t.parts == []        # nothing of theirs to take down
        with pytest.raises(ValueError, match="no remote page servers of 100 MiB"):
            t._servers(100)
    finally:
        configs.use_remote(None, None)
    assert configs.REMOTE == {}


def test_paired_ratios_and_their_interval():
    ci = servers_cpu.log_ratio_ci([(2.0, 1.0), (2.2, 1.0), (1.8, 1.0)])
    logs = [math.log(x) for x in (2.0, 2.2, 1.8)]
    assert ci["ratio"] == pytest.approx(math.exp(sum(logs) / 3))
    assert ci["low"] < ci["ratio"] < ci["high"] and ci["n"] == 3
    assert servers_cpu.log_ratio_ci([(1.0, None)]) is None
    assert servers_cpu.log_ratio_ci([(3.0, 2.0)]) == {"ratio": 1.5, "n": 1}


def test_summary_pairs_runs_by_rep_and_bounds_the_servers_cost():
    def cell(cfg, pl, rep, s, srv=0.0):
        return {"config": cfg, "servers": pl, "rep": rep, "status": "ok", "seconds": s,
                "cpu_servers_s": srv, "cpu_softirq_s": 0.1}
    cells = [cell("nswap", "local", 0, 2.0, 0.6), cell("n2l-none", "local", 0, 2.5, 0.1),
             cell("nswap", "remote", 0, 1.6), cell("n2l-none", "remote", 0, 2.4),
             cell("nswap", "local", 1, 2.2, 0.6), cell("n2l-none", "local", 1, 2.6, 0.1),
             cell("nswap", "remote", 1, 1.7), cell("n2l-none", "remote", 1, 2.5)]
    s = servers_cpu.summary({"cells": cells, "configs": ["nswap", "n2l-none"],
                             "placements": ["local", "remote"]})
    assert s["ratios"]["nswap/n2l-none local"]["ratio"] == pytest.approx(
        math.sqrt(2.0 / 2.5 * 2.2 / 2.6))
    assert s["placement"]["nswap"]["ratio"] == pytest.approx(math.sqrt(1.6 / 2.0 * 1.7 / 2.2))
    assert s["bound"]["nswap"] == {"seconds": 2.1, "cpu_servers_s": 0.6,
                                   "cpu_softirq_s": 0.1, "at_least_s": 1.5}


def test_a_device_that_cannot_be_set_up_is_a_failed_cell(monkeypatch):
    torn = []

    class Broken:
        def __init__(self, profile, config):
            self.config = config

        def setup(self):
            raise ValueError("no remote page servers of 100 MiB")

        def teardown(self):
            torn.append(self.config)

    monkeypatch.setattr(configs, "SwapTarget", Broken)
    cell = servers_cpu.one_cell(profiles.get("quick"), "nswap", "radix", 0, 60, None)
    assert cell["status"] == "failed" and "no remote page servers" in cell["output"]
    assert torn == ["nswap"]
