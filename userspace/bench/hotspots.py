# SPDX-License-Identifier: GPL-2.0-only
"""Where a block path's instructions go: perf's cpu-clock samples of the
whole guest around one fio job, per symbol.

In an instruction-counted guest (N2L_ICOUNT=1) the clock counts
instructions, so there is a sample every 1e9 / FREQ instructions, and a
symbol's samples times that, over the job's requests, are its
instructions per request. A sample that falls while interrupts are off
is taken when they come on again: the code a spin_lock_irqsave() holds
shows as _raw_spin_unlock_irqrestore (and code run with interrupts off
elsewhere where it ends)."""
import json
import subprocess

FREQ = 20000


def record(path, rw, qd, size_mb, runtime, data):
    """One fio job (4 KiB, libaio, direct) under perf record; returns
    (requests done, {symbol: samples})."""
    cmd = (f"perf record -q -a -e cpu-clock -F {FREQ} -o {data} -- "
           f"fio --name=p --filename={path} --rw={rw} --bs=4k --iodepth={qd} "
           f"--ioengine=libaio --direct=1 --size={size_mb}M --randrepeat=1 --norandommap "
           f"--time_based --runtime={runtime} --output-format=json")
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True, check=True)
    job = json.loads(p.stdout[p.stdout.index("{"):])["jobs"][0]
    ios = job["read" if "read" in rw else "write"]["total_ios"]
    return ios, symbols(data)


def symbols(data):
    """{symbol: samples} of a perf.data, kernel and user alike."""
    return parse_report(subprocess.run(
        ["perf", "report", "-i", data, "--stdio", "--sort", "sym", "-n"],
        capture_output=True, text=True, check=True).stdout)


def parse_report(out):
    """perf report --sort sym -n's lines ("  6.90%  2760  [k] name") as
    {name: samples}."""
    got = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 4 and f[0].endswith("%") and f[1].isdigit():
            name = " ".join(f[3:])
            got[name] = got.get(name, 0) + int(f[1])
    return got


def per_request(samples, ios):
    """Instructions per request of so many samples over ios requests."""
    return samples * 1e9 / FREQ / ios if ios else 0.0


def compare(base, contender, top=20):
    """Two record()s of the same job: the symbols where the contender
    spends the most instructions per request more than the base, as
    [(symbol, base's, contender's)], most first, and the totals."""
    (bios, bsym), (cios, csym) = base, contender
    rows = [(s, per_request(bsym.get(s, 0), bios), per_request(csym.get(s, 0), cios))
            for s in set(bsym) | set(csym)]
    rows.sort(key=lambda r: r[1] - r[2])
    total = (per_request(sum(bsym.values()), bios), per_request(sum(csym.values()), cios))
    return rows[:top], total


def comparison_lines(profs, base, contender, heading="###"):
    """Markdown of compare()'s results, a section a case: each of profs
    has its case, instructions_per_request (base's, contender's) and its
    symbols, each with its symbol and the two figures under those names."""
    lines = []
    for p in profs:
        a, b = p["instructions_per_request"]
        lines += ["", f"{heading} {p['case']}: {a:.0f} instructions a request on {base}, "
                  f"{b:.0f} on {contender} ({b - a:+.0f})", "",
                  f"| symbol | {base} | {contender} | more |", "|---|---:|---:|---:|"]
        lines += [f"| `{r['symbol']}` | {r[base]} | {r[contender]} | "
                  f"{r[contender] - r[base]:+d} |" for r in p["symbols"]]
    return lines
