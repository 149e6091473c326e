"""What the migration engine moves while a workload swaps, measured where
it can be exactly: this file runs in a guest of its own, instruction-
counted (tests/vm/run), so that the engine's progress against the
workload's is a property of the code and not of how busy the host is.

The paper's amount (10% of the slots swapped out since the last run; every
100 ms here, so that a 6 s workload sees dozens of runs), with Network RAM
holding the slots and Flash with room: read when the workload ends, the
engine has moved at least 90% of what its policy asked, 10% of every
swap-out, while the workload kept reads in flight all along. The engine
of before moved one run at a time and slept up to 20 ms after each while
any read was in flight: 6 runs in a 20 s workload, 63% of what lrs asked
(random: its 1-slot runs did not end in 25 minutes of the host's time).
"""
import os
import time

import pytest

import n2l
from n2l import sh
from test_io import swap_workload
from test_prefetch import consistent, device

pytestmark = pytest.mark.skipif(os.environ.get("N2L_ICOUNT") != "1",
                                reason="needs an instruction-counted guest")


def pswpout():
    return int(dict(line.split() for line in open("/proc/vmstat"))["pswpout"])


def swap_while_moving(lab, name, policy, interval_ms):
    """The workload on a device whose engine moves 10% of the swap-outs
    every interval_ms; checks that it moved at least 90% of what was
    asked (10% of every swap-out, as its runs' targets say) while the
    slots were on Network RAM and Flash had room. Returns the device,
    its status, the intervals the workload lasted and the figures."""
    dev = device(lab, name, 160, 128, 128, policy,
                 ["interval_ms", str(interval_ms), "percent", "10"])
    before, t0 = pswpout(), time.monotonic()
    p, st = swap_workload(dev, limit_mb=32, vm_mb=96, seconds=6)
    intervals = (time.monotonic() - t0) * 1000 / interval_ms
    asked = (pswpout() - before) * 0.1
    assert p.returncode == 0, p.stdout + p.stderr
    said = (f"moved {st['prefetched']} of {asked:.0f} asked (its runs' targets: "
            f"{st['prefetch_target']}) in {st['prefetch_activations']} runs, "
            f"{intervals:.0f} intervals; netram held {st['netram']['held']} reads "
            f"{st['netram']['reads']}, flash held {st['flash']['held']}, ENOSPC {st['nospc']}")
    print(said)
    assert st["netram"]["held"] > asked and st["nospc"] == 0, said
    assert st["prefetched"] >= 0.9 * asked, said
    assert st["prefetched"] >= 0.9 * st["prefetch_target"], said
    return dev, st, intervals, said


@pytest.mark.parametrize("policy", ["random"])
def test_engine_moves_what_its_policy_asks_while_swapping(lab, policy):
    dev, st, _, said = swap_while_moving(lab, "n2l-pftarget", policy, 100)
    assert st["prefetch_activations"] >= 20, said
    consistent(dev)
    sh(f"swapoff {dev.path}")


def test_engine_keeps_its_interval_when_moving_takes_longer(lab):
    """The workload above with an interval of 50 ms: 10% of an
    interval's swap-outs take longer to move than the interval lasts
    (reads in flight hold the movers back). An activation hands out
    moves only within its interval and owes the rest to the next, which
    starts on time: the activations keep the interval's cadence, and the
    engine still moves what was asked. The engine of before ran each
    target to its end, and began the next an interval after that: here
    41 activations in 135 intervals (59 in 137 now; not measured, but
    likely the rest: intervals before the workload swaps, and a cut
    activation waiting for its moves in flight to end; the bound lies
    between the two, as host I/O lands at guest times that vary a
    little); WL4 at bench-full's scale saw 7 in 19 s
    at 200 ms (results/full-20261129-0936), too few for the pilot gate."""
    dev, st, intervals, said = swap_while_moving(lab, "n2l-pfcadence", "random", 50)
    assert st["prefetch_activations"] >= 0.36 * intervals, said
    consistent(dev)
    sh(f"swapoff {dev.path}")
