# SPDX-License-Identifier: GPL-2.0-only
"""report.md and plots of a sweep (sweep.py): runtimes of Radix and HPL
at every Network RAM delay x Flash latency, whether prefetching to Flash
paid (each policy against Nswap2L without prefetching, on the same media
at the same point), and WL4's read parallelism against its processes.
report.py calls it for a run of the sweep."""
import results
import stats
from report import (VERDICT_RULE, environment_lines, fmt, fmt_mean_range, of_workload,
                    pyplot, rows_of, save, table)
from sweep import LATENCY_CONFIGS, PARALLELISM_CONFIGS

NO_PREFETCH = "n2l-none"
PREFETCHING = tuple(c for c in LATENCY_CONFIGS if c.startswith("n2l-") and c != NO_PREFETCH)


def axis(cells, key):
    """The values a point key (sweep.POINT_KEYS) takes in these cells."""
    return sorted({c["point"][key] for c in cells if c["point"].get(key) is not None})


def cells_at(cells, workload, delay=None, lat=None, procs=None):
    """The cells of one point: a configuration that does not use the
    link (or Flash) ran once for every delay (or latency), untagged."""
    return [c for c in cells if c["workload"] == workload
            and c["point"].get("net_delay_us") in (delay, None)
            and c["point"].get("flash_lat_us") in (lat, None)
            and (procs is None or c["point"].get("procs") == procs)]


def latency_rows(cells, workload, key):
    rows = []
    for delay in axis(cells, "net_delay_us"):
        for lat in axis(cells, "flash_lat_us"):
            here = cells_at(cells, workload, delay, lat)
            row = [delay, lat] + [fmt_mean_range(results.mean_min_max(here, c, workload, key))
                                  for c in LATENCY_CONFIGS]
            for c in PREFETCHING:
                est = stats.compare(here, c, NO_PREFETCH, key, where=of_workload(workload))
                row.append("—" if est is None else f"{est} {est.verdict()}")
            rows.append(row)
    return rows


def latency_tables(run):
    """(label, workload, key) of the latency part: each workload's own
    time, and HPL's whole run too (report.rows_of)."""
    return [r for r in rows_of(run) if r[1] != "wl4"]


def latency_lines(run):
    lines = []
    for label, w, key in latency_tables(run):
        lines += ["", f"### {label}", ""]
        lines += table(["NetRAM delay (us)", "Flash latency (us)"] + list(LATENCY_CONFIGS) +
                       [f"{c} / {NO_PREFETCH}" for c in PREFETCHING],
                       latency_rows(run["cells"], w, key))
    return lines


def answer_lines(run):
    """Whether prefetching paid: each policy against no prefetching,
    pooled over every point (the same question at each: does it pay on
    this workload), and the points at which it was called faster or
    slower on its own."""
    cells, lines = run["cells"], []
    for label, w, key in latency_tables(run):
        for c in PREFETCHING:
            pooled = stats.compare(cells, c, NO_PREFETCH, key, where=of_workload(w))
            calls = {"faster": [], "slower": []}
            for delay in axis(cells, "net_delay_us"):
                for lat in axis(cells, "flash_lat_us"):
                    est = stats.compare(cells_at(cells, w, delay, lat), c, NO_PREFETCH,
                                        key, where=of_workload(w))
                    if est and est.verdict() in calls:
                        calls[est.verdict()].append(f"{delay}/{lat}")
            lines.append(f"- {label}: {stats.line(c, NO_PREFETCH, pooled)}, pooled over "
                         f"every point; at a point alone faster at "
                         f"{', '.join(calls['faster']) or 'none'}, slower at "
                         f"{', '.join(calls['slower']) or 'none'} (delay/latency, us)")
    return lines


def parallelism_rows(cells):
    rows = []
    for n in axis([c for c in cells if c["workload"] == "wl4"], "procs"):
        here = cells_at(cells, "wl4", procs=n)
        row = [n]
        for c in PARALLELISM_CONFIGS:
            row += [fmt(results.cell_median(here, c, "wl4", k))
                    for k in ("read_parallelism", "read_parallelism_time", "seconds")]
        rows.append(row)
    return rows


def point_media_lines(run):
    media = run.get("point_media") or {}
    rows = [[f"Network RAM, {k} us each way", v] for k, v in
            sorted(media.get("netram", {}).items(), key=lambda kv: int(kv[0]))]
    rows += [[f"Flash, latency {k} us", v] for k, v in
             sorted(media.get("flash", {}).items(), key=lambda kv: int(kv[0]))]
    return table(["medium at the point", "4 KiB random read, QD1 (us)"], rows)


