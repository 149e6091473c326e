# SPDX-License-Identifier: GPL-2.0-only
"""report.md and a plot of the prefetch experiment (prefetch.py): each
prefetch policy against no prefetching at every point and Flash speed,
pooled where the question is the same, what the engine did for it, and
`auto` against its targets. report.py calls it for a run of prefetch.py."""
import pilot
import profiles
import results
import stats
from report import (PILOT_RULE, VERDICT_RULE, WORKLOAD_NAMES, calibration_table,
                    environment_lines, fmt, netram_table, pyplot, reps_run, save,
                    table)

BASELINE = "none"
FIXED = pilot.FIXED
# auto's targets (issue 23): never slower than none by more than this
# (upper bound of auto / none), and within this of the best fixed policy.
AUTO_NOT_SLOWER = 1.01
AUTO_NEAR_BEST = 1.02


def policy_of(config):
    return profiles.config(config).prefetch


def share_of(config):
    return profiles.config(config).netram


def layout(run):
    """(shares, policies, points, speeds) the run has, in the order the
    profile gave them: points (workload, procs)."""
    names = list(run["configs"])
    shares = list(dict.fromkeys(share_of(c) for c in names))
    policies = list(dict.fromkeys(policy_of(c) for c in names))
    points = [tuple(p) for p in run.get("points") or []] or sorted(
        {(c["workload"], c["point"]["procs"]) for c in run["cells"]}, key=repr)
    speeds = [s for s in profiles.FLASH_SPEEDS
              if any(c["point"]["flash_speed"] == s for c in run["cells"])]
    return shares, policies, points, speeds


def point_name(point, speed=None):
    w, procs = point
    name = WORKLOAD_NAMES.get(w, w) + (f" x{procs}" if procs else "")
    return name + (f", Flash {speed}" if speed else "")


def at(point=None, speed=None, workload=None):
    """stats' where(): the runs at a point (workload, procs), at a Flash
    speed, of a workload; None for any means every one."""
    def keep(c):
        return (point is None or (c["workload"], c["point"]["procs"]) == tuple(point)) \
            and (speed is None or c["point"]["flash_speed"] == speed) \
            and (workload is None or c["workload"] == workload)
    return keep


def scopes(run):
    """(what, where) of every pooling that asks one question: everything;
    each Flash speed; each workload over its processes and speeds; and,
    for a workload at several process counts, each of its speeds."""
    _, _, points, speeds = layout(run)
    workloads = list(dict.fromkeys(w for w, _ in points))
    out = [("every point and Flash speed", at())]
    out += [(f"Flash {s}, every point", at(speed=s)) for s in speeds]
    for w in workloads:
        procs = [n for x, n in points if x == w]
        name = WORKLOAD_NAMES.get(w, w)
        over = f" x{', x'.join(map(str, procs))}" if len(procs) > 1 else ""
        out.append((f"{name}{over}, every Flash speed", at(workload=w)))
        if len(procs) > 1:
            out += [(f"{name}{over}, Flash {s}", at(speed=s, workload=w)) for s in speeds]
    return out


def compare(run, policy, share, where, baseline=BASELINE):
    return stats.compare(run["cells"], profiles.n2l_config(policy, share),
                         profiles.n2l_config(baseline, share), "seconds", where)


def cell_text(est):
    return "—" if est is None else f"{est} {est.verdict()}"


def answer_lines(run, share):
    """Each policy over none, pooled wherever the question is the same
    (scopes()); the points one by one are point_rows()'."""
    _, policies, _, _ = layout(run)
    lines = []
    for p in policies:
        if p == BASELINE:
            continue
        for what, where in scopes(run):
            lines.append(f"- {stats.line(p, BASELINE, compare(run, p, share, where))}: {what}")
    return lines


