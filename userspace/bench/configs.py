# SPDX-License-Identifier: GPL-2.0-only
"""The swap device of each configuration, built fresh for every cell from
emulated media (n2llab) and torn down after it. Runs in the guest."""
import os

import n2llab
import plans
import profiles
from n2llab import sh
from nswap2l import MEDIA, SLOT_BYTES, table_line

SERVERS = profiles.SERVERS
SWAP_PRIORITY = 100
# Page servers in another guest, if the run uses those (use_remote()):
# {MiB each: [addr:port] * SERVERS}. Empty: servers in this guest.
REMOTE = {}


def flash(profile, mb, name, keys=None):
    """The profile's emulated SSD: the n2lmedia flash model with the keys
    the calibration set (profile.flash_keys), or keys."""
    n2llab.load_media_module()
    return n2llab.ModelFlash(mb, name, discard=True,
                             **(profile.flash_keys if keys is None else keys))


def disk(profile, mb, name):
    """The profile's emulated disk: the n2lmedia disk model."""
    n2llab.load_media_module()
    return n2llab.ModelDisk(mb, name, **profile.disk_keys())


def network(profile):
    """The shaped link every configuration that uses the network reaches
    its servers over, Nswap's page servers and NBD's alike: the client's
    one NIC, as on a cluster node."""
    m = profile.media()
    return n2llab.Link(1, m["net_delay_us"], m["net_rate_mbit"])


def page_servers(link, mb_each):
    """configs.SERVERS nswapd behind link, each donating mb_each MiB."""
    return [n2llab.nswapd(link, mb_each, port=7070 + i) for i in range(SERVERS)]


