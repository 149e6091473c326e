# SPDX-License-Identifier: GPL-2.0-only
"""plans.summary: a run's prefetch plans from the tracepoint's text."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(REPO, "userspace", "bench"), os.path.join(REPO, "userspace", "pylib")]
import plans  # noqa: E402


def plan(dev, idle, target, room=0, net_us=250, flash_us=0):
    return (f"  kworker/u2:1-55  [000] .....  12.345678: nswap2l_prefetch_plan: dev={dev} "
            f"swapouts=300 net_free=20 flash_free=4096 net_us={net_us} flash_us={flash_us} "
            f"net_qd=3 flash_qd=0 idle_pm={idle} target={target} room={room}\n")


def test_the_plans_of_one_device_and_the_idle_share_when_they_asked():
    text = ("# tracer: nop\n" + plan("254:0", 20, 0) + plan("254:0", 300, 64, flash_us=900)
            + plan("254:1", 900, 500) + plan("254:0", 500, 10, 10, net_us=200)
            + plan("254:0", 0, 0, flash_us=100)
            + "  dd-1 [000] ..... 12.4: nswap2l_write: dev=254:0 slot=0 nr=1 medium=netram\n")
    # the latencies of the plans that asked; an interval without Flash
    # reads (flash_us=0) says nothing of Flash
    assert plans.summary(text, "254:0") == {"plans": 4, "plans_asking": 2,
                                             "idle_pm_asking": 400, "idle_pm_all": 160,
                                             "net_us_asking": 225, "flash_us_asking": 900}
    assert plans.summary(text, "254:1")["idle_pm_asking"] == 900
    assert plans.summary(text, "254:1")["flash_us_asking"] is None


def test_no_plans_say_none():
    assert plans.summary("# tracer: nop\n", "254:0") == {
        "plans": 0, "plans_asking": 0, "idle_pm_asking": None, "idle_pm_all": None,
        "net_us_asking": None, "flash_us_asking": None}