def point_rows(run, share):
    """A row per point and speed: none's runtime and each policy over it."""
    _, policies, points, speeds = layout(run)
    rows = []
    for point in points:
        for speed in speeds:
            here = [c for c in run["cells"] if at(point, speed)(c)]
            base = results.mean_min_max(here, profiles.n2l_config(BASELINE, share), point[0])
            row = [point_name(point), speed,
                   "—" if base is None else f"{base[0]:.2f}"]
            row += [cell_text(compare(run, p, share, at(point, speed)))
                    for p in policies if p != BASELINE]
            rows.append(row)
    return rows


def median_of(cells, key_fn):
    vals = [v for v in (key_fn(c) for c in cells) if v is not None]
    return results.median_or_none(vals)


def moved_share(c):
    target = c.get("prefetch_target")
    return c.get("prefetched", 0) / target if target else None


def cpu_busy(c):
    """The share of the run's guest time the CPU was busy."""
    busy, secs = c.get("cpu_busy_s"), c.get("seconds")
    return busy / secs if busy is not None and secs else None


def effort_rows(run, share):
    """What the engine did, per policy, point and speed (medians): slots
    moved over those asked for, activations, slots moved, how many of
    those asked were for room on Network RAM, the share of the slots read
    that prefetched slots served, read parallelism, CPU busy, the CPUs'
    idle share and both media's read latencies when the policy asked."""
    _, policies, points, speeds = layout(run)
    rows = []
    for p in policies:
        cfg = profiles.n2l_config(p, share)
        for point in points:
            for speed in speeds:
                mine = [c for c in run["cells"] if c["config"] == cfg and
                        c["status"] == "ok" and at(point, speed)(c)]
                if not mine:
                    continue
                moved = median_of(mine, moved_share)
                served = median_of(mine, pilot.served)
                busy = median_of(mine, cpu_busy)
                idle = median_of(mine, lambda c: c.get("idle_pm_asking"))
                net_us = median_of(mine, lambda c: c.get("net_us_asking"))
                flash_us = median_of(mine, lambda c: c.get("flash_us_asking"))
                rows.append([p, point_name(point), speed,
                             fmt(None if moved is None else 100 * moved, 0, "%"),
                             fmt(median_of(mine, lambda c: c.get("prefetch_activations")), 0),
                             fmt(median_of(mine, lambda c: c.get("prefetched")), 0),
                             fmt(median_of(mine, lambda c: c.get("prefetch_room_target")), 0),
                             fmt(None if served is None else 100 * served, 1, "%"),
                             fmt(median_of(mine, lambda c: c.get("read_parallelism")), 2),
                             fmt(None if busy is None else 100 * busy, 0, "%"),
                             fmt(None if idle is None else idle / 10, 0, "%"),
                             f"{fmt(net_us, 0)} / {fmt(flash_us, 0)}",
                             fmt(median_of(mine, lambda c: c.get("seconds")), 2)])
    return rows


def auto_rows(run, share):
    """auto against its targets at each point and speed: auto / none's
    upper bound at most AUTO_NOT_SLOWER; auto over the fixed policy with
    the lowest estimate there (picked after the fact, so the target is
    easier than it looks) at most AUTO_NEAR_BEST; faster than none
    wherever a fixed policy is."""
    _, policies, points, speeds = layout(run)
    fixed = [p for p in policies if p in FIXED]
    rows = []
    for point in points:
        for speed in speeds:
            where = at(point, speed)
            vs_none = compare(run, "auto", share, where)
            ests = {p: compare(run, p, share, where) for p in fixed}
            ests = {p: e for p, e in ests.items() if e is not None}
            best = min(ests, key=lambda p: ests[p].ratio) if ests else None
            vs_best = compare(run, "auto", share, where, baseline=best) if best else None
            any_faster = [p for p, e in ests.items() if e.verdict() == "faster"]
            rows.append([
                point_name(point), speed, cell_text(vs_none),
                yes_no(vs_none and vs_none.hi is not None and vs_none.hi <= AUTO_NOT_SLOWER),
                f"{best}: {cell_text(vs_best)}" if best else "—",
                yes_no(vs_best is not None and vs_best.hi is not None and
                       vs_best.hi <= AUTO_NEAR_BEST) if best else "no fixed policy run",
                faster_where_one_is(vs_none, any_faster)])
    return rows


