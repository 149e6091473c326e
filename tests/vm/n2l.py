"""Helpers for the in-VM tests: media, nswap2l devices, status parsing.

Modelled on dmtest-python's Target/Table/Dev helpers and lvm2's aux.sh:
media are real kernel block devices (memory-backed null_blk through
configfs), devices are made with dmsetup, and every helper cleans up after
itself so that one test's leftovers cannot make another pass or fail.
"""
import os
import re
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "userspace", "pylib"))
# The lab itself (media, links, servers, devices) is shared with the demo
# and the benchmarks.
from n2llab import (MODULE, TOOLS, CommandError, Device, Link, NullBlk,  # noqa: E402,F401
                    Process, insmod_tree_module, load_modules, remote_link, run, sh,
                    tracefs, udev_reload, wait_for)
from nswap2l import MEDIA, parse_status, table_line  # noqa: E402,F401

SLOT = 4096
EVIL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "evil_server.py")
SCRIPTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripted_server.py")


def flush(path):
    """A REQ_PREFLUSH (fsync of the block device), which commits the map
    of a device with a metadata device before it completes; blockdev
    --flushbufs sends none."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# One /dev/kmsg reader for the session: it reads on from where it stopped,
# where a new one would read the whole log again (56 ms a call, under
# emulation, once the log is full; tests call it several times each).
_kmsg = []     # its descriptor, once opened


def settle():
    """Wait until udev is done with the events it has queued: it probes a
    device-mapper device (blkid reads it) when the device is resumed.
    Settling is idempotent, so a settle that lost udevd is asked again:
    under load (eight guests on two cores) udevd once dropped its control
    connection ("Failed to wait for daemon to reply: Broken pipe")."""
    for _ in range(3):
        p = run("udevadm settle")
        if p.returncode == 0:
            return
        if "daemon" not in p.stderr:
            break
        time.sleep(1)
    raise CommandError(f"'udevadm settle' exited {p.returncode}: {p.stderr}")


UDEV_RULES = "/run/udev/rules.d"


def unwatch_dm_devices():
    """Stop udev from probing device-mapper devices after every close that
    follows a write (60-persistent-storage-dm.rules asks for it): those
    reads land in the counters the tests check, at a time no settle() can
    pin down, since udev queues the event only when inotify tells it."""
    os.makedirs(UDEV_RULES, exist_ok=True)
    with open(os.path.join(UDEV_RULES, "99-nswap2l-tests.rules"), "w") as f:
        f.write('SUBSYSTEM=="block", KERNEL=="dm-*", OPTIONS:="nowatch"\n')
    udev_reload()


def dmesg_new():
    """Kernel log lines since the last call, from the session's /dev/kmsg
    reader (the log itself stays whole for the harness)."""
    if not _kmsg:
        _kmsg.append(os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK))
    lines = []
    while True:
        try:
            rec = os.read(_kmsg[0], 8192).decode(errors="replace")
        except BlockingIOError:
            return lines
        except BrokenPipeError:  # overwritten before we read it: read on
            continue
        lines.append(rec.partition(";")[2].split("\n")[0])


BAD_KERNEL_LINES = re.compile(r"BUG:|WARNING:|Oops|general protection|"
                              r"KASAN|UBSAN|kernel BUG|list_add corruption|"
                              r"list_del corruption|INFO: task .* blocked")


def kernel_problems(lines):
    return [line for line in lines if BAD_KERNEL_LINES.search(line)]


def blocked_tasks(lines, limit=300):
    """The last sysrq-w dump in lines (the stacks of the tasks in D state),
    at most limit lines of it: a stall is explained there, and the guest's
    console, where it also is, is cut short in CI's record."""
    starts = [i for i, line in enumerate(lines) if "Show Blocked State" in line]
    return lines[starts[-1]:starts[-1] + limit] if starts else []


# ----------------------------------------------------------------------------
# Page servers and data patterns


def page_server(index, kind="nswapd", args=(), delay_us=0, rate_mbit=0, port=7070):
    """nswapd, the misbehaving test server ("evil") or the scripted one
    ("scripted", tests/vm/scripted_server.py), on link <index>."""
    link = Link(index, delay_us=delay_us, rate_mbit=rate_mbit)
    if kind == "nswapd":
        secure = any(a.startswith("--psk-file") for a in args)
        argv = [os.path.join(REPO, "build", "nswapd"), "--listen",
                f"{link.addr}:{port}", *([] if secure else ["--insecure"]), *args]
    else:
        argv = [os.environ.get("N2L_PYTHON", sys.executable),
                SCRIPTED if kind == "scripted" else EVIL,
                "--listen", f"{link.addr}:{port}", *args]
    try:
        return Process(link, argv, port, f"server-{index}.log")
    except Exception:
        link.remove()
        raise


