# SPDX-License-Identifier: GPL-2.0-only
"""The nswap2l status line as the benchmark reads it: the engine's effort
counters (prefetch_target, prefetch_activations) when the module reports
them, None when it does not; what a run records of it."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "userspace", "pylib"))
import configs  # noqa: E402
import nswap2l  # noqa: E402


def status_line(effort=()):
    """An INFO line in nswap2l.rst's order: 2 servers, prefetch lrs."""
    words = ["0", "98304", "nswap2l", "8", "300/12288"]
    words += ["netram", "200/12288", "150", "400", "1600", "3200"]
    words += ["flash", "100/12288", "50", "120", "800", "960"]
    words += ["disk", "0/12288", "0", "0", "0", "0"]
    words += ["0", "7", "0", "0"]                       # nospc .. dropped
    words += ["netram-first", "0", "2"]
    words += ["10.77.1.2:7070", "up", "100", "6000", "6144"]
    words += ["10.77.1.2:7071", "up", "100", "6000", "6144"]
    words += ["0"] * 10                                 # lost .. auth failures
    words += ["lrs", "4", "interval_ms", "100", "percent", "10"]
    words += ["90", "30", "0.333", "2.500", "0", "0", "0",
              "0", "90", "90", "0", "0", "0"]           # prefetched .. moved
    words += ["45", "0.500"]                           # prefetch reads, ratio
    return " ".join(words + [str(x) for x in effort] + ["ok"])    # space: last


def test_effort_counters_parse_when_the_module_has_them():
    st = nswap2l.parse_status(status_line((900, 64, 300)))
    assert st["prefetch_target"] == 900 and st["prefetch_activations"] == 64
    assert st["prefetch_room_target"] == 300
    assert st["prefetched"] == 90 and st["prefetch_reads"] == 45
    st = nswap2l.parse_status(status_line((900, 64)))   # before the room target
    assert st["prefetch_target"] == 900 and st["prefetch_room_target"] is None


def test_a_module_without_them_reads_as_none_not_an_error():
    st = nswap2l.parse_status(status_line())
    assert st["prefetch_target"] is None and st["prefetch_activations"] is None
    assert st["prefetch_room_target"] is None
    assert st["read_prefetch_ratio_all"] == 0.5


def test_one_field_too_many_is_still_refused():
    with pytest.raises(ValueError, match="left over"):
        nswap2l.parse_status(status_line((900,)))
    with pytest.raises(ValueError, match="left over"):
        nswap2l.parse_status(status_line((900, 64, 1, 2)))


def test_a_run_records_effort_reads_and_network_ram():
    got = configs.device_stats(nswap2l.parse_status(status_line((900, 64, 300))))
    assert (got["prefetched"], got["prefetch_target"], got["prefetch_activations"],
            got["prefetch_room_target"]) == (90, 900, 64, 300)
    # (1600 + 800 + 0) sectors read / 8 a slot; 2 x 6144 pages = 48 MiB
    assert got["read_slots"] == 300 and got["netram_mb"] == 48.0
    assert (got["netram_reads"], got["flash_reads"], got["disk_reads"]) == (150, 50, 0)
    old = configs.device_stats(nswap2l.parse_status(status_line()))
    assert old["prefetch_target"] is None and old["prefetch_activations"] is None
