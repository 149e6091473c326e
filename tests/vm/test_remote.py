"""Swapping to page servers on another machine: the second guest that
tests/vm/run starts beside this one once the shards are done, so that
the two have the host to themselves (tests/vm/remote-servers), reached
over a QEMU link. Their memory is out of reach of this guest's pressure,
as in production, so this guest can be squeezed while it swaps to them."""
import os
import subprocess
import threading
import time

import pytest

import n2l
from n2l import run, sh, table_line

MB = 1 << 20
REMOTE = ["10.88.0.2:7070", "10.88.0.2:7071"]


def meminfo_kb(field):
    for line in open("/proc/meminfo"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


class Watchdog(threading.Thread):
    """Fails the test if swapping stops making progress: no page swapped
    in or out for stall_s seconds while the workload runs. It then dumps
    the blocked tasks (sysrq w) into the kernel log, which the harness
    prints, and kills the workload so that the test ends."""

    def __init__(self, workload, stall_s=60):
        super().__init__(daemon=True)
        self.workload, self.stall_s = workload, stall_s
        self.stalled = False
        self.done = threading.Event()

    @staticmethod
    def progress():
        vm = dict(line.split() for line in open("/proc/vmstat"))
        return int(vm["pswpin"]) + int(vm["pswpout"])

    def run(self):
        last, since = self.progress(), time.time()
        while not self.done.wait(1):
            now = self.progress()
            if now != last:
                last, since = now, time.time()
            elif time.time() - since > self.stall_s:
                self.stalled = True
                run("echo w > /proc/sysrq-trigger")
                self.workload.kill()
                return


def scarce_memory(leave_mb):
    """Reserve huge pages so that only about leave_mb stay available to
    everything else in the guest; returns the MiB reserved."""
    sh("sync; echo 3 > /proc/sys/vm/drop_caches")
    avail = meminfo_kb("MemAvailable") // 1024
    with open("/proc/sys/vm/nr_hugepages", "w") as f:
        f.write(f"{max((avail - leave_mb) // 2, 0)}\n")
    return int(open("/proc/sys/vm/nr_hugepages").read()) * 2


def protect_from_oom(*pids):
    for pid in pids:
        with open(f"/proc/{pid}/oom_score_adj", "w") as f:
            f.write("-1000\n")


@pytest.fixture
def remote_servers():
    assert n2l.remote_link("client"), \
        "no link to the server guest: run the suite through tests/vm/run"
    return REMOTE


def test_swap_over_network_under_global_memory_pressure(lab, remote_servers):
    # No cgroup: the whole guest runs short of memory, so the client's own
    # sends and receives happen while reclaim waits for them. This is the
    # swap-over-network deadlock: it must not happen (sk_set_memalloc,
    # PF_MEMALLOC sends, preallocated requests, noio workers).
    dev = lab.device("n2l-squeeze", table_line(320 << 11, servers=remote_servers))
    # The other guest may still be booting.
    n2l.wait_for(lambda: dev.servers_up(2), timeout=300, what="remote servers up")
    # The server guest, starved by the host, once lost both connections
    # and was away before it answered again: swapped-out pages would then
    # fail to read.
    n2l.wait_out_starvation(dev)
    protect_from_oom(os.getpid())
    sh(f"mkswap {dev.path}")
    sh(f"swapon {dev.path}")
    reserved = scarce_memory(leave_mb=160)
    try:
        # Well beyond what is free: at least 128 MiB must go to swap.
        work_mb = meminfo_kb("MemFree") // 1024 + 192
        print(f"reserved {reserved} MiB in huge pages, workload {work_mb} MiB, "
              f"{meminfo_kb('MemFree') // 1024} MiB free")
        # Rounds of 40 s until 64 MiB went to the servers: a guest the host
        # starves (CI runs seven side by side on two cores; it once spent
        # a whole round zeroing pages, RCU stall warnings and all) gets
        # more rounds, not a failure. Each round verifies what it wrote.
        for rnd in range(6):
            work = subprocess.Popen(
                f"stress-ng --vm 2 --vm-bytes {work_mb // 2}M --vm-keep --vm-method all "
                f"--verify --timeout 40s --metrics-brief --temp-path /tmp/n2l",
                shell=True, cwd="/tmp/n2l", stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True)
            dog = Watchdog(work, stall_s=120)
            dog.start()
            out, _ = work.communicate(timeout=1800)
            dog.done.set()
            dog.join()
            st = dev.status()
            print(f"round {rnd}: {st['netram']['write_sectors'] // 2048} MiB to the servers, "
                  f"stress-ng said:\n{out[-1500:]}")
            if dog.stalled or work.returncode != 0 or \
                    st["netram"]["write_sectors"] * 512 >= 64 * MB:
                break
    finally:
        with open("/proc/sys/vm/nr_hugepages", "w") as f:
            f.write("0\n")
    assert not dog.stalled, \
        f"swapping stalled for 120 s: deadlock? (blocked tasks below) {st}"
    assert work.returncode == 0, out
    assert reserved > 0
    assert st["netram"]["write_sectors"] * 512 >= 64 * MB, (st["netram"], out)
    assert st["netram"]["reads"] > 0
    assert st["failed_reads"] == 0 and st["lost"] == 0
    sh(f"swapoff {dev.path}", timeout=1800)
