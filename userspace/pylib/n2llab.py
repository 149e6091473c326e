# SPDX-License-Identifier: GPL-2.0-only
"""The guest lab: emulated media, page servers behind shaped links, NBD
exports and nswap2l devices, for the VM tests, the demo and the
benchmarks. Runs inside the guest, as root.

Media are real kernel drivers (memory-backed null_blk through configfs,
dm-delay); every page server lives in its own network namespace, reached
from the root namespace (where the kernel client runs) over a veth pair
shaped by netem in both directions. Only the 10.77.<i>.0/24 links made
here carry traffic: nothing leaves the guest.
"""
import os
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Built for every kernel by make module KVER=...: the running one's.
MODULE = os.environ.get("N2L_MODULE") or os.path.join(
    REPO, "build", "kmod", os.uname().release, "nswap2l.ko")
# The test-only n2lmedia target (make media), built for every kernel.
MEDIA_MODULE = os.environ.get("N2L_MEDIA_MODULE") or os.path.join(
    REPO, "build", "kmod-media", os.uname().release, "dm-n2lmedia.ko")
TOOLS = os.path.join(REPO, "build", "tools")
NSWAPD = os.path.join(REPO, "build", "nswapd")
NULLB = "/sys/kernel/config/nullb"
TRACEFS = "/sys/kernel/tracing"
LOGDIR = "/tmp/n2l"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dmioctl  # noqa: E402
from nswap2l import parse_status  # noqa: E402


class CommandError(Exception):
    pass


def sh(cmd, check=True, timeout=600, input=None):
    """Run a shell command; return its stdout. Raise with stderr on failure."""
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True,
                       timeout=timeout, input=input)
    if check and p.returncode != 0:
        raise CommandError(f"{cmd!r} exited {p.returncode}\nstdout: {p.stdout}\n"
                           f"stderr: {p.stderr}")
    return p.stdout


def run(cmd, timeout=600):
    """Run a shell command; return the CompletedProcess, never raise."""
    return subprocess.run(cmd, shell=True, capture_output=True, text=True,
                          timeout=timeout)


