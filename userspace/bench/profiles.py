# SPDX-License-Identifier: GPL-2.0-only
"""Benchmark profiles: how fast the emulated media are, how big the
workloads are, which cells run and how often. Pure data and arithmetic.

The media keep the ratios of the original Nswap2L testbed. Its link is
1 Gb Ethernet (~100 us round trip), shaped with netem. Its device table
("Device Speeds in our System": large direct reads Flash 23.5 against
Network RAM 21.7, writes 32.7 against 20.2) puts Flash at 1.08 times
Network RAM's time for reads and 1.62 times for writes: Flash is set
from Network RAM as calibrate.py measures it, for 4 KiB requests and
1 MiB ones alike (flash_keys()). A profile's flash_speed "fast" puts it
20% faster than Network RAM instead, both directions, latency and
bandwidth. The disk is a 7200 rpm disk
with one actuator (about 8 ms a random 4 KiB request, 100 MB/s
sequential), the n2lmedia model (userspace/media/dm-n2lmedia.c). A
profile's scale slows the link and the disk down together, so that they
stay in proportion with what the emulated CPU can drive; every run
calibrates the media with fio against the targets here and stops if
one is more than TOLERANCE off (calibrate.py)."""
import random
from dataclasses import dataclass, field, replace

PAPER = {
    "net_delay_us": 50,        # each way: a 100 us round trip
    "net_rate_mbit": 1000,
    "disk_mbps": 100,
    "disk_seek_min_us": 1000,  # track to track
    "disk_seek_max_us": 6200,  # full stroke
    "disk_rpm": 7200,
}
# Page servers of every configuration with Network RAM, behind one link.
SERVERS = 2
# Flash's time over Network RAM's, per direction (the paper's table).
FLASH_RATIO = {"read": round(23.5 / 21.7, 2), "write": round(32.7 / 20.2, 2)}
# Profile.flash_speed: how fast the calibration makes Flash against the
# Network RAM it measures, as Flash's time over Network RAM's per
# direction, for latency and bandwidth alike. "paper": the paper's
# device table (FLASH_RATIO); "fast": Flash 20% faster than Network RAM
# both ways (1.2 times its speed: its time / 1.2), a device the paper
# did not have, where prefetching moves slots to the faster medium.
FLASH_SPEEDS = {"paper": FLASH_RATIO,
                "fast": {"read": round(1 / 1.2, 3), "write": round(1 / 1.2, 3)}}


def flash_ratio(speed):
    """{"read": x, "write": y}: Flash's time over Network RAM's at a
    Profile.flash_speed."""
    try:
        return FLASH_SPEEDS[speed]
    except KeyError:
        raise ValueError(f"unknown flash_speed {speed!r}: {', '.join(FLASH_SPEEDS)}")
# The disk: random 4 KiB at most 200 a second, sequential at least 50
# times as many.
DISK_MAX_RANDOM_IOPS = 200
DISK_SEQ_OVER_RANDOM = 50
# A 1 MiB stream at QD32 keeps 32 MiB in flight: over a region of twice
# that, no two of its writes are in flight to one slot, which a swap
# device never sees and Network RAM pays dearly for (over 16 MiB, 1 MiB
# writes cost 14.6 ms each at QD32 against 9.9 at QD1). The calibration's
# cases run over this region, a second each (Profile.calib_region_mb,
# calib_ms).
CALIB_REGION_MB = 64
# How far a calibrated figure may be off its target.
TOLERANCE = 0.15
# The least a run on a medium other than the disk should do to be at the
# paper's scale: swap in this many MiB and time this many guest seconds.
SCALE_FLOOR = {"swap_in_mb": 256, "seconds": 10}
# ... and live through this many prefetch intervals.
SCALE_FLOOR_INTERVALS = 50


def off_target(measured, target):
    """Why a calibrated time (us per request) misses its target, or None.
    A target is {"us": x}, to be met within TOLERANCE, {"max_us": x}, not
    to be exceeded by more, or {"min_us": x}, not to be beaten by more."""
    if measured is None:
        return "no I/O completed"
    if "us" in target and abs(measured - target["us"]) > TOLERANCE * target["us"]:
        return f"{measured} us, target {target['us']} us +-{TOLERANCE:.0%}"
    if "max_us" in target and measured > (1 + TOLERANCE) * target["max_us"]:
        return f"{measured} us, target at most {target['max_us']} us (+{TOLERANCE:.0%})"
    if "min_us" in target and measured < (1 - TOLERANCE) * target["min_us"]:
        return f"{measured} us, target at least {target['min_us']} us (-{TOLERANCE:.0%})"
    return None

