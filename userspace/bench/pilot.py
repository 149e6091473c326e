# SPDX-License-Identifier: GPL-2.0-only
"""The pilot gate: whether a run's prefetching did what a comparison of
prefetch policies needs, checked as each run ends, so that the first runs
of a benchmark are its pilot.

A run of a fixed prefetch policy (rr, random, lrs, mrs) stops the
benchmark, where its profile applies the gate (Profile.pilot_gate), if
the engine moved under MOVED_FLOOR of the slots the policy asked for
(prefetched / prefetch_target: a comparison of policies would compare an
engine that does not do what they say), if the policy was activated
fewer than ACTIVATIONS_FLOOR times (too few decisions to tell policies
apart), or if the module does not say (no prefetch_target or
prefetch_activations in its status). Any prefetching run whose
prefetched slots served under SERVED_FLOOR of the slots read is flagged,
not stopped: prefetching that is not read can be the answer. Where the
profile does not apply the gate (runs below the paper's scale by
design), what would have stopped it is flagged too. Each says which run
and why."""
import profiles

FIXED = ("rr", "random", "lrs", "mrs")
MOVED_FLOOR = 0.8
ACTIVATIONS_FLOOR = profiles.SCALE_FLOOR_INTERVALS     # 50
SERVED_FLOOR = 0.05


class Stop(Exception):
    """The gate stopped the benchmark at a run."""


def served(cell):
    """The share of the slots read that prefetched slots served, or None
    where the run does not say."""
    reads, slots = cell.get("prefetch_reads"), cell.get("read_slots")
    if reads is None or not slots:
        return None
    return reads / slots


def stops(cell):
    """Why a run of a fixed policy stops the gate: [] if it does not."""
    target, act = cell.get("prefetch_target"), cell.get("prefetch_activations")
    if target is None or act is None:
        return ["the module reports no prefetch_target / prefetch_activations: "
                "the gate cannot tell whether the engine moved what it was told"]
    why = []
    moved = cell.get("prefetched") or 0
    if target and moved < MOVED_FLOOR * target:
        why.append(f"moved {moved} of the {target} slots its policy asked for "
                   f"({moved / target:.1%}), under {MOVED_FLOOR:.0%}")
    if act < ACTIVATIONS_FLOOR:
        why.append(f"{act} prefetch activations, fewer than {ACTIVATIONS_FLOOR}")
    return why


def flags(cell):
    """Why a prefetching run is flagged: [] if it is not."""
    share = served(cell)
    if share is not None and share < SERVED_FLOOR:
        return [f"prefetched slots served {share:.1%} of the slots read "
                f"({cell.get('prefetch_reads')} of {cell.get('read_slots')}), "
                f"under {SERVED_FLOOR:.0%}"]
    return []


def check(cell, applied):
    """The gate's verdict on a run, recorded in cell["pilot"] for a run
    that prefetched: {"stop": [...], "flag": [...]}. Returns the reasons
    that stop the benchmark ([] unless applied)."""
    if cell.get("status") != "ok":
        return []
    policy = profiles.config(cell["config"]).prefetch
    if policy in (None, "none"):
        return []
    stop = stops(cell) if policy in FIXED else []
    cell["pilot"] = {"stop": stop if applied else [],
                     "flag": flags(cell) + ([] if applied else stop)}
    return cell["pilot"]["stop"]


def where(cell):
    """A run as a reader finds it: configuration, workload, rep, point."""
    point = ", ".join(f"{k} {v}" for k, v in (cell.get("point") or {}).items()
                      if v is not None)
    return f"{cell['config']} {cell['workload']} rep {cell['rep']}" + \
        (f" ({point})" if point else "")


def lines(cells):
    """One line per run the gate stopped at or flagged."""
    out = []
    for c in cells:
        pilot = c.get("pilot") or {}
        for word, reasons in (("STOPPED", pilot.get("stop")), ("flagged", pilot.get("flag"))):
            if reasons:
                out.append(f"- {where(c)}: {word}: {'; '.join(reasons)}")
    return out
