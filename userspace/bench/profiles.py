# SPDX-License-Identifier: GPL-2.0-only
"""Benchmark profiles: how fast the emulated media are, how big the
workloads are, which cells run and how often. Pure data and arithmetic.

The media keep the ratios of the original Nswap2L testbed: 1 Gb Ethernet
(~100 us round trip), an Intel X25-M class SATA SSD (~80 us a 4 KiB read,
250 MB/s) and a 7200 rpm disk (~8 ms a random access, 100 MB/s). A
profile's scale slows all of them down together, so that they stay in
proportion with what the emulated CPU can drive; every run calibrates
them with fio and records what they really did.

Bandwidth comes from queueing, not from null_blk's own `mbps` throttle
(a full run hung writers on it, results/full-20261123-0213/NOTES.md):
the SSD is a null_blk that takes 4 KiB requests, each completing after
its latency, a few at a time (250 MB/s at 80 us: 5 in flight); the disk
is dm-delay's seek time in front of a null_blk that moves one 4 KiB
request at a time at the disk's transfer rate."""
from dataclasses import dataclass, field, replace

PAPER = {
    "net_delay_us": 50,        # each way: a 100 us round trip
    "net_rate_mbit": 1000,
    "flash_latency_us": 80,
    "flash_mbps": 250,
    "disk_delay_ms": 8,
    "disk_mbps": 100,
}

REQUEST_BYTES = 4096     # the emulated media's largest request

WORKLOADS = ("wl1", "wl2", "wl4", "radix", "is", "hpl")

# (name, what a reader calls it, media, prefetch policy)
CONFIGS = (
    ("disk", "disk swap", ("disk",), None),
    ("flash", "Flash swap", ("flash",), None),
    ("nswap", "Nswap (Network RAM only)", ("netram",), None),
    ("n2l-none", "Nswap2L, no prefetching", ("netram", "flash", "disk"), "none"),
    ("n2l-rr", "Nswap2L, prefetch RR", ("netram", "flash", "disk"), "rr"),
    ("n2l-random", "Nswap2L, prefetch Random", ("netram", "flash", "disk"), "random"),
    ("n2l-lrs", "Nswap2L, prefetch LRS", ("netram", "flash", "disk"), "lrs"),
    ("n2l-mrs", "Nswap2L, prefetch MRS", ("netram", "flash", "disk"), "mrs"),
    ("nbd", "swap over NBD (nbdkit memory)", (), None),
    ("zram", "zram", (), None),
)
CONFIG_NAMES = tuple(c[0] for c in CONFIGS)

# How much host time a configuration's cells take, relative to disk swap's,
# to share them out between guests. With instruction counting a guest that
# waits costs nothing (its clock jumps to the next timer), so slow disk
# swap is cheap; what costs is emulated CPU: the TCP stack of every
# Network RAM and NBD request, prefetching's moves, hpcc's kernels.
# Measured from the host-time stamps of make bench (quick), one round:
# disk 90 s, Flash 99, zram 70, n2l-none 130, n2l-mrs 110, n2l-rr 159,
# n2l-random 176, Nswap 177.
COST = {"disk": 1, "flash": 1.1, "zram": 0.8, "n2l-none": 1.4, "n2l-mrs": 1.3}
COST_OTHERS = 1.9


def split(configs, n):
    """configs in n groups of about equal cost, each in CONFIGS order:
    the costliest first, each to the group that costs least so far."""
    groups = [[] for _ in range(max(1, min(n, len(configs))))]
    load = [0.0] * len(groups)
    for c in sorted(configs, key=lambda c: -COST.get(c, COST_OTHERS)):
        i = load.index(min(load))
        groups[i].append(c)
        load[i] += COST.get(c, COST_OTHERS)
    order = {c: i for i, c in enumerate(CONFIG_NAMES)}
    return [sorted(g, key=lambda c: order.get(c, len(order))) for g in groups]