# The calibration's cases: (direction, pattern, queue depth, block size):
# 4 KiB random and sequential, and 1 MiB sequential, the paper's table's
# large direct I/O. The disk is measured at 4 KiB only.
SMALL_CASES = tuple((rw, pattern, qd, "4k") for rw in ("read", "write")
                    for pattern in ("rand", "seq") for qd in (1, 32))
LARGE_CASES = tuple((rw, "seq", qd, "1m") for rw in ("read", "write") for qd in (1, 32))
CALIBRATION_CASES = SMALL_CASES + LARGE_CASES
LARGE = 1 << 20
# What the guest costs a request through a model of no delay, the cases
# flash_keys() takes it from: a page and 1 MiB at QD1.
ZERO_CASES = (("read", "rand", 1, "4k"), ("write", "rand", 1, "4k"),
              ("read", "seq", 1, "1m"), ("write", "seq", 1, "1m"))
# n2lmedia's largest bandwidth key.
MEDIA_MAX_MBPS = 1000000


def case_name(rw, pattern, qd, bs="4k"):
    return f"{'rand' if pattern == 'rand' else ''}{rw} {bs} qd{qd}"


def flash_keys(netram, zero, speed="paper"):
    """n2lmedia flash keys that put Flash at flash_speed's ratios
    (FLASH_SPEEDS) to the Network RAM measured (netram: us a request per
    case), for 4 KiB and 1 MiB requests, given what a model of no delay
    costs in this guest (zero: the QD1 cases of ZERO_CASES). A request
    holds the bus for req_us + bytes / mbps; the two QD32 streams, where
    the bus is what limits, fix both (a page's time is mostly the fixed
    cost, 1 MiB's mostly the bytes). Its latency, lat_us + bytes /
    xfer_mbps, then makes a page and 1 MiB at QD1 take their share
    longer: Network RAM's QD1 cost over its QD32 one is 2.9 ms for 1 MiB
    and 0.13 ms for a page (reads, instruction-counted), which one fixed
    latency cannot follow. Where the bus already makes 1 MiB at QD1 slow
    enough, or zero lacks 1 MiB, xfer_mbps is 0 (none)."""
    keys = {}
    for rw, ratio in flash_ratio(speed).items():
        small, large = ratio * netram[f"rand{rw} 4k qd32"], ratio * netram[f"{rw} 1m qd32"]
        us_per_byte = max((large - small) / (LARGE - 4096), 1e-6)
        if small < 4096 * us_per_byte:      # no fixed cost: one bandwidth for both
            us_per_byte = 2 / (4096 / small + LARGE / large)
        mbps = max(1, round(1 / us_per_byte))           # 10^6 bytes/s: bytes per us
        req_us = max(0, round(small - 4096 / mbps))
        page_lat = ratio * netram[f"rand{rw} 4k qd1"] - zero[f"rand{rw} 4k qd1"] \
            - (req_us + 4096 / mbps)
        xfer = xfer_mbps(ratio * netram.get(f"{rw} 1m qd1", 0), zero.get(f"{rw} 1m qd1"),
                         page_lat, req_us + LARGE / mbps)
        keys[f"{rw}_lat_us"] = max(0, round(page_lat - (4096 / xfer if xfer else 0)))
        keys[f"{rw}_req_us"] = req_us
        keys[f"{rw}_mbps"] = mbps
        keys[f"{rw}_qd"] = 32
        keys[f"{rw}_xfer_mbps"] = xfer
    return keys


def xfer_mbps(target_us, zero_us, page_lat_us, bus_us):
    """The latency's rate per byte (10^6 bytes/s) that makes 1 MiB at QD1
    take target_us, where the guest's own cost (zero_us), the page's
    latency and 1 MiB's bus time leave it short; 0 where they do not (or
    a figure is missing). The page's fixed latency gives back what its
    own 4 KiB cost at that rate."""
    if not target_us or zero_us is None:
        return 0
    short_us = target_us - zero_us - page_lat_us - bus_us
    if short_us <= 0:
        return 0
    return min(MEDIA_MAX_MBPS, max(1, round((LARGE - 4096) / short_us)))


