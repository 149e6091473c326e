# SPDX-License-Identifier: GPL-2.0-only
"""Where a run's time and memory went, read in the guest around one
workload: its cgroup's CPU, faults and memory events, the CPU of the page
servers, kworkers and softirq apart from it, and the swap device's read
parallelism averaged over the run (Little's law: the time reads spent in
flight over the time that passed), next to the one nswap2l counts at
issue. In an instruction-counted guest CPU time is instructions, so the
split says whose instructions a configuration costs."""
import os
import time

SERVERS = ("nswapd", "nbdkit")
USER_HZ = os.sysconf("SC_CLK_TCK")


def proc_stat():
    """/proc/stat's cpu line in USER_HZ ticks: user, nice, system, idle,
    iowait, irq, softirq, steal, ..."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def task_ticks():
    """{pid: (comm, utime + stime)} of every task, kernel threads too."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
        except OSError:         # gone meanwhile
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        out[int(pid)] = (comm, int(fields[11]) + int(fields[12]))
    return out


def group_of(comm):
    if comm in SERVERS:
        return "servers"
    if comm.startswith("kworker"):
        return "kworkers"
    if comm.startswith("nswap2l"):
        return "nswap2l_threads"
    return None


def group_ticks(before, after):
    """Ticks per group between two task_ticks(): tasks that came or went
    meanwhile count from zero or are lost, which is why the servers of a
    run are started before it and stopped after it."""
    got = {}
    for pid, (comm, t) in after.items():
        g = group_of(comm)
        if g:
            got[g] = got.get(g, 0) + t - before.get(pid, (comm, 0))[1]
    return got


def block_stat(path):
    """(reads completed, ms reads spent in flight) of a block device."""
    name = os.path.basename(os.path.realpath(path))
    with open(f"/sys/block/{name}/stat") as f:
        v = [int(x) for x in f.read().split()]
    return v[0], v[3]


def cgroup_file(cgroup, name):
    """A flat keyed cgroup file as a dict of ints; {} where the kernel has
    no such file (memory.peak came in 5.19)."""
    try:
        with open(os.path.join(cgroup, name)) as f:
            return {k: int(v) for k, v in (ln.split() for ln in f if ln.strip())}
    except FileNotFoundError:
        return {}


def cgroup_figures(cgroup):
    """The cgroup's own account of the run, read before it is removed."""
    cpu = cgroup_file(cgroup, "cpu.stat")
    mem = cgroup_file(cgroup, "memory.stat")
    events = cgroup_file(cgroup, "memory.events")
    try:
        with open(os.path.join(cgroup, "memory.peak")) as f:
            peak = round(int(f.read()) / (1 << 20), 1)
    except FileNotFoundError:
        peak = None
    return {"cpu_workload_s": round(cpu.get("usage_usec", 0) / 1e6, 2),
            "major_faults": mem.get("pgmajfault", 0),
            "memory_peak_mb": peak,
            "memory_events": {k: events[k] for k in sorted(events)}}


class Meter:
    """CPU and device figures of one run: start() before the workload,
    stop() after it; the workload's own come from cgroup_figures()."""

    def __init__(self, device_path):
        self.path = device_path

    def start(self):
        self.t0 = time.monotonic()
        self.cpu0, self.tasks0 = proc_stat(), task_ticks()
        self.dev0 = block_stat(self.path)

    def stop(self):
        elapsed = time.monotonic() - self.t0
        cpu1, tasks1 = proc_stat(), task_ticks()
        reads, read_ms = (b - a for a, b in zip(self.dev0, block_stat(self.path)))
        d = [b - a for a, b in zip(self.cpu0, cpu1)]
        out = {f"cpu_{g}_s": round(t / USER_HZ, 2)
               for g, t in group_ticks(self.tasks0, tasks1).items()}
        for g in ("servers", "kworkers", "nswap2l_threads"):
            out.setdefault(f"cpu_{g}_s", 0.0)
        out["cpu_softirq_s"] = round(d[6] / USER_HZ, 2)
        # Every CPU's time less its idle: the kernel measures idle time
        # (nohz), where user and system time are ticks sampled, which a
        # guest the host deschedules misses (busy read 1.66 s against the
        # workload cgroup's exact 1.81 s in one run).
        out["cpu_busy_s"] = round(elapsed * os.cpu_count() - (d[3] + d[4]) / USER_HZ, 2)
        out["device_reads"] = reads
        out["read_parallelism_time"] = round(read_ms / 1000 / elapsed, 2) if elapsed else None
        return out