def server_mb(cfg, total_mb):
    """What each of the SERVERS donates for total_mb of Network RAM:
    n2l-<policy> and Nswap at least 4 MiB (as ever: Nswap2L's Network RAM
    is then 8 MiB at quick's limit, not netram_share of it, which the
    report states); a share of the footprint as close to it as whole MiB
    on each server allow."""
    if cfg.netram is None or cfg.netram == "all":
        return max(4, total_mb // SERVERS)
    return max(1, -(-total_mb // SERVERS))


def remote_plan(profile, first_port=7070):
    """[(port, MiB)]: the page servers another guest must run for every
    configuration of the profile, SERVERS of each size, whether a device
    serves all the profile's workloads or one of them."""
    sizes = set()
    for name in profile.configs:
        cfg = profiles.config(name)
        for wls in [profile.workloads] + [(w,) for w in profile.workloads]:
            total = profile.netram_mb(cfg, wls)
            if total:
                sizes.add(server_mb(cfg, total))
    return [(first_port + i, mb) for i, mb in enumerate(m for m in sorted(sizes) for _ in range(SERVERS))]


def use_remote(addr, plan):
    """From now on devices use the page servers of plan (remote_plan())
    at addr, in another guest, instead of servers of their own; None:
    servers in this guest again."""
    REMOTE.clear()
    for port, mb in plan or ():
        REMOTE.setdefault(mb, []).append(f"{addr}:{port}")


class RemoteServer:
    """A page server in another guest: there before the device, there
    after it (the device frees what it stored when it goes)."""

    def __init__(self, name):
        self.name = name


def remove_parts(parts):
    """Take down what was set up, last first: servers stopped, media,
    links and devices removed."""
    for part in reversed(parts):
        if isinstance(part, n2llab.Process):
            part.stop()
        else:
            part.remove()


# The swap-over-the-network peers: a configuration each, whose export
# (n2llab's) serves a size in MiB behind a link.
PEERS = {"nbd": n2llab.NbdExport, "nvme": n2llab.NvmeTcpExport}


def media_used(profile):
    """The media the profile's configurations use, each peer's link by the
    peer's name."""
    used = {m for name in profile.configs for m in profiles.config(name).media}
    return used | (set(PEERS) & set(profile.configs))


class SwapTarget:
    """One configuration's swap device: setup() makes it, fresh() swaps on
    it anew before each workload, stats() reads its counters, teardown()
    undoes everything."""

    def __init__(self, profile, config, workloads=()):
        self.profile, self.config = profile, config
        self.cfg = profiles.config(config)
        self.label, self.media, self.prefetch = self.cfg.label, self.cfg.media, \
            self.cfg.prefetch
        # the workloads that will swap on it, one after the other
        self.workloads = tuple(workloads) or tuple(profile.workloads)
        self.parts = []        # what to remove, in reverse order
        self.device = None     # the nswap2l device, if any
        self.tracing = False   # its plans recorded since fresh()
        self.path = None

    def _keep(self, part):
        self.parts.append(part)
        return part

    def _servers(self, each):
        if REMOTE:
            if each not in REMOTE:
                raise ValueError(f"no remote page servers of {each} MiB: {REMOTE}")
            return [RemoteServer(name) for name in REMOTE[each]]
        link = self._keep(network(self.profile))
        return [self._keep(srv) for srv in page_servers(link, each)]

    def _flash(self, mb):
        return self._keep(flash(self.profile, mb, "bench-flash"))

    def _disk(self, mb):
        return self._keep(disk(self.profile, mb, "bench-disk"))

    def _nswap2l(self, swap_mb):
        """Nswap2L: Network RAM for part of what swaps, Flash and disk for
        the rest; Nswap and the single-medium configurations: one medium
        holding it all."""
        netram_mb = self.profile.netram_mb(self.cfg, self.workloads)
        servers = self._servers(server_mb(self.cfg, netram_mb)) if netram_mb else []
        flash = self._flash(swap_mb) if "flash" in self.media else None
        disk = self._disk(swap_mb) if "disk" in self.media else None
        args = self.profile.prefetch_args if self.prefetch not in (None, "none") else ()
        line = table_line(swap_mb << 11, flash.path if flash else "-",
                          disk.path if disk else "-",
                          servers=[s.name for s in servers],
                          prefetch=self.prefetch or "none", prefetch_args=args)
        self.device = n2llab.Device("bench-swap", line)
        self.parts.append(self.device)
        if servers:
            n2llab.wait_for(lambda: self.device.servers_up(len(servers)),
                            what="page servers up")
        return self.device.path

    def _peer(self, swap_mb):
        link = self._keep(network(self.profile))
        return self._keep(PEERS[self.config](link, swap_mb)).path

    def _zram(self, swap_mb):
        sh("modprobe zram num_devices=1")
        sh(f"echo {swap_mb}M > /sys/block/zram0/disksize")
        self.parts.append(ZramReset())
        return "/dev/zram0"

    def setup(self):
        swap_mb = self.profile.swap_mb()
        if self.config in PEERS:
            self.path = self._peer(swap_mb)
        elif self.config == "zram":
            self.path = self._zram(swap_mb)
        else:
            self.path = self._nswap2l(swap_mb)
        sh(f"mkswap {self.path}")
        return self.path

    def fresh(self):
        """Swap on it as if new: every slot discarded (a slot left over
        from the last workload would hold Network RAM), counters zeroed."""
        n2llab.run(f"swapoff {self.path}", timeout=3600)
        sh(f"swapon --discard -p {SWAP_PRIORITY} {self.path}")
        if self.device:
            self.device.message("clear_stats")
            self.tracing = plans.start()

    def stats(self):
        """Counters of the nswap2l device, if this configuration has one,
        and what its prefetch plans said."""
        if not self.device:
            return {}
        out = device_stats(self.device.status())
        if self.tracing:
            rdev = os.stat(self.path).st_rdev
            out.update(plans.stop(f"{os.major(rdev)}:{os.minor(rdev)}"))
            self.tracing = False
        return out

    def teardown(self):
        if self.path:
            n2llab.run(f"swapoff {self.path}", timeout=3600)
        remove_parts(self.parts)
        self.parts, self.device, self.path = [], None, None


def device_stats(st):
    """What a run records of an nswap2l device's status: its prefetching
    (prefetch_target, prefetch_activations and prefetch_room_target None
    from a module that reports none), its reads per medium, the slots read
    in all, and its Network RAM in MiB."""
    out = {k: st[k] for k in ("read_parallelism", "read_prefetch_ratio",
                              "prefetched", "prefetch_hits", "prefetch_reads",
                              "read_prefetch_ratio_all", "prefetch_target",
                              "prefetch_activations", "prefetch_room_target")}
    for m in MEDIA:
        out[f"{m}_reads"] = st[m]["reads"]
    out["read_slots"] = sum(st[m]["read_sectors"] for m in MEDIA) // st["slot_sectors"]
    out["netram_mb"] = round(st["netram"]["capacity"] * SLOT_BYTES / (1 << 20), 1)
    return out


class ZramReset:
    def remove(self):
        n2llab.run("echo 1 > /sys/block/zram0/reset")
        n2llab.run("rmmod zram")


def vmstat_swap_mb():
    """Swapped out and in since boot, in MiB."""
    vm = dict(line.split() for line in open("/proc/vmstat"))
    return int(vm["pswpout"]) * 4096 / (1 << 20), int(vm["pswpin"]) * 4096 / (1 << 20)


def no_other_swap():
    """The guest must swap to the device under test alone."""
    for line in open("/proc/swaps").read().splitlines()[1:]:
        n2llab.run(f"swapoff {line.split()[0]}")