def report_md(run, plots):
    lines = ["# Nswap2L sweep: when prefetching to Flash pays", "",
             f"Run of {run['date']}. Guest seconds, mean (fastest–slowest) over "
             "the runs of a point. The Network RAM delay is the link's each way "
             "(the paper's is 50 us); the Flash latency is its model's per read "
             "(writes 1.5 times that, the paper's ratio; bandwidth as calibrated). "
             "nswap runs at each delay, flash at each latency, Nswap2L at each "
             f"pair. Prefetching pays where a policy beats {NO_PREFETCH} (the same "
             "Network RAM, Flash and disk, nothing moved). Each policy over "
             f"{NO_PREFETCH}: the geometric mean of the ratios of runs paired by "
             "point, rep and seed within one boot, with its 95% confidence "
             "interval (Student's t on the mean log ratio), at each point and "
             "pooled over the points. " + VERDICT_RULE,
             "", "## What the media took at each point", ""] + point_media_lines(run)
    lines += ["", "## Runtime against the Network RAM delay and Flash latency"]
    lines += latency_lines(run)
    lines += ["", "## Where prefetching paid", ""] + answer_lines(run)
    lines += ["", "## WL4: read parallelism against processes", "",
              "At issue (nswap2l's count, as the paper's) / over time (Little's law "
              "over the block layer's account), and the runtime, medians.", ""]
    lines += table(["procs"] + [f"{c} {k}" for c in PARALLELISM_CONFIGS
                                for k in ("at issue", "over time", "seconds")],
                   parallelism_rows(run["cells"]))
    bad = results.bad_runs(run["cells"])
    lines += ["", "## Failed or wrong runs", ""] + (
        [f"- {c['config']} {c['workload']} rep {c['rep']} at "
         f"{c['point']}: "
         f"{c['status'].upper()} ({c.get('reason') or 'no reason given'})" for c in bad]
        or ["- none"])
    lines += ["", "## Environment", ""] + environment_lines(run, cells_of_a_matrix=False)
    if plots:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def nan_for_none(values):
    return [float("nan") if v is None else v for v in values]


def latency_plot(plt, run, out_dir, panels):
    """Runtime against the link's delay: a line per configuration and
    Flash latency, a panel per (label, workload, key)."""
    cells = run["cells"]
    delays = axis(cells, "net_delay_us")
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2),
                             squeeze=False)
    for ax, (label, w, key) in zip(axes[0], panels):
        for c in LATENCY_CONFIGS:
            for lat in axis(cells, "flash_lat_us") if c != "nswap" else [None]:
                ys = [results.cell_median(cells_at(cells, w, d, lat), c, w, key)
                      for d in delays]
                ax.plot(delays, nan_for_none(ys), marker="o",
                        label=c + (f", Flash {lat} us" if lat else ""))
        ax.set_title(label)
        ax.set_xlabel("Network RAM delay each way (us)")
        ax.set_ylabel("runtime (guest s)")
        ax.legend(fontsize=7)
    return save(plt, fig, out_dir, "sweep-latency.png")


def parallelism_plot(plt, run, out_dir, procs):
    """WL4's reads in flight against its processes, at issue and over time."""
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for c in PARALLELISM_CONFIGS:
        for key, style, name in (("read_parallelism", "-o", "at issue"),
                                 ("read_parallelism_time", "--s", "over time")):
            ys = [results.cell_median(cells_at(run["cells"], "wl4", procs=n), c, "wl4", key)
                  for n in procs]
            ax.plot(procs, nan_for_none(ys), style, label=f"{c}, {name}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("WL4 processes")
    ax.set_ylabel("reads in flight")
    ax.legend(fontsize=7)
    return save(plt, fig, out_dir, "sweep-parallelism.png")


def plot(run, out_dir):
    """sweep-latency.png and sweep-parallelism.png, for the parts the run
    has; [] without matplotlib."""
    plt = pyplot()
    if not plt:
        return []
    made = []
    if latency_tables(run):
        made.append(latency_plot(plt, run, out_dir, latency_tables(run)))
    procs = axis([c for c in run["cells"] if c["workload"] == "wl4"], "procs")
    if procs:
        made.append(parallelism_plot(plt, run, out_dir, procs))
    return made