# Sequential QD32: a 4 KiB stream that the block layer merges. Network
# RAM fetches a merged read as one multi-page GET, cheaper per page than
# random ones (55 against 80 us a page, icount); the Flash model has one
# bandwidth for every request and cannot follow. Flash's bandwidth comes
# from the random stream, so Flash streams no faster than the paper's
# ratio says, perhaps slower; the gate stops only a Flash faster than
# that, which would flatter it.
STREAMS = ("read 4k qd32", "write 4k qd32")


def targets(medium, netram, profile):
    """{case: target} of a medium (off_target()); {} for a medium
    measured only (Network RAM, the reference, and NBD, a comparator).
    Flash's are Network RAM's times at the profile's flash_speed, both
    sizes."""
    if medium == "flash":
        ratio = flash_ratio(profile.flash_speed)
        return {name: {"min_us" if name in STREAMS else "us":
                       round(us * ratio[rw_of(name)], 1)}
                for name, us in netram.items() if us}
    if medium == "disk":
        rand = profile.disk_random_us()
        return {case_name(rw, p, qd, bs): {"us": rand} if p == "rand" else
                {"max_us": round(rand / DISK_SEQ_OVER_RANDOM, 1)}
                for rw, p, qd, bs in SMALL_CASES}
    return {}


def prefetch_interval_s(prefetch_args):
    """The prefetch interval a profile's prefetch arguments set, seconds."""
    args = list(prefetch_args)
    return int(args[args.index("interval_ms") + 1]) / 1000


def short_of_scale(cell, interval_s):
    """What a run did less of than SCALE_FLOOR and SCALE_FLOOR_INTERVALS
    ask: a subset of ("swap_in_mb", "seconds", "intervals")."""
    short = [key for key, floor in SCALE_FLOOR.items() if (cell.get(key) or 0) < floor]
    if (cell.get("seconds") or 0) / interval_s < SCALE_FLOOR_INTERVALS:
        short.append("intervals")
    return short


def rw_of(name):
    return "read" if "read" in name.split()[0] else "write"


WORKLOADS = ("wl1", "wl2", "wl4", "radix", "is", "hpl")

# (name, what a reader calls it, media, prefetch policy). The Nswap2L
# configurations n2l-<policy> give Network RAM Profile.netram_share of the
# memory limit (at least 4 MiB a server): less than the workloads swap,
# so that Flash holds the rest from the start. netram-only is Nswap2L
# with Flash and disk present and Network RAM holding all the swap: the
# paper's "Nswap2L (to NW RAM only)" column.
CONFIGS = (
    ("disk", "disk swap", ("disk",), None),
    ("flash", "Flash swap", ("flash",), None),
    ("nswap", "Nswap (Network RAM only)", ("netram",), None),
    ("n2l-none", "Nswap2L, no prefetching", ("netram", "flash", "disk"), "none"),
    ("n2l-rr", "Nswap2L, prefetch RR", ("netram", "flash", "disk"), "rr"),
    ("n2l-random", "Nswap2L, prefetch Random", ("netram", "flash", "disk"), "random"),
    ("n2l-lrs", "Nswap2L, prefetch LRS", ("netram", "flash", "disk"), "lrs"),
    ("n2l-mrs", "Nswap2L, prefetch MRS", ("netram", "flash", "disk"), "mrs"),
    ("netram-only", "Nswap2L to Network RAM only (Flash and disk present, Network RAM "
     "holds all the swap)", ("netram", "flash", "disk"), "none"),
    ("nbd", "swap over NBD (nbdkit memory)", (), None),
    ("nvme", "swap over NVMe/TCP (nvmet-tcp, a RAM disk)", (), None),
    ("zram", "zram", (), None),
)
# nvme runs only when named (--configs nvme): Debian's 6.1 kernel
# (6.1.192) hit a BUG in its own target (usercopy from page alloc, in
# nvmet_tcp_io_work) during the smoke profile's calibration, which takes
# the guest and every cell after it down. bench-netram's comparison ran.
CONFIG_NAMES = tuple(c[0] for c in CONFIGS if c[0] not in ("netram-only", "nvme"))
N2L_MEDIA = ("netram", "flash", "disk")
# Network RAM of each named configuration: "all" (the whole swap), a
# share of the footprint, or None (n2l-<policy>: Profile.netram_share of
# the limit, see above).
NETRAM_OF = {"nswap": "all", "netram-only": "all"}


