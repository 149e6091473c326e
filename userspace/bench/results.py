# SPDX-License-Identifier: GPL-2.0-only
"""What one benchmark run is made of, and the arithmetic over it: the
workloads' result lines, cells and their medians, speedups. Pure Python,
shared by the runner (in the guest) and the report (on the host)."""
import csv
import io
import statistics

# Fields of every cell in results.csv, in this order.
CSV_FIELDS = ("config", "workload", "rep", "seq", "status", "seconds", "wall_seconds",
              "reason", "footprint_mb", "limit_mb", "passes", "procs", "seed", "checksum",
              "read_parallelism", "read_parallelism_time", "read_prefetch_ratio",
              "prefetched", "prefetch_hits", "prefetch_reads", "read_prefetch_ratio_all",
              "prefetch_target", "prefetch_activations",
              "netram_reads", "flash_reads", "disk_reads", "device_reads", "read_slots",
              "netram_mb",
              "swap_out_mb", "swap_in_mb", "major_faults", "memory_peak_mb",
              "memory_high_events", "memory_max_events", "oom_kills",
              "cpu_workload_s", "cpu_servers_s", "cpu_kworkers_s",
              "cpu_nswap2l_threads_s", "cpu_softirq_s", "cpu_busy_s",
              "net_delay_us", "flash_lat_us", "flash_speed", "boot")


class ResultLineError(ValueError):
    pass


def parse_result_line(text):
    """The key=value line a workload prints (its last such line) as a dict;
    numbers stay strings but for 'seconds' and 'wall_seconds'."""
    lines = [ln for ln in text.splitlines() if ln.startswith("workload=")]
    if not lines:
        raise ResultLineError("no result line (workload=...)")
    fields = {}
    for word in lines[-1].split():
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise ResultLineError(f"not key=value: {word!r}")
        fields[key] = value
    for key in ("workload", "status"):
        if key not in fields:
            raise ResultLineError(f"result line without {key}=")
    for key in ("seconds", "wall_seconds"):
        if key in fields:
            try:
                fields[key] = float(fields[key])
            except ValueError:
                raise ResultLineError(f"{key}={fields[key]!r} is not a number")
    return fields


def cell_from_run(config, workload, rep, returncode, output, stats=None):
    """One cell of the matrix from a workload's exit status and output.

    status is 'ok' only if the workload exited 0 and said status=ok; a
    wrong or failed run keeps its reason and is never timed."""
    cell = {"config": config, "workload": workload, "rep": rep}
    try:
        line = parse_result_line(output)
    except ResultLineError as e:
        line = {"status": "failed", "reason": f"exit {returncode}: {e}"}
    ok = returncode == 0 and line.get("status") == "ok"
    if ok:
        cell["status"] = "ok"
    elif line.get("status") == "wrong":
        cell["status"] = "wrong"
    else:
        cell["status"] = "failed"
    cell["reason"] = "" if ok else line.get("reason", f"exit {returncode}")
    for key in ("footprint_mb", "limit_mb", "passes", "procs", "seed", "checksum"):
        cell[key] = line.get(key, "")
    cell["seconds"] = line["seconds"] if ok and "seconds" in line else None
    cell["wall_seconds"] = line["wall_seconds"] if ok and "wall_seconds" in line else None
    cell.update(stats or {})
    return cell


def with_event_counts(cell):
    """The cell with memory.events' counters as fields of their own, as
    results.csv and the report's tables show them."""
    ev = cell.get("memory_events") or {}
    return dict(cell, memory_high_events=ev.get("high"), memory_max_events=ev.get("max"),
                oom_kills=ev.get("oom_kill"))


def flat_row(cell):
    """A cell as one CSV row; a sweep's point (sweep.py) in its own
    columns."""
    row = with_event_counts(cell)
    row.update({k: v for k, v in (cell.get("point") or {}).items() if v is not None})
    return {k: "" if row.get(k) is None else row.get(k, "") for k in CSV_FIELDS}


def cells_to_csv(cells):
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=CSV_FIELDS, extrasaction="ignore")
    w.writeheader()
    for c in cells:
        w.writerow(flat_row(c))
    return out.getvalue()


def ok_values(cells, config, workload, key="seconds"):
    return [c[key] for c in cells if c["config"] == config
            and c["workload"] == workload and c["status"] == "ok"
            and c.get(key) is not None]


def median_or_none(values):
    return statistics.median(values) if values else None


def cell_median(cells, config, workload, key="seconds"):
    """The median over a cell's good runs, or None if it has none."""
    return median_or_none(ok_values(cells, config, workload, key))


def speedup(cells, config, workload, baseline="disk", key="seconds"):
    """How many times faster than the baseline (median runtimes)."""
    base = cell_median(cells, baseline, workload, key)
    mine = cell_median(cells, config, workload, key)
    if base is None or mine is None or mine <= 0:
        return None
    return base / mine


def spread(cells, key="seconds"):
    """How far apart the good runs of one cell are: (the median over cells
    of (slowest - fastest) / median, the largest, its (config, workload)),
    over cells with two runs or more; None if there are none."""
    got = []
    for config, workload in sorted({(c["config"], c["workload"]) for c in cells}):
        v = ok_values(cells, config, workload, key)
        mid = statistics.median(v) if len(v) > 1 else 0
        if mid > 0:
            got.append(((max(v) - min(v)) / mid, (config, workload)))
    if not got:
        return None
    return statistics.median(s for s, _ in got), *max(got)


def mean_min_max(cells, config, workload, key="seconds"):
    """(mean, min, max) over a cell's good runs, or None."""
    v = ok_values(cells, config, workload, key)
    return (statistics.fmean(v), min(v), max(v)) if v else None


def checksum_disagreements(cells):
    """(workload, {checksum: [config rep, ...]}) for every workload whose
    good runs did not all compute the same result: with one seed for every
    run they must."""
    out = []
    for w in sorted({c["workload"] for c in cells}):
        sums = {}
        for c in cells:
            if c["workload"] == w and c["status"] == "ok" and c.get("checksum"):
                sums.setdefault(c["checksum"], []).append(f"{c['config']} {c['rep']}")
        if len(sums) > 1:
            out.append((w, sums))
    return out


def bad_runs(cells):
    """Every run that was not ok, for the report to name."""
    return [c for c in cells if c["status"] != "ok"]


def missing_cells(cells, configs, workloads):
    """(config, workload) pairs without a single good run."""
    return [(c, w) for c in configs for w in workloads
            if cell_median(cells, c, w) is None]