def restart_server(srv):
    """The same server program, with the same arguments, on the same link
    and address: a new process, so a new epoch."""
    srv.restart()
    return srv


def server_line(dev, server):
    """A page server's (object or host:port) line in @dev's servers sysfs
    file: {"state", counter: value}."""
    from n2lmetrics import parse_servers
    return parse_servers(dev.sysfs_read("servers"))[getattr(server, "name", server)]


def server_held_pages(dev, server):
    """How many pages a page server (object or host:port) says it holds for
    @dev: the server_held= figure of its line in the servers sysfs file,
    which the server reports in every STATUS and reconciliation answer."""
    return server_line(dev, server)["server_held"]


def remove_dropping_pages(dev):
    """Remove @dev so that its servers keep nothing of it: a device with a
    metadata device leaves its pages for its next load, so it is first
    discarded whole, as a user done with it would (-f: without it
    blkdiscard first reads the device for signatures, and a slot lost at
    its start fails that read with EIO)."""
    if "metadata:" in dev.table():
        sh(f"blkdiscard -f {dev.path}")
    dev.remove()


def server_pages_in_use(server):
    """Pages a page server holds for anyone, whatever device or client:
    its capacity less its free pages, asked over a connection of our own
    (so it still works once every device is gone)."""
    from n2lproto import Client
    with Client.connect(getattr(server, "name", server), device=0x5eed) as c:
        info = c.status()
    return info.capacity - info.free


def write_pattern(path, offset, length, seed):
    """Fill [offset, offset+length) with a reproducible pattern, 1 MiB per
    write (see userspace/tools/n2l-pattern.c)."""
    sh(f"{TOOLS}/n2l-pattern write {path} {offset} {length} {seed}")


def check_pattern(path, offset, length, seed):
    """Return the number of 4 KiB blocks that do not hold the pattern."""
    p = run(f"{TOOLS}/n2l-pattern check {path} {offset} {length} {seed}")
    if p.returncode not in (0, 1):
        raise CommandError(p.stderr)
    return int(p.stdout.split()[0])


def scan_pattern(path, offset, length, seed):
    """(good, wrong, eio) blocks: see n2l-pattern scan."""
    p = run(f"{TOOLS}/n2l-pattern scan {path} {offset} {length} {seed}")
    if p.returncode not in (0, 1):
        raise CommandError(p.stderr)
    return tuple(int(x) for x in p.stdout.split())


def is_zero(path, offset, length):
    return run(f"{TOOLS}/n2l-pattern zero {path} {offset} {length} 0").returncode == 0


_GET_LOG = re.compile(r"GET id \d+ key (\d+) count (\d+) vers \d+")


def served_keys(server, since=0):
    """The keys (slots) of every GET an nswapd started with --log-level
    debug logged from byte since of its log on: read a range of the device
    (with nothing else going on) and this says which of its slots live on
    that server."""
    keys = set()
    for key, count in _GET_LOG.findall(server.read_log()[since:]):
        keys.update(range(int(key), int(key) + int(count)))
    return keys


# ----------------------------------------------------------------------------
# Commands that may hang in the kernel


class Spawned:
    """A shell command running in the background, whose output goes to a
    file, so that a command stuck in D state (which no signal ends) never
    holds up the test: finished() waits a bounded time and says whether it
    ended; the test goes on either way, and must make the kernel let go
    of the command (resume a server, say) before it ends."""

    _n = [0]

    def __init__(self, cmd):
        import subprocess
        Spawned._n[0] += 1
        self.cmd = cmd
        self.path = f"/tmp/n2l/spawned-{os.getpid()}-{Spawned._n[0]}.out"
        os.makedirs("/tmp/n2l", exist_ok=True)
        self.out_file = open(self.path, "w")
        self.proc = subprocess.Popen(cmd, shell=True, stdout=self.out_file,
                                     stderr=subprocess.STDOUT)

    def finished(self, timeout):
        """True once the command has ended, waiting at most timeout s."""
        import subprocess
        try:
            self.proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    @property
    def rc(self):
        return self.proc.poll()

    def output(self):
        self.out_file.flush()
        return open(self.path).read()

    def stacks(self):
        """The kernel stack of the command and its children (where it
        waits, if it hangs)."""
        lines = []
        for pid in [self.proc.pid] + _children(self.proc.pid):
            try:
                lines.append(f"task {pid} ({open(f'/proc/{pid}/comm').read().strip()}):\n"
                             + open(f"/proc/{pid}/stack").read())
            except OSError:
                pass
        return "\n".join(lines)