@dataclass(frozen=True)
class Config:
    name: str
    label: str
    media: tuple
    prefetch: str              # None: not Nswap2L's
    netram: object = None      # "all", a share of the footprint (0-1), or None

    def netram_text(self):
        """What a reader is told of its Network RAM."""
        if self.netram == "all":
            return "Network RAM holds all the swap"
        if self.netram is not None:
            return f"Network RAM {self.netram:.0%} of the workload's footprint"
        return "Network RAM netram_share of the memory limit, at least 4 MiB a server"


def share_name(netram):
    return "all" if netram == "all" else f"{round(netram * 100)}"


def n2l_config(policy, netram):
    """Nswap2L with a prefetch policy and Network RAM netram ("all" or a
    share of the footprint, 0 to 1), named n2l-<policy>@<all|percent>."""
    return f"n2l-{policy}@{share_name(netram)}"


def config(name):
    """The Config of a name: one of CONFIGS, or n2l-<policy>@all or
    n2l-<policy>@<percent> (n2l_config()), any policy name the module
    may know; ValueError otherwise."""
    for c in CONFIGS:
        if c[0] == name:
            return Config(*c, netram=NETRAM_OF.get(name, "all" if len(c[2]) == 1 else None))
    head, at, share = name.partition("@")
    policy = head[len("n2l-"):] if head.startswith("n2l-") else ""
    if at and policy and (share == "all" or share.isdigit() and 0 < int(share) <= 100):
        netram = "all" if share == "all" else int(share) / 100
        label = (f"Nswap2L, prefetch {policy}, "
                 f"{Config(name, '', (), policy, netram).netram_text()}")
        return Config(name, label, N2L_MEDIA, policy, netram)
    raise ValueError(f"unknown configuration {name!r}: one of {', '.join(c[0] for c in CONFIGS)}"
                     " or n2l-<policy>@<all|percent of the footprint>")


# The workloads' own footprints, times the limit, where a profile sets
# none (the defaults of userspace/workloads/*.c and hpl).
DEFAULT_FOOTPRINT = {"wl1": 1.75, "wl2": 1.75, "wl4": 2.0, "radix": 1.5, "is": 1.5,
                     "hpl": 1.5}


# How much host time a workload's cells take, relative to WL1's, to share
# the runs out between guests. From the cells of results/full-20261123-0213
# (guest seconds summed over configurations): WL1 147, WL4 153, Radix
# 208, WL2 227, IS 231; HPL's from full's solve alone, unswapped in the
# guest: 90 guest seconds and about 10 host minutes on 4 processes, where
# a WL1 run took about 3.
COST = {"wl1": 1, "wl2": 1.5, "wl4": 1, "radix": 1.4, "is": 1.6, "hpl": 6}
COST_OTHERS = 1.5


def split(units, n, cost=None, order=None):
    """(name, rep) units in at most n groups of about equal cost, each
    sorted by rep, then by order(name): the costliest first, each to the
    group that costs least so far. By default a name is a workload, its
    cost COST's and its order WORKLOADS'. A unit is every configuration
    of one workload in one rep: what a paired comparison sets side by
    side, so a guest runs it whole, in one boot, and the reps of a
    workload fall to different boots."""
    rank = {w: i for i, w in enumerate(WORKLOADS)}
    cost = cost or (lambda w: COST.get(w, COST_OTHERS))
    order = order or (lambda w: rank.get(w, len(rank)))
    groups = [[] for _ in range(max(1, min(n, len(units))))]
    load = [0.0] * len(groups)
    for u in sorted(units, key=lambda u: (-cost(u[0]), u[1])):
        i = load.index(min(load))
        groups[i].append(u)
        load[i] += cost(u[0])
    return [sorted(g, key=lambda u: (u[1], order(u[0]))) for g in groups if g]


def format_units(units):
    return ",".join(f"{w}/{r}" for w, r in units)