def faster_where_one_is(vs_none, any_faster):
    if not any_faster:
        return "no fixed policy faster"
    ok = vs_none is not None and vs_none.verdict() == "faster"
    return f"{yes_no(ok)} ({', '.join(any_faster)} faster)"


def yes_no(ok):
    return "yes" if ok else "no"


def report_md(run, plots):
    shares, policies, points, speeds = layout(run)
    prof = run["environment"].get("profile", {})
    lines = ["# Nswap2L prefetch experiment: whether and when prefetching pays", "",
             f"Run of {run['date']}. Nswap2L (placement netram-first, Flash and disk "
             "present) with each prefetch policy against the same device without "
             f"prefetching (`{BASELINE}`), at every point (workload x processes) and "
             "Flash speed (`paper`: the paper's ratio to Network RAM, reads "
             f"{profiles.FLASH_RATIO['read']}x and writes {profiles.FLASH_RATIO['write']}x "
             "its time; `fast`: 20% faster than Network RAM, latency and bandwidth). "
             f"Prefetch arguments {' '.join(prof.get('prefetch_args') or ())}. "
             f"{reps_run(run)} reps, each a boot of its own, "
             "instruction-counted guest seconds. A ratio is a policy's time over "
             f"{BASELINE}'s: the geometric mean of runs paired by point, rep and seed "
             "within one boot, with its 95% confidence interval (Student's t on the "
             "mean log ratio), pooled over the points where the question is the same. "
             + VERDICT_RULE, ""]
    for share in shares:
        label = profiles.config(profiles.n2l_config(BASELINE, share)).netram_text()
        lines += [f"## {label}: does prefetching pay?", "",
                  "Pooled over the points that ask one question:", ""]
        lines += answer_lines(run, share)
        lines += ["", f"### At each point ({label})", ""]
        lines += table(["point", "Flash", f"{BASELINE} s (mean)"] +
                       [f"{p} / {BASELINE}" for p in policies if p != BASELINE],
                       point_rows(run, share))
        if "auto" in policies:
            lines += ["", f"### auto against its targets ({label})", "",
                      f"Not slower than {BASELINE}: the upper bound of auto / {BASELINE} "
                      f"at most {AUTO_NOT_SLOWER}. Near the best fixed policy: auto over "
                      "the fixed policy with the lowest estimate at the point, upper "
                      f"bound at most {AUTO_NEAR_BEST}. Faster than {BASELINE} wherever "
                      "a fixed policy is.", ""]
            lines += table(["point", "Flash", f"auto / {BASELINE}", "not slower",
                            "auto / best fixed", "near the best", "faster where one is"],
                           auto_rows(run, share))
        lines += ["", f"### What the engine did ({label})", "",
                  "Medians: slots moved over those the policy asked for (prefetched / "
                  "prefetch_target), activations, slots moved, slots asked for to keep "
                  "room on Network RAM (prefetch_room_target: auto's room rule; "
                  "fixed policies follow the knobs), the share of the slots "
                  "read that prefetched slots served, read parallelism at issue, "
                  "the share of the run the CPU was busy (servers included), "
                  "the CPUs' idle share of the intervals in which the policy "
                  "asked for slots (the tracepoint nswap2l_prefetch_plan; "
                  "median of each run's median), the mean read latency of "
                  "Network RAM and of Flash in those intervals (us, the same "
                  "way; — where the run did not record it), seconds.", ""]
        lines += table(["policy", "point", "Flash", "moved / asked", "activations",
                        "moved", "asked for room", "reads served", "parallelism",
                        "CPU busy", "idle when asked", "reads us when asked (Network RAM / Flash)",
                        "seconds"],
                       effort_rows(run, share))
    lines += ["", "## Network RAM", ""] + netram_table(run)
    lines += ["", "## Pilot gate", "", PILOT_RULE, ""] + (
        pilot.lines(run["cells"]) or ["- no run stopped or flagged"])
    if run.get("pilot_gate"):
        lines += ["", f"**The run stopped at {run['pilot_gate']['stopped_at']}: "
                  f"{'; '.join(run['pilot_gate']['why'])}.**"]
    bad = results.bad_runs(run["cells"])
    lines += ["", "## Failed or wrong runs", ""] + (
        [f"- {pilot.where(c)}: {c['status'].upper()} ({c.get('reason') or 'no reason given'})"
         for c in bad] or ["- none"])
    lines += ["", "## Environment", ""] + environment_lines(run, cells_of_a_matrix=False)
    lines += ["", "## Media calibration", ""] + calibration_lines(run)
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    lines += ["", "## Every run", ""] + table(
        ["config", "workload", "procs", "Flash", "rep", "order", "status", "seconds",
         "prefetched", "asked", "for room", "activations"],
        [[c["config"], c["workload"], c["point"]["procs"] or "—", c["point"]["flash_speed"],
          c["rep"], c.get("seq", "—"), c["status"], fmt(c.get("seconds"), 3),
          fmt(c.get("prefetched"), 0), fmt(c.get("prefetch_target"), 0),
          fmt(c.get("prefetch_room_target"), 0),
          fmt(c.get("prefetch_activations"), 0)] for c in run["cells"]])
    return "\n".join(lines) + "\n"