def _children(pid):
    try:
        kids = [int(x) for x in open(f"/proc/{pid}/task/{pid}/children").read().split()]
    except OSError:
        return []
    return kids + [g for k in kids for g in _children(k)]


def tasks_in(function):
    """[(pid, comm)] of the tasks whose kernel stack has function in it:
    a causal way to tell that a kernel operation is still blocked."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if function in open(f"/proc/{pid}/stack").read():
                found.append((int(pid), open(f"/proc/{pid}/comm").read().strip()))
        except OSError:
            continue
    return found


def wait_log(server, text, timeout=60, since=0):
    """Wait until the server's log (from byte since on) shows text."""
    return wait_for(lambda: text in server.read_log()[since:], timeout=timeout,
                    what=f"{text!r} in the log of {server.name}")


def wait_out_starvation(dev):
    """A server down for netram_dead_after_ms (30 s) is away, and reads
    that need it fail (nswap2l.rst, "Outages"). A guest the host starves
    (CI runs seven on two cores) can time out its own servers, and took
    41 s to get one back once: tests that are not about outages give them
    3 minutes, so that only the event under test can fail a read. A
    request waits 30 s, not 5, before its connection is dropped: in one CI
    run a starved client timed out both remote servers every few seconds,
    and each reconnection's reconciliation was cut short in turn
    (ECONNRESET), so that swapping made no progress for two minutes."""
    dev.message("set", "netram_dead_after_ms", "180000")
    dev.message("set", "netram_timeout_ms", "30000")


KMSG_CHUNK = 900     # the kernel refuses a longer record (EINVAL)


def kmsg(text):
    """A line in the kernel log (and so on the guest console), to tell
    which step of a test a kernel problem came in; a long one in several
    records, each written on its own."""
    with open("/dev/kmsg", "w") as f:
        for i in range(0, max(len(text), 1), KMSG_CHUNK):
            f.write(f"n2l-test: {text[i:i + KMSG_CHUNK]}\n")
            f.flush()


def protected(dev, n, timeout=180):
    """Wait until n servers are up and no slot lacks a copy; returns the
    status then and the seconds it took. The error says what was missing."""
    last = []

    def check():
        st = dev.status()
        last[:] = [st]
        ups = sum(s["state"] == "up" for s in st["servers"])
        return st if ups == n and not st["underreplicated"] else None
    t0 = time.monotonic()
    try:
        st = wait_for(check, timeout=timeout, interval=0.5,
                      what="servers up and every slot replicated")
    except AssertionError:
        st = last[0]
        raise AssertionError(
            f"{timeout} s on: underreplicated {st['underreplicated']}, servers "
            f"{[(s['name'], s['state'], s['held'], s['free']) for s in st['servers']]}, "
            f"flash held {st['flash']['held']}/{st['flash']['capacity']}") from None
    seconds = time.monotonic() - t0
    kmsg(f"every slot protected again after {seconds:.1f} s")
    return st, seconds


def audit_copies(dev, servers, timeout=180):
    """Every copy the slot map names is on its server: each server's
    connection is reset in its namespace (ss -K), so that the client
    reconciles it, listing every copy it expects there; returns the
    copies the servers said they no longer had ({name: count}), which
    the client then drops from their slots (and repairs)."""
    missing = {}
    for srv in servers:
        before = reset_connection(dev, srv)
        after = reconciled_since(dev, srv, before, timeout)
        missing[srv.name] = after["missing"] - before["missing"]
    return missing


def reset_connection(dev, srv):
    """Reset the server's connections in its namespace (ss -K): the
    client reconnects and reconciles. Its server_line() from before."""
    before = server_line(dev, srv)
    sh(f"ip netns exec {srv.link.ns} ss -K sport = :{srv.name.rsplit(':', 1)[1]}")
    return before


def reconciled_since(dev, srv, before, timeout=180):
    """The server's server_line() once it reconciled again since before
    (a server_line()) and is up."""
    def reconciled_again():
        now = server_line(dev, srv)
        return now if now["reconciled"] > before["reconciled"] and \
            now["state"] == "up" else None
    return wait_for(reconciled_again, timeout=timeout, what=f"{srv.name} reconciled again")


def fio_verify_cmd(path, rw, bs, size, iodepth, extra=""):
    """The fio command line of test_io.fio_verify: write, then verify
    every block (crc32c), failing at the first bad one."""
    return (f"fio --name=verify --filename={path} --rw={rw} --bs={bs} --size={size} "
            f"--direct=1 --ioengine=libaio --iodepth={iodepth} --verify=crc32c "
            f"--verify_fatal=1 --do_verify=1 --randrepeat=0 --verify_state_save=0 {extra}")
