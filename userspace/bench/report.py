#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""report.md and PNG plots from a run's results.json, in the shape of the
original Nswap2L paper's tables: runtime and speedup over disk per
workload and configuration, the degree of read parallelism with and
without prefetching, and the read/prefetch ratio of each policy.

    report.py RUN_DIR      (writes RUN_DIR/report.md and RUN_DIR/*.png)

A run of the sweep (sweep.py) gets sweep_report's report instead, one of
the prefetch experiment (prefetch.py) prefetch_report's. Every comparison
is a paired estimate with its 95% confidence interval (stats.py).
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pilot  # noqa: E402
import profiles  # noqa: E402
import results  # noqa: E402
import stats  # noqa: E402

# The original paper's figures (12 nodes, 1 GbE, Intel X25-M): runtimes in
# seconds of its "Nswap2L (to NW RAM only)", which is our `nswap`, of
# Flash and of disk; its speedups are disk's time over the first.
PAPER_RUNTIMES = {"wl1": (443.0, 574.2, 1547.4), "wl2": (591.6, 883.1, 17754.8),
                  "wl4": (578.9, 978.4, 17881.2), "radix": (110.7, 147.4, 255.5),
                  "is": (94.4, 107.6, 224.4), "hpl": (536.1, 598.7, 815.3)}
PAPER_PARALLELISM = {"radix": (5.4, 13.7), "hpl": (5.2, 13.1)}  # without, with
# How the reports call a comparison (stats.py).
VERDICT_RULE = ("Called faster or slower only where the interval excludes 1, "
                "no difference only where the whole interval lies within "
                f"±{stats.EQUIVALENCE:.0%}, inconclusive otherwise (too few pairs "
                "under two).")
PILOT_RULE = (f"A run of a fixed prefetch policy ({', '.join(pilot.FIXED)}) whose engine "
              f"moved under {pilot.MOVED_FLOOR:.0%} of the slots its policy asked for, or "
              f"that was activated fewer than {pilot.ACTIVATIONS_FLOOR} times, stops a "
              "run whose profile applies the gate and is flagged otherwise; a "
              "prefetching run whose prefetched slots served under "
              f"{pilot.SERVED_FLOOR:.0%} of the slots read is flagged (pilot.py).")
PREFETCHING = ("n2l-rr", "n2l-random", "n2l-lrs", "n2l-mrs")
BEST_N2L = ("n2l-none",) + PREFETCHING
WORKLOAD_NAMES = {"wl1": "WL1", "wl2": "WL2", "wl4": "WL4", "radix": "Radix",
                  "is": "IS", "hpl": "HPL"}


# Workloads whose own time leaves out part of what they swap: HPL's
# seconds are pdgesv's alone, while a run also makes its matrix (swapping
# it out) and makes it again for the check, so the whole run gets a row
# of its own, timed by wall_seconds.
WHOLE_RUN = {"hpl": "HPL, whole run"}


def rows_of(run):
    """(label, workload, key) of every row of the runtime tables."""
    rows = []
    for w in run["workloads"]:
        rows.append((WORKLOAD_NAMES.get(w, w), w, "seconds"))
        if w in WHOLE_RUN:
            rows.append((WHOLE_RUN[w], w, "wall_seconds"))
    return rows


def fmt(v, digits=2, suffix=""):
    return "—" if v is None else f"{v:.{digits}f}{suffix}"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def fmt_mean_range(got):
    return "—" if got is None else f"{got[0]:.2f} ({got[1]:.2f}–{got[2]:.2f})"


def runtime_table(run):
    cells, configs = run["cells"], list(run["configs"])
    rows = [[label] + [fmt_mean_range(results.mean_min_max(cells, c, w, key))
                       for c in configs]
            for label, w, key in rows_of(run)]
    return table(["workload"] + configs, rows)


# What each comparison sets against what: (contender, baseline).
COMPARISONS = (("flash", "disk"), ("nswap", "flash"), ("n2l-none", "nswap"),
               ("n2l-none", "flash")) + tuple((p, "n2l-none") for p in PREFETCHING) + \
    (("nswap", "nbd"), ("nswap", "nvme"))


def of_workload(workload):
    """stats' where(): the runs of one workload."""
    return lambda cell: cell["workload"] == workload


def differences_table(run):
    """Each comparison per workload: the paired runs' ratios, their
    estimate with its 95% interval and the verdict (stats.py)."""
    cells, rows = run["cells"], []
    for label, w, key in rows_of(run):
        for a, b in COMPARISONS:
            if a not in run["configs"] or b not in run["configs"]:
                continue
            est = stats.compare(cells, a, b, key, where=of_workload(w))
            if est is None:
                continue
            ratios = [x / y for x, y in stats.pairs(cells, a, b, key, where=of_workload(w))]
            rows.append([label, f"{a} / {b}", " ".join(f"{r:.3f}" for r in ratios),
                         str(est), est.verdict()])
    return table(["workload", "time ratio", "per pair", "estimate [95% CI]", "verdict"],
                 rows)


CPU_KEYS = (("cpu_workload_s", "its cgroup"), ("cpu_servers_s", "servers"),
            ("cpu_kworkers_s", "kworkers"), ("cpu_nswap2l_threads_s", "nswap2l threads"),
            ("cpu_softirq_s", "softirq"), ("cpu_busy_s", "all busy"))
MEMORY_KEYS = (("swap_out_mb", "MiB out"), ("swap_in_mb", "MiB in"),
               ("major_faults", "major faults"), ("memory_peak_mb", "memory.peak MiB"),
               ("memory_high_events", "memory.high events"))


def per_cell_table(run, keys, digits=1):
    """One row per workload and configuration: the median of each key."""
    cells = [results.with_event_counts(c) for c in run["cells"]]
    rows = []
    for w in run["workloads"]:
        for c in run["configs"]:
            vals = [results.cell_median(cells, c, w, k) for k, _ in keys]
            if any(v is not None for v in vals):
                rows.append([WORKLOAD_NAMES.get(w, w), c] + [fmt(v, digits) for v in vals])
    return table(["workload", "config"] + [name for _, name in keys], rows)


SCALE_NAMES = {"swap_in_mb": "MiB in", "seconds": "seconds", "intervals": "intervals"}


def scale_lines(run):
    """How far the runs off the disk reach the paper's scale
    (profiles.SCALE_FLOOR): the share that does, and per workload the
    median of what counts and what falls short."""
    prof = run["environment"].get("profile", {})
    interval_s = profiles.prefetch_interval_s(prof.get("prefetch_args") or ("interval_ms", "200"))
    good = [c for c in run["cells"] if c["status"] == "ok" and c["config"] != "disk"]
    lines = [f"Floor per run: {profiles.SCALE_FLOOR['swap_in_mb']} MiB swapped in, "
             f"{profiles.SCALE_FLOOR['seconds']} guest seconds, "
             f"{profiles.SCALE_FLOOR_INTERVALS} prefetch intervals of {interval_s:g} s. "
             f"{sum(not profiles.short_of_scale(c, interval_s) for c in good)} of "
             f"{len(good)} verified runs off the disk reach it.", ""]
    rows = []
    for w in run["workloads"]:
        mine = [c for c in good if c["workload"] == w]
        if not mine:
            continue
        median = {k: results.median_or_none([c.get(k) or 0 for c in mine])
                  for k in ("swap_in_mb", "seconds")}
        short = {s for c in mine for s in profiles.short_of_scale(c, interval_s)}
        rows.append([WORKLOAD_NAMES.get(w, w), len(mine), fmt(median["swap_in_mb"], 0),
                     fmt(median["seconds"], 1), fmt(median["seconds"] / interval_s, 0),
                     ", ".join(SCALE_NAMES[s] for s in SCALE_NAMES if s in short) or "none"])
    return lines + table(["workload", "runs", "MiB in", "seconds", "intervals",
                          "short of the floor"], rows)


def every_run_table(run):
    rows = [[c["config"], WORKLOAD_NAMES.get(c["workload"], c["workload"]), c["rep"],
             c.get("seq", "—"), c["status"], fmt(c.get("seconds"), 3),
             fmt(c.get("wall_seconds"), 3), c.get("checksum") or "—"]
            for c in run["cells"]]
    return table(["config", "workload", "rep", "order", "status", "seconds",
                  "wall seconds", "checksum"], rows)


def checksum_lines(run):
    bad = results.checksum_disagreements(run["cells"])
    if not bad:
        return ["- every good run of a workload computed the same checksum, "
                "on every configuration"]
    return [f"- {WORKLOAD_NAMES.get(w, w)}: " +
            "; ".join(f"{s} from {', '.join(where)}" for s, where in sums.items())
            for w, sums in bad]


def speedup_table(run):
    """Every configuration's own speedup: no best-of picked after the fact."""
    cells, configs = run["cells"], [c for c in run["configs"] if c != "disk"]
    rows = [[label] + [fmt(results.speedup(cells, c, w, key=key), 1, "x") for c in configs]
            for label, w, key in rows_of(run)]
    return table(["workload"] + configs, rows)


def paper_table(run):
    """Speedups over disk against the paper's: its "Nswap2L (to NW RAM
    only)" column is our `netram-only` where the run has it (Nswap2L,
    Flash and disk present, Network RAM holding all the swap), else the
    Network-RAM-only `nswap`."""
    cells, rows = run["cells"], []
    ours_col = "netram-only" if "netram-only" in run["configs"] else "nswap"
    for w in run["workloads"]:
        paper = PAPER_RUNTIMES.get(w)
        if not paper:
            continue
        ours = [results.speedup(cells, c, w) for c in (ours_col, "flash")]
        rows.append([WORKLOAD_NAMES.get(w, w), fmt(ours[0], 1, "x"),
                     fmt(paper[2] / paper[0], 1, "x"), fmt(ours[1], 1, "x"),
                     fmt(paper[2] / paper[1], 1, "x")])
    return table(["workload", ours_col, "paper Nswap2L (to NW RAM only)", "flash",
                  "paper Flash"], rows)


def netram_table(run, where=lambda c: True):
    """Network RAM as each Nswap2L configuration had it, per workload
    (medians): its MiB (the servers' capacity, from the device's status),
    the workload's footprint, the one's share of the other, and the share
    of the slots read that Network RAM served."""
    cells = [c for c in run["cells"] if c["status"] == "ok" and where(c)
             and c.get("netram_mb") is not None and c.get("read_slots") is not None]
    rows = []
    for w in run["workloads"]:
        for cfg in run["configs"]:
            mine = [c for c in cells if c["workload"] == w and c["config"] == cfg]
            if not mine or not profiles.config(cfg).prefetch:
                continue
            mb = results.median_or_none([c["netram_mb"] for c in mine])
            foot = results.median_or_none([float(c.get("footprint_mb") or 0) for c in mine])
            served = results.median_or_none(
                [c["netram_reads"] / max(1, sum(c[f"{m}_reads"] for m in
                                                ("netram", "flash", "disk")))
                 for c in mine])
            rows.append([WORKLOAD_NAMES.get(w, w), cfg, profiles.config(cfg).netram_text(),
                         fmt(mb, 1), fmt(foot, 1),
                         fmt(100 * mb / foot if foot else None, 0, "%"),
                         fmt(None if served is None else 100 * served, 0, "%")])
    return table(["workload", "config", "sized as", "Network RAM MiB", "footprint MiB",
                  "Network RAM / footprint", "reads from Network RAM"], rows)


def two_medians(cells, config, workload, key1, key2, digits):
    return f"{fmt(results.cell_median(cells, config, workload, key1), digits)} / " \
        f"{fmt(results.cell_median(cells, config, workload, key2), digits)}"


def parallelism_table(run):
    cells = run["cells"]
    policies = [c for c in BEST_N2L if c in run["configs"]]
    rows = []
    for w in run["workloads"]:
        paper = PAPER_PARALLELISM.get(w)
        rows.append([WORKLOAD_NAMES.get(w, w)] +
                    [two_medians(cells, c, w, "read_parallelism",
                                 "read_parallelism_time", 2) for c in policies] +
                    [f"{paper[0]} / {paper[1]}" if paper else "—"])
    return table(["workload"] + policies + ["paper without / with"], rows)


def ratio_table(run):
    cells = run["cells"]
    policies = [c for c in PREFETCHING if c in run["configs"]]
    rows = [[WORKLOAD_NAMES.get(w, w)] +
            [two_medians(cells, c, w, "read_prefetch_ratio", "read_prefetch_ratio_all", 3)
             for c in policies] for w in run["workloads"]]
    return table(["workload"] + policies, rows)


def reps_run(run):
    """How many reps the run's cells have: a guest's profile says the
    reps of its own share, and a resumed run has more than its first
    guests knew of."""
    return len({c["rep"] for c in run["cells"]})


def environment_lines(run, cells_of_a_matrix=True):
    """The run's setting; with cells_of_a_matrix, how many runs each
    (configuration, workload) got and how far apart they are (a sweep's
    runs of one pair are at different points)."""
    env = run["environment"]
    lines = [f"- kernel {env.get('kernel')}, {env.get('vcpus')} vCPU, "
             f"{env.get('memory_mb')} MiB, {env.get('mode')}",
             f"- QEMU: {env.get('qemu')}; {env.get('fio')}"]
    prof = env.get("profile", {})
    lines.append(f"- profile {prof.get('name')}: workload memory limit "
                 f"{prof.get('limit_mb')} MiB (per workload: {prof.get('limits') or 'none'}; "
                 f"{env.get('cgroup', 'memory.max')}), {reps_run(run)} runs per cell, "
                 f"media {prof.get('scale')}x slower than the paper's, "
                 f"seed {prof.get('seed')} for every run, configurations "
                 f"in a shuffled order per rep, passes {prof.get('passes')}, "
                 f"footprints x limit {prof.get('footprints') or 'the defaults'}, "
                 f"{prof.get('procs')} processes/threads")
    lines.append(f"- Nswap2L: placement netram-first, prefetch "
                 f"{' '.join(prof.get('prefetch_args') or ())} (amount_mode swapouts: a "
                 "percentage of the slots swapped out since the last activation); "
                 f"n2l-<policy>: Network RAM {n2l_netram_text(prof)}; Flash and disk "
                 "hold the rest")
    if cells_of_a_matrix:
        lines += [f"- {runs_done(run)}", f"- {runs_agree(run)}"]
    lines.append(f"- media as set: {json.dumps(env.get('media'))}")
    if "staged_in_tmpfs" in env:
        lines.append("- workload binaries and their libraries run from the guest's tmpfs: "
                     f"{', '.join(env['staged_in_tmpfs']) or 'none'} (the others from the "
                     "host's filesystem, through virtiofs)")
    guests = env.get("guests") or [{"workloads": list(run["workloads"]),
                                    "calibration": env.get("calibration", {}),
                                    "resumed": env.get("resumed", [])}]
    for i, g in enumerate(guests):
        where = f" (guest {i + 1}: {g.get('units') or ', '.join(g.get('configs', []))})" \
            if len(guests) > 1 else ""
        calib = g.get("calibration") or {}
        if calib.get("flash_keys"):
            lines.append(f"- Flash model{where}, set from Network RAM as measured: "
                         f"{json.dumps(calib['flash_keys'])}")
        for peer, name in (("nbd", "NBD"), ("nvme", "NVMe/TCP")):
            if calib.get(f"{peer}_error"):
                lines.append(f"- {name} not calibrated{where}: "
                             f"{calib[peer + '_error'].splitlines()[0]}")
        gate = calib.get("gate")
        if gate:
            lines.append(f"- calibration gate{where}: " + (
                "every medium within its target" if gate["passed"] else
                f"{len(gate['off_target'])} case(s) off target" +
                ("" if gate["applied"] else " (not applied: wall-clock timing)")))
        restarts = g.get("resumed")
        if restarts:
            lines.append(f"- the guest{where} died and was booted again "
                         f"{len(restarts)} time(s), going on after "
                         f"{', '.join(str(r['cells_done']) for r in restarts)} cells "
                         "(every cell finished before is kept; the consoles of the "
                         "boots that died are console-died-*.log in its build/vm directory)")
    return lines


def n2l_netram_text(prof):
    """What Network RAM the n2l-<policy> configurations of a profile had
    (configs.SwapTarget: 4 MiB a server at least, whatever the share)."""
    share, limit = prof.get("netram_share"), prof.get("limit_mb")
    if share is None or limit is None:
        return "as the profile set it"
    asked = round(limit * share)
    given = profiles.SERVERS * max(4, asked // profiles.SERVERS)
    return (f"{given} MiB in all ({prof.get('netram_share')} of the {limit} MiB limit "
            f"is {asked} MiB, at least 4 MiB a server)")


def flash_ratio_text(run):
    """Flash's ratios to Network RAM at the run's flash_speed (a run from
    before flash_speed: the paper's)."""
    speed = (run["environment"].get("calibration") or {}).get("flash_speed", "paper")
    r = profiles.flash_ratio(speed)
    return f"{r['read']} (reads) and x {r['write']} (writes), flash_speed {speed}" + (
        ", the paper's ratios" if speed == "paper" else "")


def calibration_table(run):
    """Each guest's calibration: per medium and case the target and what
    fio measured, in us per request (1 / IOPS)."""
    env = run["environment"]
    guests = env.get("guests") or [{"calibration": env.get("calibration") or {}}]
    rows = []
    for i, g in enumerate(guests):
        for medium, cases in ((g.get("calibration") or {}).get("media") or {}).items():
            for case, c in cases.items():
                t = c.get("target") or {}
                target = (f"{t['us']}" if "us" in t else
                          f"<= {t['max_us']}" if "max_us" in t else
                          f">= {t['min_us']}" if "min_us" in t else "—")
                why = t and profiles.off_target(c.get("measured"), t)
                rows.append([i + 1, medium, case, target, fmt(c.get("measured"), 1),
                             "—" if not t else f"OFF: {why}" if why else "ok"])
    return table(["guest", "medium", "case", "target us", "measured us", "verdict"], rows)


def runs_done(run):
    """How many runs each cell got, against the profile's plan: a run cut
    short still reports every cell it finished."""
    counts = {}
    for c in run["cells"]:
        key = (c["config"], c["workload"])
        counts[key] = counts.get(key, 0) + 1
    planned = run["environment"].get("profile", {}).get("reps")
    if not counts:
        return f"runs per cell: {planned} planned, none done"
    lo, hi = min(counts.values()), max(counts.values())
    done = f"{lo}" if lo == hi else f"{lo} to {hi}"
    return f"runs per cell: {planned} planned, {done} done"


def runs_agree(run):
    """How much runs of one cell differ: why a few runs per cell do."""
    got = results.spread(run["cells"])
    if got is None:
        return "no cell has two good runs to compare"
    typical, worst, (config, workload) = got
    return (f"runs of one cell differ by {typical:.1%} (median over cells; "
            f"(slowest - fastest) / median), at most {worst:.1%} ({config} "
            f"{WORKLOAD_NAMES.get(workload, workload)})")


def bad_lines(run):
    bad = results.bad_runs(run["cells"])
    missing = results.missing_cells(run["cells"], list(run["configs"]), run["workloads"])
    lines = [f"- {c['config']} {c['workload']} run {c['rep']}: "
             f"{c['status'].upper()} ({c.get('reason') or 'no reason given'})" for c in bad]
    lines += [f"- {c} {w}: no good run, no time" for c, w in missing]
    return lines or ["- none: every run completed and verified its result"]


def report_md(run, plots):
    lines = ["# Nswap2L workloads: runtime across media and peers", "",
             f"Run of {run['date']}. Each cell: the mean of its verified runs "
             "(fastest–slowest), in guest seconds (with instruction counting, guest time counts "
             "executed instructions, not the host's load; runs of a cell still differ "
             "a little, since timers and packets land between other instructions: "
             "how much is under Environment). "
             "A run that fails or computes a wrong result is listed below, never timed.",
             "", "Configurations: " + "; ".join(f"`{k}` {v}" for k, v in run["configs"].items()) + ".",
             "", "## Runtime (seconds)", ""] + runtime_table(run)
    lines += ["", "## Speedup over disk swap", "",
              "Medians over medians; the differences below are per run."]
    lines += [""] + speedup_table(run)
    lines += ["", "## Against the paper", ""] + paper_table(run)
    lines += ["", "## Differences", "",
              "Each run of a configuration over the run of the same rep (same "
              "seed, same boot) of the one it is set against: the estimate is "
              "the geometric mean of those ratios with its 95% confidence "
              "interval (Student's t on the mean log ratio). " + VERDICT_RULE, ""]
    lines += differences_table(run)
    lines += ["", "## Network RAM", "",
              "What Nswap2L's Network RAM was against what each workload allocates "
              "(medians of the runs that recorded it), and the share of the reads "
              "(requests) it served.", ""] + netram_table(run)
    lines += ["", "## Pilot gate", "", PILOT_RULE, ""] + (
        pilot.lines(run["cells"]) or ["- no run stopped or flagged"])
    if run.get("pilot_gate"):
        lines += ["", f"**The run stopped at {run['pilot_gate']['stopped_at']}: "
                  f"{'; '.join(run['pilot_gate']['why'])}.**"]
    lines += ["", "## Degree of read parallelism", "",
              "At issue / over time. At issue: mean reads in flight on all media "
              "when a read is issued, itself included (nswap2l's counter, as the "
              "paper counts). Over time: the time reads spent in flight over the "
              "run's time (the block layer's account of the device; Little's law, "
              "so it grows with a slower medium). No prefetching (`n2l-none`) "
              "against each policy.", ""]
    lines += parallelism_table(run)
    lines += ["", "## Read/prefetch ratio", "",
              "Ours / the paper's. Ours: slots read after being prefetched, per "
              "slot prefetched (at most 1). The paper's: every read served from a "
              "prefetched slot while it stays on Flash, per slot prefetched.", ""]
    lines += ratio_table(run)
    lines += ["", "## Where the CPU went (seconds, median)", "",
              "The workload's cgroup; the page servers (nswapd, nbdkit); kworkers; "
              "nswap2l's own threads; softirq; and everything busy, over the run.", ""]
    lines += per_cell_table(run, CPU_KEYS, 2)
    lines += ["", "## Swapping and memory (median)", ""]
    lines += per_cell_table(run, MEMORY_KEYS, 1)
    lines += ["", "## Scale", ""] + scale_lines(run)
    lines += ["", "## Results", ""] + checksum_lines(run)
    lines += ["", "## Failed or wrong runs", ""] + bad_lines(run)
    lines += ["", "## Environment", ""] + environment_lines(run)
    lines += ["", "## Media calibration", "",
              "fio, 4 KiB requests and sequential 1 MiB ones (the disk: 4 KiB), us "
              "per request (the runtime over the requests completed plus those still "
              "queued). Network RAM over the servers and links the configurations "
              "use is the reference: Flash's targets are its times x "
              f"{flash_ratio_text(run)}, both sizes (for a merged sequential 4 KiB "
              "stream at QD32, a bound: Flash no faster than that); the "
              "disk's are its model's mean random request and 1/"
              f"{profiles.DISK_SEQ_OVER_RANDOM} of it for sequential ones. A case "
              f"more than {profiles.TOLERANCE:.0%} off stops an instruction-counted "
              "run.", ""] + calibration_table(run)
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    lines += ["", "## Every run", ""] + every_run_table(run)
    return "\n".join(lines) + "\n"


def pyplot():
    """matplotlib's pyplot drawing to files, or None if it is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def save(plt, fig, out_dir, name):
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, name), dpi=110)
    plt.close(fig)
    return name


def plot(run, out_dir):
    """speedup.png and parallelism.png; [] if matplotlib is missing."""
    plt = pyplot()
    if not plt:
        return []
    cells, workloads = run["cells"], run["workloads"]
    made = []
    for name, configs, key, ylabel in (
            ("speedup.png", [c for c in run["configs"] if c != "disk"], None,
             "speedup over disk swap (x)"),
            ("parallelism.png", [c for c in BEST_N2L if c in run["configs"]],
             "read_parallelism", "mean reads in flight at a read")):
        fig, ax = plt.subplots(figsize=(10, 4.5))
        width = 0.8 / max(len(configs), 1)
        for i, c in enumerate(configs):
            vals = [(results.speedup(cells, c, w) if key is None else
                     results.cell_median(cells, c, w, key)) or 0 for w in workloads]
            ax.bar([x + i * width for x in range(len(workloads))], vals, width, label=c)
        ax.set_xticks([x + width * (len(configs) - 1) / 2 for x in range(len(workloads))])
        ax.set_xticklabels([WORKLOAD_NAMES.get(w, w) for w in workloads])
        ax.set_ylabel(ylabel)
        if key is None:
            ax.set_yscale("log")
        ax.legend(fontsize=7, ncol=3)
        made.append(save(plt, fig, out_dir, name))
    return made


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    with open(os.path.join(out_dir, "results.json")) as f:
        run = json.load(f)
    kind = sys.modules[__name__]
    if run.get("benchmark") == "nswap2l sweep":
        import sweep_report as kind
    elif run.get("benchmark") == "nswap2l prefetch":
        import prefetch_report as kind
    plots = kind.plot(run, out_dir)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(kind.report_md(run, plots))
    print(f"{out_dir}/report.md" + "".join(f", {p}" for p in plots))


if __name__ == "__main__":
    main()