def calibration_lines(run):
    """Each Flash speed's calibration (a boot of its own, or the unit's),
    and each unit's check of it in its own boot."""
    lines = []
    for speed, calib in (run.get("calibrations") or {}).items():
        lines += ["", f"### Flash {speed}" + (f" ({calib['source']})" if calib.get("source")
                                              else ""), ""]
        lines += calibration_table({"environment": {"calibration": calib}})
    guests = run["environment"].get("guests") or [
        {"units": run.get("units"), "calibration_check": run.get("calibration_check")}]
    rows = [[i + 1, what, fmt(c["calibrated"], 1), fmt(c["measured"], 1),
             f"OFF: {c['off']}" if c["off"] else "ok"]
            for i, g in enumerate(guests)
            for what, c in (g.get("calibration_check") or {}).items()]
    if rows:
        lines += ["", "### Each unit's check, in its own boot", "",
                  "A 4 KiB random read at QD1 (us) against the calibration's.", ""]
        lines += table(["guest", "medium", "calibrated us", "measured us", "verdict"], rows)
    return lines


def plot(run, out_dir):
    """prefetch.png: each policy over none with its interval, at every
    point and speed; [] without matplotlib or a run to plot."""
    plt = pyplot()
    shares, policies, points, speeds = layout(run)
    others = [p for p in policies if p != BASELINE]
    if not plt or not others or not points:
        return []
    fig, axes = plt.subplots(1, len(shares), figsize=(7 * len(shares), 4.2), squeeze=False)
    for ax, share in zip(axes[0], shares):
        ticks = [(point, speed) for point in points for speed in speeds]
        width = 0.8 / len(others)
        for i, p in enumerate(others):
            xs, ys, lo, hi = [], [], [], []
            for x, (point, speed) in enumerate(ticks):
                est = compare(run, p, share, at(point, speed))
                if est is None or est.lo is None:
                    continue
                xs.append(x + (i - (len(others) - 1) / 2) * width)
                ys.append(est.ratio)
                lo.append(est.ratio - est.lo)
                hi.append(est.hi - est.ratio)
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3, label=f"{p} / {BASELINE}")
        ax.axhline(1, color="grey", lw=0.8)
        ax.set_xticks(range(len(ticks)))
        ax.set_xticklabels([point_name(pt, sp) for pt, sp in ticks], rotation=30,
                           ha="right", fontsize=7)
        ax.set_ylabel(f"time over {BASELINE} (95% CI)")
        ax.set_title(profiles.config(profiles.n2l_config(BASELINE, share)).netram_text(),
                     fontsize=9)
        ax.legend(fontsize=7)
    return [save(plt, fig, out_dir, "prefetch.png")]
