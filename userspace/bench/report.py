#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""report.md and PNG plots from a run's results.json, in the shape of the
original Nswap2L paper's tables: runtime and speedup over disk per
workload and configuration, the degree of read parallelism with and
without prefetching, and the read/prefetch ratio of each policy.

    report.py RUN_DIR      (writes RUN_DIR/report.md and RUN_DIR/*.png)
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results  # noqa: E402

# The original paper's figures (12 nodes, 1 GbE, Intel X25-M), Nswap2L.
PAPER_SPEEDUP = {"wl1": 3.5, "wl2": 30, "wl4": 30.9, "radix": 2.3, "is": 2.4, "hpl": 1.5}
PAPER_PARALLELISM = {"radix": (5.4, 13.7), "hpl": (5.2, 13.1)}  # without, with
PREFETCHING = ("n2l-rr", "n2l-random", "n2l-lrs", "n2l-mrs")
BEST_N2L = ("n2l-none",) + PREFETCHING
WORKLOAD_NAMES = {"wl1": "WL1", "wl2": "WL2", "wl4": "WL4", "radix": "Radix",
                  "is": "IS", "hpl": "HPL"}


# Workloads whose own time leaves out where they swap most: hpcc's HPL
# matrix fits the limit, its other kernels (run first) are what swap, so
# the whole run gets a row of its own, timed by wall_seconds.
WHOLE_RUN = {"hpl": "HPL, whole hpcc run"}


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


def runtime_table(run):
    cells, configs = run["cells"], list(run["configs"])
    rows = [[label] + [fmt(results.cell_median(cells, c, w, key), 2) for c in configs]
            for label, w, key in rows_of(run)]
    return table(["workload"] + configs, rows)


def best_nswap2l(cells, workload, key="seconds"):
    """The fastest Nswap2L configuration for a workload, and its speedup."""
    got = [(results.speedup(cells, c, workload, key=key), c) for c in BEST_N2L]
    got = [(s, c) for s, c in got if s is not None]
    return max(got) if got else (None, None)


def speedup_table(run):
    cells, configs = run["cells"], [c for c in run["configs"] if c != "disk"]
    rows = []
    for label, w, key in rows_of(run):
        best, name = best_nswap2l(cells, w, key)
        rows.append([label] +
                    [fmt(results.speedup(cells, c, w, key=key), 1, "x") for c in configs] +
                    [f"{fmt(best, 1, 'x')} ({name or '—'})",
                     fmt(PAPER_SPEEDUP.get(w), 1, "x")])
    return table(["workload"] + configs + ["best Nswap2L", "paper Nswap2L"], rows)


def parallelism_table(run):
    cells = run["cells"]
    policies = [c for c in BEST_N2L if c in run["configs"]]
    rows = []
    for w in run["workloads"]:
        paper = PAPER_PARALLELISM.get(w)
        rows.append([WORKLOAD_NAMES.get(w, w)] +
                    [fmt(results.cell_median(cells, c, w, "read_parallelism"), 2)
                     for c in policies] +
                    [f"{paper[0]} / {paper[1]}" if paper else "—"])
    return table(["workload"] + policies + ["paper without / with"], rows)


def ratio_table(run):
    cells = run["cells"]
    policies = [c for c in PREFETCHING if c in run["configs"]]
    rows = [[WORKLOAD_NAMES.get(w, w)] +
            [fmt(results.cell_median(cells, c, w, "read_prefetch_ratio"), 3)
             for c in policies] for w in run["workloads"]]
    return table(["workload"] + policies, rows)


def environment_lines(run):
    env = run["environment"]
    lines = [f"- kernel {env.get('kernel')}, {env.get('vcpus')} vCPU, "
             f"{env.get('memory_mb')} MiB, {env.get('mode')}",
             f"- QEMU: {env.get('qemu')}; {env.get('fio')}"]
    prof = env.get("profile", {})
    lines.append(f"- profile {prof.get('name')}: workload memory limit "
                 f"{prof.get('limit_mb')} MiB (per workload: {prof.get('limits') or 'none'}; "
                 f"{env.get('cgroup', 'memory.max')}), {prof.get('reps')} runs per cell, "
                 f"media {prof.get('scale')}x slower than the paper's, "
                 f"seeds from {prof.get('seed')}, passes {prof.get('passes')}, "
                 f"footprints x limit {prof.get('footprints') or 'the defaults'}, "
                 f"{prof.get('procs')} processes/threads")
    lines.append(f"- {runs_done(run)}")
    lines.append(f"- {runs_agree(run)}")
    lines.append(f"- media as set: {json.dumps(env.get('media'))}")
    guests = env.get("guests") or [{"configs": list(run["configs"]),
                                    "calibration": env.get("calibration", {}),
                                    "resumed": env.get("resumed", [])}]
    for i, g in enumerate(guests):
        where = f" (guest {i + 1}: {', '.join(g['configs'])})" if len(guests) > 1 else ""
        for medium, m in (g.get("calibration") or {}).items():
            lines.append(f"- calibrated {medium}{where}: 4 KiB read at QD1 "
                         f"{m.get('read_4k_qd1_us')} us, 1 MiB reads "
                         f"{m.get('read_1m_mib_s')} MiB/s")
        restarts = g.get("resumed")
        if restarts:
            lines.append(f"- the guest{where} died and was booted again "
                         f"{len(restarts)} time(s), going on after "
                         f"{', '.join(str(r['cells_done']) for r in restarts)} cells "
                         "(every cell finished before is kept; the consoles of the "
                         "boots that died are console-died-*.log in its build/vm directory)")
    return lines


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
             f"Run of {run['date']}. Each cell: the median of its verified runs, "
             "in guest seconds (with instruction counting, guest time counts "
             "executed instructions, not the host's load; runs of a cell still differ "
             "a little, since timers and packets land between other instructions: "
             "how much is under Environment). "
             "A run that fails or computes a wrong result is listed below, never timed.",
             "", "Configurations: " + "; ".join(f"`{k}` {v}" for k, v in run["configs"].items()) + ".",
             "", "## Runtime (seconds)", ""] + runtime_table(run)
    lines += ["", "## Speedup over disk swap", ""] + speedup_table(run)
    lines += ["", "## Degree of read parallelism", "",
              "Mean reads in flight on all media when a read is issued, itself "
              "included: no prefetching (`n2l-none`) against each policy.", ""]
    lines += parallelism_table(run)
    lines += ["", "## Read/prefetch ratio", "",
              "Slots read after being prefetched, per slot prefetched.", ""]
    lines += ratio_table(run)
    lines += ["", "## Failed or wrong runs", ""] + bad_lines(run)
    lines += ["", "## Environment", ""] + environment_lines(run)
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def plot(run, out_dir):
    """speedup.png and parallelism.png; [] if matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
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
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)
        made.append(name)
    return made


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out_dir = sys.argv[1]
    with open(os.path.join(out_dir, "results.json")) as f:
        run = json.load(f)
    plots = plot(run, out_dir)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(report_md(run, plots))
    print(f"{out_dir}/report.md" + "".join(f", {p}" for p in plots))


if __name__ == "__main__":
    main()