def parse_units(text):
    """"wl1/0,hpl/1" as (("wl1", 0), ("hpl", 1))."""
    units = []
    for word in text.split(","):
        w, slash, r = word.partition("/")
        if not slash or not r.isdigit() or w not in WORKLOADS:
            raise ValueError(f"not <workload>/<rep>: {word!r}")
        units.append((w, int(r)))
    return tuple(units)


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
    hpl_procs: int = 1         # hpl's MPI processes
    netram_share: float = 0.5  # Nswap2L: Network RAM holds this share of swap
    # The paper's setting: every interval, 10% of the slots swapped out
    # since the last activation (amount_mode swapouts).
    prefetch_args: tuple = ("interval_ms", "200", "percent", "10")
    seed: int = 1              # every run's workload input, and the order
    flash_keys: dict = field(default_factory=dict)  # set by the calibration
    units: tuple = ()          # (workload, rep) this guest runs; () for all
    net_delay_us: int = None   # the link's delay each way; None: the paper's, scaled
    # Flash against Network RAM: a FLASH_SPEEDS key ("paper", "fast"), which
    # the calibration sets the Flash model and its targets from.
    flash_speed: str = "paper"
    # The pilot gate (pilot.py): True stops the run at the first run of a
    # fixed prefetch policy that fails it; False only flags such runs.
    pilot_gate: bool = False
    # The prefetch experiment (prefetch.py): its prefetch policies (a name
    # the module does not know stops it before any run), Flash speeds (a
    # boot each), Network RAM ("all" or shares of the footprint) and
    # points, (workload, processes or None).
    prefetch_policies: tuple = ("none", "rr", "random", "lrs", "mrs")
    flash_speeds: tuple = ("paper",)
    netram_shares: tuple = ("all",)
    points: tuple = ()
    # The calibration: how long each case runs (the disk's 8 times as
    # long), over how many MiB of each medium (calibrate.py).
    calib_ms: int = 1000
    calib_region_mb: int = CALIB_REGION_MB

    def runs(self, workload, rep):
        return workload in self.workloads and rep < self.reps and (
            not self.units or (workload, rep) in self.units)

    def all_units(self):
        return [(w, r) for r in range(self.reps) for w in self.workloads]

    def media(self):
        """The link and the disk of this profile, scaled."""
        s = self.scale
        delay = self.net_delay_us
        return {
            "net_delay_us": round(PAPER["net_delay_us"] * s) if delay is None else delay,
            "net_rate_mbit": round(PAPER["net_rate_mbit"] / s),
            "disk_mbps": max(1, round(PAPER["disk_mbps"] / s)),
            "disk_seek_min_us": round(PAPER["disk_seek_min_us"] * s),
            "disk_seek_max_us": round(PAPER["disk_seek_max_us"] * s),
            "disk_rpm": max(1, round(PAPER["disk_rpm"] / s)),
        }

    def disk_keys(self):
        """The n2lmedia disk model's keys."""
        m = self.media()
        return {"mbps": m["disk_mbps"], "seek_min_us": m["disk_seek_min_us"],
                "seek_max_us": m["disk_seek_max_us"], "rpm": m["disk_rpm"]}

    def disk_random_us(self):
        """What the disk model makes a random 4 KiB request cost on
        average over the whole device: two uniform positions are, in the
        square root of their distance, 8/15 of the way apart; half a
        rotation; the transfer."""
        m = self.media()
        seek = m["disk_seek_min_us"] + (m["disk_seek_max_us"] - m["disk_seek_min_us"]) * 8 / 15
        return round(seek + 30e6 / m["disk_rpm"] + 4096 / m["disk_mbps"], 1)

    def footprint_mb(self, workload):
        """The memory a workload allocates, MiB: at most this is swapped."""
        factor = self.footprints.get(workload, DEFAULT_FOOTPRINT.get(workload, 2.0))
        return factor * self.limit(workload)

    def netram_mb(self, cfg, workloads):
        """Network RAM a configuration's device gets, in all, for these
        workloads (which share it one after the other); None: no
        Network RAM. A share of the footprint is of the largest."""
        if "netram" not in cfg.media:
            return None
        if cfg.netram == "all":
            return self.swap_mb()
        if cfg.netram is None:
            return round(self.limit_mb * self.netram_share)
        return max(1, round(cfg.netram * max(self.footprint_mb(w) for w in workloads)))

    def procs_of(self, workload):
        """How many processes a workload runs; None for WL1 and WL2, which
        are one process by definition."""
        if workload in ("wl1", "wl2"):
            return None
        return self.hpl_procs if workload == "hpl" else self.procs

    def limit(self, workload):
        """The memory limit of one workload. HPL gets its own: an MPI
        process holds some 16 MiB of its own before the matrix (hpl-solve
        of order 64 peaked at 16 MiB resident natively), and under a
        smaller limit HPL thrashes on its own code and buffers."""
        return self.limits.get(workload, self.limit_mb)

    def swap_mb(self):
        """Swap space every configuration gets: six times the largest
        limit. The workloads reach twice their limit at most; the factor
        was sized for hpcc (three times its HPL matrix at its peak, its
        other kernels' arrays), which HPL no longer runs, and is kept so
        that runs before and after swap onto devices of one size."""
        return max(self.limit(w) for w in self.workloads) * 6

    def config_order(self, rep):
        """The configurations in the order rep runs them: shuffled, so
        that no configuration always follows another (a slab or page cache
        left behind, a warmer host), and the same in every boot of the
        profile and seed, so that a restarted guest goes on in it."""
        order = list(self.configs)
        random.Random(f"{self.seed}/{rep}").shuffle(order)
        return order

    def cells(self):
        """(config, workload, rep) in run order: reps outermost, so that
        an interrupted run still has every cell at least once; within a
        rep, one configuration's workloads one after the other, on one
        device made for them (see blocks())."""
        return [(c, w, r) for r in range(self.reps) for c in self.config_order(r)
                for w in self.workloads if self.runs(w, r)]

    def blocks(self, done=frozenset()):
        """(rep, config, workloads): the cells that share one device, but
        for those done already ((config, workload, rep) in done)."""
        blocks = []
        for r in range(self.reps):
            for c in self.config_order(r):
                left = tuple(w for w in self.workloads
                             if self.runs(w, r) and (c, w, r) not in done)
                if left:
                    blocks.append((r, c, left))
        return blocks