@dataclass(frozen=True)
class Profile:
    name: str
    scale: float               # media are this many times slower than PAPER
    limit_mb: int              # the workloads' cgroup memory.high
    reps: int
    workloads: tuple = WORKLOADS
    configs: tuple = CONFIG_NAMES
    passes: dict = field(default_factory=dict)     # per workload, else its default
    footprints: dict = field(default_factory=dict)  # x limit, per workload
    limits: dict = field(default_factory=dict)      # MiB, per workload, else limit_mb
    procs: int = 4             # wl4, radix, is
    netram_share: float = 0.5  # Nswap2L: Network RAM holds this share of swap
    prefetch_args: tuple = ("interval_ms", "500", "percent", "25")
    seed: int = 1

    def media(self):
        """The emulated media of this profile, scaled, with the queueing
        that gives them their bandwidth: the SSD takes as many 4 KiB
        requests at once as its bandwidth moves in a latency (mbps x us =
        bytes); the disk moves one 4 KiB request at a time."""
        s = self.scale
        m = {
            "net_delay_us": round(PAPER["net_delay_us"] * s),
            "net_rate_mbit": round(PAPER["net_rate_mbit"] / s),
            "flash_latency_us": round(PAPER["flash_latency_us"] * s),
            "flash_mbps": max(1, round(PAPER["flash_mbps"] / s)),
            # dm-delay counts in jiffies: 4 ms at HZ=250
            "disk_delay_ms": max(4, round(PAPER["disk_delay_ms"] * s / 4) * 4),
            "disk_mbps": max(1, round(PAPER["disk_mbps"] / s)),
        }
        m["flash_queue_depth"] = max(1, round(
            m["flash_mbps"] * m["flash_latency_us"] / REQUEST_BYTES))
        m["disk_transfer_us"] = max(1, round(REQUEST_BYTES / m["disk_mbps"]))
        return m

    def limit(self, workload):
        """The memory limit of one workload. HPL gets its own: hpcc, MPI
        and OpenBLAS hold some 16 MiB of their own before the matrix, and
        under a smaller limit hpcc thrashes on its own code and buffers."""
        return self.limits.get(workload, self.limit_mb)

    def swap_mb(self):
        """Swap space every configuration gets. The workloads reach twice
        their limit, but hpcc, sized by its HPL matrix, holds about three
        times that matrix at its peak (its other kernels' arrays)."""
        return max(self.limit(w) for w in self.workloads) * 6

    def cells(self):
        """(config, workload, rep) in run order: reps outermost, so that
        an interrupted run still has every cell at least once; within a
        rep, one configuration's workloads one after the other, on one
        device made for them (see blocks())."""
        return [(c, w, r) for r in range(self.reps) for c in self.configs
                for w in self.workloads]

    def blocks(self, done=frozenset()):
        """(rep, config, workloads): the cells that share one device, but
        for those done already ((config, workload, rep) in done)."""
        blocks = []
        for r in range(self.reps):
            for c in self.configs:
                left = tuple(w for w in self.workloads if (c, w, r) not in done)
                if left:
                    blocks.append((r, c, left))
        return blocks


PROFILES = {
    # make check: every configuration on the random-access workload, seconds
    # each (tests/vm/test_workloads.py runs the other workloads on Flash).
    "smoke": Profile("smoke", scale=0.5, limit_mb=12, reps=1, workloads=("wl2",),
                     passes={"wl1": 1, "wl2": 1, "wl4": 1, "is": 2}, procs=2,
                     limits={"hpl": 16}, footprints={"radix": 1.25, "is": 1.25, "hpl": 0.5}),
    # make bench: the whole matrix, small, twice, under 30 minutes on two
    # host cores (hpcc's kernels under emulation take the most, so its
    # matrix is small: hpcc's other arrays, three times it, still swap).
    "quick": Profile("quick", scale=1.0, limit_mb=8, reps=2,
                     passes={"wl1": 1, "wl2": 1, "wl4": 1, "is": 2}, procs=2,
                     limits={"hpl": 16}, footprints={"hpl": 0.5}),
    # make bench-full: what results/ holds. Two runs a cell: with
    # instruction counting they repeat to within a few percent (the
    # report says how far apart), and the whole matrix takes about an hour
    # on two host cores.
    "full": Profile("full", scale=1.0, limit_mb=12, reps=2,
                    passes={"wl1": 2, "wl2": 2, "wl4": 2, "is": 4},
                    limits={"hpl": 24}, footprints={"hpl": 0.75}),
}


def get(name, **overrides):
    try:
        p = PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}: {', '.join(PROFILES)}")
    return replace(p, **overrides) if overrides else p
