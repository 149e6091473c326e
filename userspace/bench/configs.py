# SPDX-License-Identifier: GPL-2.0-only
"""The swap device of each configuration, built fresh for every cell from
emulated media (n2llab) and torn down after it. Runs in the guest."""
import n2llab
import profiles
from n2llab import sh
from nswap2l import table_line

SERVERS = 2            # page servers, behind the one link
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


def netram_mb(profile, media, swap_mb):
    """What Network RAM holds of a configuration: all its swap if it is
    the one medium, else the profile's share of the limit."""
    return round(profile.limit_mb * profile.netram_share) if len(media) > 1 else swap_mb


def server_mb(netram_total_mb):
    """What each of the SERVERS donates for that much Network RAM."""
    return max(4, netram_total_mb // SERVERS)


def remote_plan(profile, first_port=7070):
    """[(port, MiB)]: the page servers another guest must run for every
    configuration of the profile, SERVERS of each size."""
    sizes = sorted({server_mb(netram_mb(profile, media, profile.swap_mb()))
                    for name, _, media, _ in profiles.CONFIGS
                    if name in profile.configs and "netram" in media})
    return [(first_port + i, mb) for i, mb in enumerate(m for m in sizes for _ in range(SERVERS))]


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


def media_used(profile):
    """The media the profile's configurations use, NBD's link as "nbd"."""
    used = {m for name, _, media, _ in profiles.CONFIGS if name in profile.configs
            for m in media}
    if "nbd" in profile.configs:
        used.add("nbd")
    return used


class SwapTarget:
    """One configuration's swap device: setup() makes it, fresh() swaps on
    it anew before each workload, stats() reads its counters, teardown()
    undoes everything."""

    def __init__(self, profile, config):
        self.profile, self.config = profile, config
        _, self.label, self.media, self.prefetch = \
            next(c for c in profiles.CONFIGS if c[0] == config)
        self.parts = []        # what to remove, in reverse order
        self.device = None     # the nswap2l device, if any
        self.path = None

    def _keep(self, part):
        self.parts.append(part)
        return part

    def _servers(self, total_mb):
        each = server_mb(total_mb)
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
        servers = self._servers(netram_mb(self.profile, self.media, swap_mb)) \
            if "netram" in self.media else []
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

    def _nbd(self, swap_mb):
        link = self._keep(network(self.profile))
        return self._keep(n2llab.NbdExport(link, swap_mb)).path

    def _zram(self, swap_mb):
        sh("modprobe zram num_devices=1")
        sh(f"echo {swap_mb}M > /sys/block/zram0/disksize")
        self.parts.append(ZramReset())
        return "/dev/zram0"

    def setup(self):
        swap_mb = self.profile.swap_mb()
        if self.config == "nbd":
            self.path = self._nbd(swap_mb)
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

    def stats(self):
        """Counters of the nswap2l device, if this configuration has one."""
        if not self.device:
            return {}
        st = self.device.status()
        out = {k: st[k] for k in ("read_parallelism", "read_prefetch_ratio",
                                  "prefetched", "prefetch_hits", "prefetch_reads",
                                  "read_prefetch_ratio_all")}
        for m in ("netram", "flash", "disk"):
            out[f"{m}_reads"] = st[m]["reads"]
        return out

    def teardown(self):
        if self.path:
            n2llab.run(f"swapoff {self.path}", timeout=3600)
        remove_parts(self.parts)
        self.parts, self.device, self.path = [], None, None


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
