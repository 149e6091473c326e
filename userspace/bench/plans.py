# SPDX-License-Identifier: GPL-2.0-only
"""Each prefetch plan of a run, from the tracepoint nswap2l_prefetch_plan
(dm-nswap2l/nswap2l-trace.h): how often the policy asked for slots, and
how idle the CPUs were when it did. The counters say how much it asked;
this says why, which is what tells a policy's rule from its luck."""
import os
import re
import statistics

import n2llab

TRACEFS = n2llab.TRACEFS
EVENT = os.path.join(TRACEFS, "events", "nswap2l", "nswap2l_prefetch_plan", "enable")
_PLAN = re.compile(r"nswap2l_prefetch_plan: dev=(?P<dev>\d+:\d+) swapouts=(?P<swapouts>\d+) "
                   r"net_free=(?P<net_free>\d+) flash_free=(?P<flash_free>\d+) "
                   r"net_us=(?P<net_us>\d+) flash_us=(?P<flash_us>\d+) "
                   r"net_qd=(?P<net_qd>\d+) flash_qd=(?P<flash_qd>\d+) "
                   r"idle_pm=(?P<idle_pm>\d+) target=(?P<target>\d+) room=(?P<room>\d+)")


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def start():
    """Record every plan from now on, the trace emptied; False when the
    module has no such tracepoint (then nothing is recorded)."""
    n2llab.tracefs()
    if not os.path.exists(EVENT):
        return False
    _write(os.path.join(TRACEFS, "trace"), "")
    _write(EVENT, "1")
    return True


def stop_all():
    """Stop recording; every plan recorded (parse())."""
    _write(EVENT, "0")
    with open(os.path.join(TRACEFS, "trace")) as f:
        return parse(f.read())


def stop(devno):
    """Stop recording; what the plans of device devno ("maj:min") said."""
    return _summary([p for p in stop_all() if p["dev"] == devno])


def parse(text):
    """Every plan in the tracepoint's text, in order: a dict of its
    fields, dev as "maj:min" and the others as ints."""
    return [{k: v if k == "dev" else int(v) for k, v in m.groupdict().items()}
            for m in _PLAN.finditer(text)]


def summary(text, devno):
    """plans: activations planned; plans_asking: those that asked for
    slots; idle_pm_asking and idle_pm_all: the median idle share of the
    CPUs (per mille of the interval) at those, and at all;
    net_us_asking and flash_us_asking: the median over the plans that
    asked of each medium's mean read latency in their interval (those
    with reads of it). None where there is nothing to take a median of."""
    return _summary([p for p in parse(text) if p["dev"] == devno])


def _median(values):
    return statistics.median(values) if values else None


def _summary(plans):
    asking = [p for p in plans if p["target"]]
    return {"plans": len(plans), "plans_asking": len(asking),
            "idle_pm_asking": _median([p["idle_pm"] for p in asking]),
            "idle_pm_all": _median([p["idle_pm"] for p in plans]),
            "net_us_asking": _median([p["net_us"] for p in asking if p["net_us"]]),
            "flash_us_asking": _median([p["flash_us"] for p in asking if p["flash_us"]])}