PROFILES = {
    # make check: every kind of configuration on the random-access
    # workload, seconds each: Nswap2L without prefetching and with one
    # policy (the others differ only by the name the table gives; the VM
    # suite's test_prefetch.py runs each), three minutes of CI fewer
    # (tests/vm/test_workloads.py runs the other workloads). Its gate is
    # never applied (the wall clock's figures are not exact), so its
    # calibration runs each case half as long, over a quarter of the
    # region: of 235 s it took at a second and 64 MiB (one vCPU beside
    # two busy guests), 52 went to preconditioning every medium and 71 to
    # the disk's 8 cases. WL2 at 1.25 times the limit (its own default
    # 1.75): at 1.75 its seven cells took 340 s of the test's 647 among
    # three guests (stop 43's pre-check), at 1.4 on a slower host 440 s
    # of 813, most of it filling the footprint (stop 45's pre-check: the
    # Flash cell 115 s for 19.6 s timed).
    "smoke": Profile("smoke", scale=0.5, limit_mb=12, reps=1, workloads=("wl2",),
                     calib_ms=500, calib_region_mb=16,
                     configs=("disk", "flash", "nswap", "n2l-none", "n2l-lrs", "nbd", "zram"),
                     passes={"wl1": 1, "wl2": 1, "wl4": 1, "is": 2}, procs=2,
                     limits={"hpl": 16},
                     footprints={"wl2": 1.25, "radix": 1.25, "is": 1.25, "hpl": 0.5}),
    # make bench: the whole matrix, small, twice, under 30 minutes on two
    # host cores; HPL's matrix 1.5 times its limit, so that the solve
    # swaps.
    "quick": Profile("quick", scale=1.0, limit_mb=8, reps=2,
                     passes={"wl1": 1, "wl2": 1, "wl4": 1, "is": 2}, procs=2,
                     limits={"hpl": 16}),
    # make bench-sweep (userspace/bench/sweep.py): quick's sizes, three
    # runs of every point; the sweep varies the link and Flash around them.
    "sweep": Profile("sweep", scale=1.0, limit_mb=8, reps=3,
                     workloads=("wl4", "radix", "hpl"),
                     configs=("flash", "nswap", "n2l-none", "n2l-rr", "n2l-lrs"),
                     passes={"wl4": 1}, procs=2, limits={"hpl": 16}),
    # make bench-prefetch (prefetch.py): whether and when prefetching pays.
    # Radix at 2 and 8 processes and WL2, on Nswap2L whose Network RAM
    # holds all the swap, without prefetching and with LRS, MRS and auto,
    # Flash at the paper's ratio and 20% faster than Network RAM, 6 reps,
    # a boot each; quick's limit. Sized for 50 prefetch activations or
    # more (an activation needs swap-outs since the last): an interval of
    # 50 ms, and runs of about 5 guest seconds. One pass of Radix at 2
    # processes took 2.5 s (2.34 s sorting), one of WL2 1.5 s (0.63 s
    # timed) on Nswap2L at the paper's Flash, instruction-counted
    # (prefetch-smoke): WL2 4 passes, about 3.4 s and 68 intervals. Radix
    # 4: at 2 passes it had 88 activations at 2 processes (5 s) but 34 and
    # 40 at 8 (3.5 s), and the pilot gate stopped the first run there
    # (results/prefetch-20261127-1323). The pilot gate applies.
    "prefetch": Profile("prefetch", scale=1.0, limit_mb=8, reps=6,
                        workloads=("radix", "wl2"), passes={"radix": 4, "wl2": 4},
                        procs=2, prefetch_args=("interval_ms", "50", "percent", "10"),
                        pilot_gate=True, prefetch_policies=("none", "lrs", "mrs", "auto"),
                        flash_speeds=("paper", "fast"), netram_shares=("all",),
                        points=(("radix", 2), ("radix", 8), ("wl2", None))),
    # Its smallest form, which proves the plumbing: one rep, one pass,
    # Radix at 2 processes and WL2, the gate only flagging.
    "prefetch-smoke": Profile("prefetch-smoke", scale=1.0, limit_mb=8, reps=1,
                              workloads=("radix", "wl2"), passes={"radix": 1, "wl2": 1},
                              procs=2, prefetch_args=("interval_ms", "50", "percent", "10"),
                              pilot_gate=False,
                              prefetch_policies=("none", "lrs", "mrs", "auto"),
                              flash_speeds=("paper", "fast"), netram_shares=("all",),
                              points=(("radix", 2), ("wl2", None))),
    # make bench-full: the paper's scale (SCALE_FLOOR: each run off the
    # disk swaps in 256 MiB or more over 10 s or more), three runs a cell,
    # WL4, Radix and IS on 8 processes, HPL on 4 with a matrix 1.5 times
    # its limit, so that the solve itself swaps. Passes from one run of
    # each workload on Nswap (WL1 12 passes: 273 MiB in 15.6 s; WL2 14:
    # 147 MiB in 14.2 s; WL4 12: 141 MiB in 4.9 s), scaled to the floor.
    # It takes hours under emulation here (about 3 host minutes a WL1 run
    # at this size): a machine with KVM runs it. IS at 11 passes ran 5.4 s
    # on nbd and 8.6 s with random prefetching, 47 activations: the pilot
    # gate stopped results/full-20261201-2357 there; twice that is over
    # the floor (10 s, 50 activations) on both. HPL: a 72 MiB matrix (N
    # 3075) over the 47 MiB an 88 MiB limit leaves it, 1.5 times, since
    # its 4 MPI processes hold 41 MiB of their own (memory.peak 113 MiB,
    # unlimited, in the guest); under 48 MiB, the matrix got 7, and the
    # first nbd run had not finished after 35 host minutes.
    "full": Profile("full", scale=1.0, limit_mb=12, reps=3,
                    configs=CONFIG_NAMES + ("netram-only",), pilot_gate=True,
                    passes={"wl1": 12, "wl2": 25, "wl4": 24, "radix": 4, "is": 22},
                    procs=8, hpl_procs=4, limits={"hpl": 88}, footprints={"hpl": 0.82}),
}


def get(name, **overrides):
    try:
        p = PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}: {', '.join(PROFILES)}")
    return replace(p, **overrides) if overrides else p