def wait_for(predicate, timeout=60, interval=0.2, what="condition"):
    """predicate()'s first true value, polled until timeout seconds pass."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _write(path, value):
    """value to a sysfs, procfs or configfs attribute."""
    with open(path, "w") as f:
        f.write(value)


def tracefs():
    """The tracing filesystem, mounted if it is not yet (a guest's is not)."""
    if not os.path.isdir(os.path.join(TRACEFS, "events")):
        run(f"mount -t tracefs none {TRACEFS}")
    return TRACEFS


def load_modules(nswap2l=True):
    """device-mapper, dm-delay, null_blk (with configfs mounted), nbd, and
    nswap2l.ko from the tree."""
    sh("modprobe dm-mod; modprobe dm-delay; modprobe nbd nbds_max=4")
    # Loading null_blk loads configfs, which makes the mount point.
    sh("modprobe null_blk nr_devices=0")
    if not os.path.ismount("/sys/kernel/config"):
        sh("mount -t configfs none /sys/kernel/config")
    if nswap2l and "nswap2l" not in sh("lsmod"):
        insmod_tree_module()
    os.makedirs(LOGDIR, exist_ok=True)


def insmod_tree_module():
    """nswap2l.ko from the tree, after the modules it needs (the kernel's
    ChaCha20 and Poly1305, say), which insmod, unlike modprobe, leaves to
    the caller."""
    deps = sh(f"modinfo -F depends {MODULE}").strip()
    if deps:
        sh(f"modprobe -a {' '.join(deps.split(','))}")
    sh(f"insmod {MODULE}")


# ----------------------------------------------------------------------------
# Media

_nullb_index = [0]


class NullBlk:
    """A null_blk device made through configfs.

    discard=True gives discard support (what TRIM pass-down needs);
    latency_ns, if set, delays every completion by that much (a Flash
    profile); queue_depth and max_kib, if set, bound the requests in flight
    and their size, which with latency_ns bounds bandwidth; cache_mb
    emulates a volatile write cache, so that flushes and FUA reach the
    driver.
    """

    def __init__(self, size_mb, discard=False, latency_ns=0, queue_depth=0,
                 max_kib=0, memory_backed=True, cache_mb=0, blocksize=4096,
                 prefix="n2lt"):
        _nullb_index[0] += 1
        self.name = f"{prefix}{_nullb_index[0]}"
        self.dir = os.path.join(NULLB, self.name)
        os.mkdir(self.dir)
        self._set("size", size_mb)
        self._set("blocksize", blocksize)
        self._set("memory_backed", int(memory_backed))
        self._set("discard", int(discard))
        if latency_ns:
            self._set("irqmode", 2)
            self._set("completion_nsec", latency_ns)
        if queue_depth:
            # one queue, so that the depth is the device's, not a CPU's
            self._set("submit_queues", 1)
            self._set("hw_queue_depth", queue_depth)
        if max_kib:
            self._set("max_sectors", max_kib * 2)
        if cache_mb:
            self._set("cache_size", cache_mb)
        self._set("power", 1)
        # Since 5.19 a configfs null_blk disk is named after its directory.
        self.path = f"/dev/{self.name}"
        self.sysname = self.name
        wait_for(lambda: os.path.exists(self.path), timeout=5,
                 what=f"{self.path} to appear")
        self.size_mb = size_mb

    def _set(self, attr, value):
        _write(os.path.join(self.dir, attr), f"{value}\n")

    def stat(self):
        """/sys/block/<dev>/stat as a dict of the fields we use."""
        f = [int(x) for x in open(f"/sys/block/{self.sysname}/stat").read().split()]
        return {"reads": f[0], "writes": f[4], "discards": f[11],
                "discard_sectors": f[13], "flushes": f[15] if len(f) > 15 else 0}

    def remove(self):
        if os.path.isdir(self.dir):
            self._set("power", 0)
            os.rmdir(self.dir)


class DelayedDisk:
    """A disk: dm-delay (ms per request; dm-delay has jiffy granularity,
    4 ms at HZ=250) in front of a memory-backed null_blk that, given
    transfer_us, moves one 4 KiB request at a time in that many us."""

    def __init__(self, size_mb, delay_ms=4, name="n2l-disk", transfer_us=0):
        serial = {"latency_ns": transfer_us * 1000, "queue_depth": 1,
                  "max_kib": 4} if transfer_us else {}
        self.raw = NullBlk(size_mb, prefix="n2ld", **serial)
        self.name = name
        self.path = f"/dev/mapper/{name}"
        sh(f"dmsetup create {name} --table "
           f"'0 {size_mb * 2048} delay {self.raw.path} 0 {delay_ms}'")
        self.size_mb = size_mb

    def remove(self):
        if os.path.exists(self.path):
            sh(f"dmsetup remove --retry {self.name}")
        self.raw.remove()


# udev probes every new device-mapper device (blkid reads it): on a model
# of 10 ms a request that takes seconds, counts in its status, and holds up
# dmsetup create, which waits for udev. As 11-dm-nswap2l.rules does for
# nswap2l, devices whose DM uuid starts N2LMEDIA- get no content probe.
MEDIA_UDEV_RULE = "/run/udev/rules.d/11-n2lmedia.rules"
MEDIA_UUID_PREFIX = "N2LMEDIA-"


def udev_reload(tries=10):
    """udevadm control --reload, tried again while udevd closes the
    connection unanswered ("Failed to wait for daemon to reply: Broken
    pipe"): systemd-udevd 250 and later does that to a reload that comes
    while it still applies the one before (systemd issue 22686), and a
    guest's first test reloads twice, once per rule it writes (stop 44's
    pre-check: a whole shard errored at its setup)."""
    for i in range(tries):
        p = run("udevadm control --reload")
        if p.returncode == 0:
            return
        if i == tries - 1:
            raise CommandError(f"udevadm control --reload exited {p.returncode} "
                               f"{tries} times: {p.stderr.strip()}")
        time.sleep(0.5)


def load_media_module():
    """The n2lmedia target, from the tree, unless device-mapper has it, and
    the udev rule that keeps probes off its devices."""
    if "n2lmedia" not in sh("dmsetup targets"):
        sh(f"insmod {MEDIA_MODULE}")
    if not os.path.exists(MEDIA_UDEV_RULE):
        os.makedirs(os.path.dirname(MEDIA_UDEV_RULE), exist_ok=True)
        with open(MEDIA_UDEV_RULE, "w") as f:
            f.write(f'SUBSYSTEM=="block", KERNEL=="dm-[0-9]*", ACTION=="add|change", '
                    f'ATTR{{dm/uuid}}=="{MEDIA_UUID_PREFIX}*", ENV{{DM_NOSCAN}}="1"\n')
        udev_reload()


def parse_media_status(line):
    """The INFO status of one n2lmedia target, with or without the leading
    '<start> <length> n2lmedia', as {"model", "read": {...}, "write": {...},
    "queued"}; field order: userspace/media/dm-n2lmedia.c."""
    w = line.split()
    if len(w) > 2 and w[2] == "n2lmedia":
        w = w[3:]
    model, nums = w[0], [int(x) for x in w[1:]]
    keys = ["requests", "bytes", "service_us"]
    if model == "disk":
        keys += ["seeks", "sequential"]
    n = len(keys)
    if len(nums) != 2 * n + 1:
        raise ValueError(f"n2lmedia status of {len(nums)} numbers: {line}")
    return {"model": model, "read": dict(zip(keys, nums[:n])),
            "write": dict(zip(keys, nums[n:2 * n])), "queued": nums[-1]}


class Medium:
    """An emulated medium whose timing a model fixes: the n2lmedia target
    (userspace/media/dm-n2lmedia.c) over a memory-backed null_blk without
    delay, which holds the data. ModelFlash and ModelDisk pick the model;
    keys are its table arguments (read_lat_us=80, ...), the rest its
    defaults. discard gives the null_blk discard support, which the target
    then passes on; cache_mb a write cache, so that flushes reach it.
    Call load_media_module() first."""

    model = None

    def __init__(self, size_mb, name, discard=False, cache_mb=0, **keys):
        self.raw = NullBlk(size_mb, discard=discard, cache_mb=cache_mb, prefix="n2lm")
        self.name = name
        self.path = f"/dev/mapper/{name}"
        self.size_mb = size_mb
        self.keys = keys
        try:
            sh(f"dmsetup create {name} --uuid {MEDIA_UUID_PREFIX}{name} "
               f"--table '{self.table_line()}'")
        except CommandError:
            self.raw.remove()
            raise

    def table_line(self):
        args = " ".join(f"{k} {v}" for k, v in self.keys.items())
        return (f"0 {self.size_mb * 2048} n2lmedia {self.raw.path} 0 {self.model} "
                f"{2 * len(self.keys)} {args}").rstrip()

    def status(self):
        return parse_media_status(dmioctl.status(self.name))

    def clear_stats(self):
        dmioctl.message(self.name, ["clear_stats"])

    def remove(self):
        if os.path.exists(self.path):
            sh(f"dmsetup remove --retry {self.name}")
        self.raw.remove()


class ModelFlash(Medium):
    """Flash: per direction a latency, a bandwidth and a queue depth."""
    model = "flash"


class ModelDisk(Medium):
    """A disk: one actuator, FIFO, seeks and half a rotation unless a
    request starts where the previous one ended."""
    model = "disk"


# ----------------------------------------------------------------------------
# Network: namespaces, shaped links, page servers, NBD


class Link:
    """Network namespace n2ls<i> with address 10.77.<i>.2, joined to the
    root namespace (10.77.<i>.1) by a veth pair; netem gives each direction
    delay_us and rate_mbit."""

    def __init__(self, index, delay_us=0, rate_mbit=0):
        self.index = index
        self.ns = f"n2ls{index}"
        self.host_if, self.peer_if = f"n2lh{index}", f"n2lp{index}"
        self.addr = f"10.77.{index}.2"
        self.delay_us, self.rate_mbit = delay_us, rate_mbit
        # Two ip batches, not a command each: a process start costs a
        # guest under TCG a tenth of a second or more.
        sh("ip -batch -", input=f"netns add {self.ns}\n"
           f"link add {self.host_if} type veth peer name {self.peer_if} netns {self.ns}\n"
           f"addr add 10.77.{index}.1/24 dev {self.host_if}\n"
           f"link set {self.host_if} up\n")
        # Peer servers reach each other through the root namespace.
        sh(f"ip -n {self.ns} -batch -", input=f"addr add {self.addr}/24 dev {self.peer_if}\n"
           f"link set {self.peer_if} up\n"
           "link set lo up\n"
           f"route add default via 10.77.{index}.1\n")
        _write("/proc/sys/net/ipv4/ip_forward", "1")
        if delay_us or rate_mbit:
            q = "netem"
            if delay_us:
                q += f" delay {delay_us}us"
            if rate_mbit:
                q += f" rate {rate_mbit}mbit"
            self.shape_both(q)

    def shape(self, netem):
        """Both directions get these netem options (loss, duplicate,
        reorder, delay ...) from now on."""
        self.shape_both(f"netem {netem}")

    def shape_both(self, qdisc):
        sh(f"tc qdisc replace dev {self.host_if} root {qdisc}")
        sh(f"tc -n {self.ns} qdisc replace dev {self.peer_if} root {qdisc}")

    def down(self):
        """Cut the link (a partition); up() mends it."""
        sh(f"ip link set {self.host_if} down")

    def up(self):
        sh(f"ip link set {self.host_if} up")

    def describe(self):
        return {"delay_us_each_way": self.delay_us, "rate_mbit": self.rate_mbit,
                "kind": "veth + netem, both directions"}

    def remove(self):
        # The veth first: it goes at once, a namespace's devices later.
        sh("ip -force -batch -", check=False,
           input=f"link del {self.host_if}\nnetns del {self.ns}\n")


def _proc_net_addr(addr):
    """An IPv4 address as /proc/net/tcp writes it (in memory order)."""
    try:
        return socket.inet_aton(addr)[::-1].hex().upper()
    except OSError:
        return None


class Process:
    """A server process listening on addr:port, in a link's namespace if
    link is given, logging to LOGDIR."""

    def __init__(self, link, argv, port, logname, addr=None):
        self.link, self.port, self.argv = link, port, argv
        self.addr = addr or link.addr
        self.name = f"{self.addr}:{port}"
        self.log = os.path.join(LOGDIR, logname)
        os.makedirs(LOGDIR, exist_ok=True)
        self._start()

    def restart(self):
        """Start the same server again (a new process: a new epoch)."""
        self.stop(9, timeout=10)
        self._start()

    def _start(self):
        logf = open(self.log, "a")
        netns = ["ip", "netns", "exec", self.link.ns] if self.link else []
        self.proc = subprocess.Popen([*netns, *self.argv], stdout=logf, stderr=logf)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise CommandError(f"server {self.name} exited:\n{self.read_log()}")
            if self._listening():
                return
            time.sleep(0.2)
        self.proc.kill()        # nothing may hold the link's namespace after this
        self.proc.wait()
        raise CommandError(f"server {self.name} did not listen:\n{self.read_log()}")

    def _listening(self):
        """The server listens on its port, as its own /proc/<pid>/net
        shows (no ss process to start): once it is in its namespace."""
        pid = self.proc.pid
        try:
            if self.link and os.stat(f"/proc/{pid}/ns/net").st_ino != \
                    os.stat(f"/run/netns/{self.link.ns}").st_ino:
                return False
            tables = [open(f"/proc/{pid}/net/{t}").read().splitlines()[1:]
                      for t in ("tcp", "tcp6")]
        except OSError:
            return False
        mine = {f"{a}:{self.port:04X}" for a in ("00000000", _proc_net_addr(self.addr))}
        return any(f[1] in mine and f[3] == "0A"     # TCP_LISTEN
                   for lines in tables for f in map(str.split, lines))

    def read_log(self):
        return open(self.log).read() if os.path.exists(self.log) else ""

    def pid(self):
        """The server's own pid (ip netns exec execs it, so it is the same)."""
        return self.proc.pid

    def signal(self, sig):
        os.kill(self.pid(), sig)

    def stop(self, sig=15, timeout=60):
        if self.proc and self.proc.poll() is None:
            self.signal(sig)
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        return self.proc.returncode if self.proc else None


def nswapd(link, mb, *extra, port=7070, addr=None):
    """An nswapd donating exactly mb MiB (min = max, nothing reserved), on
    a link of its own, or on addr in this namespace."""
    addr = addr or link.addr
    secure = any(a.startswith("--psk-file") for a in extra)
    return Process(link, [NSWAPD, "--listen", f"{addr}:{port}",
                          "--min-mb", str(mb), "--max-mb", str(mb),
                          "--reserve-mb", "0", "--interval-ms", "200",
                          *([] if secure else ["--insecure"]), *extra],
                   port, f"nswapd-{addr}-{port}.log", addr=addr)


# The QEMU link between two guests (userspace/vm/n2l-vm --link): the
# listening guest serves pages on 10.88.0.2, the connecting one is .1.
REMOTE_MACS = {"server": "52:54:00:4e:32:01", "client": "52:54:00:4e:32:02"}


def remote_link(side):
    """Bring up this guest's end of the link to the other guest; its
    address, or None if this guest has no such link."""
    addr = f"10.88.0.{2 if side == 'server' else 1}"
    for ifname in os.listdir("/sys/class/net"):
        path = f"/sys/class/net/{ifname}/address"
        if open(path).read().strip() != REMOTE_MACS[side]:
            continue
        if addr not in sh(f"ip -o addr show dev {ifname}"):
            sh(f"ip addr add {addr}/24 dev {ifname}")
            sh(f"ip link set {ifname} up")
        return addr
    return None


class NbdExport:
    """nbdkit's memory plugin serving size_mb in a link's namespace, and
    the kernel nbd client attached to it (the swap-over-NBD peer)."""

    def __init__(self, link, size_mb, device="/dev/nbd0", port=10809):
        self.server = Process(link, ["nbdkit", "--foreground", "--exit-with-parent",
                                     "-i", link.addr, "-p", str(port),
                                     "memory", f"size={size_mb}M"],
                              port, f"nbdkit-{link.index}.log")
        self.path = device
        self.size_mb = size_mb
        sh(f"nbd-client {link.addr} {port} {device} -b 4096 -N ''")
        wait_for(lambda: int(open(f"/sys/block/{os.path.basename(device)}/size").read()),
                 timeout=30, what=f"{device} to connect")

    def remove(self):
        run(f"nbd-client -d {self.path}")
        self.server.stop()


NVMET = "/sys/kernel/config/nvmet"
_nvme_index = [0]


class NvmeTcpExport:
    """The kernel's own NVMe-oF target (nvmet-tcp) serving a RAM disk of
    size_mb (a memory-backed null_blk) in a link's namespace, and the
    kernel's nvme-tcp host attached to it: what a user with RAM to spare
    on another machine can swap on today with nothing but two kernels.
    The target runs in kernel workqueues (kworkers), not in a process."""

    def __init__(self, link, size_mb, port=4420):
        sh("modprobe -a nvmet nvmet-tcp nvme-tcp")
        _nvme_index[0] += 1
        self.nqn = f"nqn.2026-11.org.nswap2l:lab-{_nvme_index[0]}"
        self.ctrl, self.path = None, None
        self.disk = NullBlk(size_mb, prefix="n2lnv")
        self.subsys = f"{NVMET}/subsystems/{self.nqn}"
        self.port_dir = f"{NVMET}/ports/{_nvme_index[0]}"
        try:
            self._export(link, port)
            self._connect(link.addr, port)
        except Exception:
            self.remove()
            raise

    def _export(self, link, port):
        os.mkdir(self.subsys)
        _write(f"{self.subsys}/attr_allow_any_host", "1")
        os.mkdir(f"{self.subsys}/namespaces/1")
        _write(f"{self.subsys}/namespaces/1/device_path", self.disk.path)
        _write(f"{self.subsys}/namespaces/1/enable", "1")
        os.mkdir(self.port_dir)
        for attr, value in (("trtype", "tcp"), ("adrfam", "ipv4"),
                            ("traddr", link.addr), ("trsvcid", str(port))):
            _write(f"{self.port_dir}/addr_{attr}", value)
        # The port opens its listening socket in the network namespace of
        # whoever links a subsystem to it: the link's. nsenter, not ip
        # netns exec, which mounts a /sys without configfs.
        sh(f"nsenter --net=/run/netns/{link.ns} "
           f"ln -s {self.subsys} {self.port_dir}/subsystems/{self.nqn}")

    def _connect(self, addr, port):
        """What nvme connect does: the options to /dev/nvme-fabrics, which
        answers with the controller's instance."""
        fd = os.open("/dev/nvme-fabrics", os.O_RDWR)
        try:
            os.write(fd, f"transport=tcp,traddr={addr},trsvcid={port},"
                         f"nqn={self.nqn}".encode())
            answer = os.read(fd, 256).decode()
        finally:
            os.close(fd)
        fields = dict(kv.split("=", 1) for kv in answer.strip().split(","))
        self.ctrl = f"nvme{fields['instance']}"
        self.path = wait_for(self._namespace, timeout=30,
                             what=f"the namespace of {self.ctrl} to appear")

    def _namespace(self):
        """/dev/ of the block device of our subsystem's namespace: the
        multipath head if the host has native multipath (named after the
        subsystem, not the controller), else the controller's own."""
        for name in os.listdir("/sys/block"):
            if not name.startswith("nvme") or "c" in name[4:]:   # a path, hidden
                continue
            try:
                nqn = open(f"/sys/block/{name}/device/subsysnqn").read().strip()
            except OSError:
                continue
            if nqn == self.nqn and os.path.exists(f"/dev/{name}"):
                return f"/dev/{name}"
        return None

    def remove(self):
        if self.ctrl and os.path.exists(f"/sys/class/nvme/{self.ctrl}"):
            _write(f"/sys/class/nvme/{self.ctrl}/delete_controller", "1")
        self.ctrl = None
        link = f"{self.port_dir}/subsystems/{self.nqn}"
        if os.path.islink(link):
            os.unlink(link)
        if os.path.isdir(self.port_dir):
            os.rmdir(self.port_dir)
        ns = f"{self.subsys}/namespaces/1"
        if os.path.isdir(ns):
            _write(f"{ns}/enable", "0")
            os.rmdir(ns)
        if os.path.isdir(self.subsys):
            os.rmdir(self.subsys)
        self.disk.remove()


# ----------------------------------------------------------------------------
# nswap2l devices


class Device:
    """An nswap2l device: made with dmsetup create from table, or the
    existing one called name; removed by remove()."""

    def __init__(self, name, table=None):
        self.name = name
        self.path = f"/dev/mapper/{name}"
        if table:
            sh(f"dmsetup create {name} --table '{table}'")
        self.minor = os.minor(os.stat(self.path).st_rdev)
        self.sysfs = f"/sys/block/dm-{self.minor}/nswap2l"

    def status(self):
        return parse_status(dmioctl.status(self.name).strip())

    def table(self):
        return sh(f"dmsetup table {self.name}").strip()

    def message(self, *words, check=True):
        """The target's answer; with check=False, dmsetup's whole run
        (a test of a refused message reads its stderr)."""
        if check:
            try:
                return dmioctl.message(self.name, words)
            except dmioctl.DmError as e:
                raise CommandError(f"dmsetup message {self.name} 0 {' '.join(words)}: "
                                   f"{os.strerror(e.errno)}") from None
        return run(f"dmsetup message {self.name} 0 " + " ".join(words))

    def reload(self, table):
        sh(f"dmsetup reload {self.name} --table '{table}'")
        sh(f"dmsetup resume {self.name}")

    def sysfs_read(self, attr):
        return open(os.path.join(self.sysfs, attr)).read()

    def sysfs_write(self, attr, value):
        """Write a sysfs attribute; return 0 or the errno of the failure."""
        try:
            _write(os.path.join(self.sysfs, attr), value)
            return 0
        except OSError as e:
            return e.errno

    def servers_up(self, n):
        """The status once at least n servers are up, else None."""
        st = self.status()
        return st if sum(s["state"] == "up" for s in st["servers"]) >= n else None

    def remove(self):
        if not os.path.exists(self.path):
            return
        p = run(f"dmsetup remove --retry {self.name}")
        if p.returncode:
            raise CommandError(f"dmsetup remove {self.name}: {p.stderr[-300:]}\n"
                               f"{who_holds(self.path)}")


def who_holds(path):
    """What keeps a block device busy: processes that have it open, and
    every task in D state with its kernel stack."""
    lines = [run(f"fuser -v {path} 2>&1").stdout.strip()]
    for pid in os.listdir("/proc"):
        try:
            if not pid.isdigit() or " D " not in open(f"/proc/{pid}/stat").read():
                continue
            comm = open(f"/proc/{pid}/comm").read().strip()
            stack = open(f"/proc/{pid}/stack").read()
        except OSError:
            continue
        lines.append(f"task {pid} ({comm}) in D state:\n{stack}")
    return "\n".join(lines)
