"""Fixtures for the in-VM tests.

Every test fails if the kernel log it caused shows BUG:, WARNING:, Oops
(or their relatives); the log is printed with the failure. The guest runs
with panic_on_warn, so most such problems end the VM instead, and the
harness prints the console.
"""
import os
import shutil

import pytest

import n2l


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "one_kernel: exercises no kernel interface that differs between "
        "kernels (parsers of table lines and frames): tests/vm/run runs it on "
        "the default kernel only (N2L_ONE_KERNEL_DONE=1 in the other guests)")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("N2L_ONE_KERNEL_DONE") != "1":
        return
    done = [i for i in items if i.get_closest_marker("one_kernel")]
    if done:
        config.hook.pytest_deselected(items=done)
        items[:] = [i for i in items if not i.get_closest_marker("one_kernel")]


@pytest.fixture(scope="session", autouse=True)
def kernel_modules():
    assert os.path.exists(n2l.MODULE), "build the module first (make module)"
    n2l.load_modules()
    n2l.unwatch_dm_devices()
    n2l.dmesg_new()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """The call's report on the item, for kernel_log_clean to see."""
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        item.call_failed = rep.failed


# Setup, call and teardown seconds of the tests running (pytest_runtest_logreport).
_SECONDS = {}
# The guest's busy CPU seconds when each running test began.
_BUSY_AT_START = {}


def busy_seconds():
    """CPU seconds the guest's CPUs were not idle since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        ticks = [int(t) for t in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def pytest_runtest_logstart(nodeid, location):
    _BUSY_AT_START[nodeid] = busy_seconds()


def pytest_runtest_logreport(report):
    """Each test's seconds, appended as it ends to $N2L_OUT/durations.txt,
    and the CPU seconds the guest was busy meanwhile to cpu.txt: CI's
    time is budgeted from these (the host's cores are busy throughout,
    so a test costs CI its CPU more than its seconds), and a guest
    killed at its timeout leaves no junit.xml."""
    out = os.environ.get("N2L_OUT")
    if not out:
        return
    _SECONDS[report.nodeid] = _SECONDS.get(report.nodeid, 0.0) + report.duration
    if report.when == "teardown":
        with open(os.path.join(out, "durations.txt"), "a") as f:
            f.write(f"{_SECONDS.pop(report.nodeid):8.1f} {report.nodeid}\n")
        now = busy_seconds()
        busy = now - _BUSY_AT_START.pop(report.nodeid, now)
        with open(os.path.join(out, "cpu.txt"), "a") as f:
            f.write(f"{busy:8.1f} {report.nodeid}\n")


@pytest.fixture(autouse=True)
def kernel_log_clean(request):
    """Fail the test on any kernel problem it caused; show its log. A test
    that failed shows what the device and the servers' client said during
    it (the guest's whole dmesg is cut short when many tests ran)."""
    n2l.dmesg_new()
    yield
    lines = n2l.dmesg_new()
    bad = n2l.kernel_problems(lines)
    if bad:
        pytest.fail("kernel problems during the test:\n" + "\n".join(lines[-200:]),
                    pytrace=False)
    if getattr(request.node, "call_failed", False):
        ours = [x for x in lines if "nswap2l" in x]
        print(f"---- the test's nswap2l kernel messages (last 100 of {len(ours)}) ----")
        print("\n".join(ours[-100:]))
        blocked = n2l.blocked_tasks(lines)
        if blocked:
            print(f"---- the tasks blocked when the test dumped them ({len(blocked)} lines) ----")
            print("\n".join(blocked))


def with_metadata(table, meta):
    """An nswap2l table line with metadata:<meta> among its features."""
    w = table.split()
    if not meta or w[2] != "nswap2l" or "metadata:" in table:
        return table
    w[6:7] = [str(int(w[6]) + 1), f"metadata:{meta}"]
    return " ".join(w)


class Lab:
    """Makes media and devices for one test and removes them after it."""

    def __init__(self):
        self.devices = []
        self.media = []
        self.servers = []
        self.commands = []
        self.cleanups = []      # run after the devices, before the media

    def nullb(self, size_mb, **kw):
        m = n2l.NullBlk(size_mb, **kw)
        self.media.append(m)
        return m

    def flash(self, size_mb, **kw):
        return self.nullb(size_mb, discard=True, **kw)

    def disk(self, size_mb, **kw):
        return self.nullb(size_mb, **kw)

    def server(self, kind="nswapd", args=(), **kw):
        """A page server on a link of its own (see n2l.page_server)."""
        srv = n2l.page_server(len(self.servers) + 1, kind, args, **kw)
        self.servers.append(srv)
        return srv

    def restart(self, srv):
        """The same server again on its link and address, as a new process
        (srv must have been killed); the new one is cleaned up too."""
        new = n2l.restart_server(srv)
        self.servers.append(new)
        return new

    def spawn(self, cmd):
        """A command in the background (n2l.Spawned), killed at the end of
        the test if it still runs."""
        sp = n2l.Spawned(cmd)
        self.commands.append(sp)
        return sp

    def device(self, name, table):
        meta = self.metadata_for(table)
        d = n2l.Device(name, with_metadata(table, meta))
        if meta:
            # a reload must name the same metadata device
            load = d.reload
            d.reload = lambda t: load(with_metadata(t, meta))
        self.devices.append(d)
        return d

    def metadata_for(self, table):
        """With N2L_TEST_METADATA=1, an nswap2l table without a metadata
        device gets one of its own (a fresh null_blk), so that the suite
        runs with the slot map kept as well as without."""
        w = table.split()
        if (os.environ.get("N2L_TEST_METADATA") != "1" or len(w) < 7 or
                w[2] != "nswap2l" or "metadata:" in table):
            return None
        gib = int(w[1]) / (2 << 20)
        return self.nullb(4 + int(8 * gib)).path    # about 4 MiB a GiB of slots

    def cleanup(self):
        try:
            # A paused server would hold up commands and device removal.
            for srv in self.servers:
                if srv.proc.poll() is None:
                    srv.signal(18)      # SIGCONT
            for sp in self.commands:
                if sp.rc is None:
                    sp.proc.kill()
                    sp.finished(60)
            swaps = open("/proc/swaps").read().split()
            for d in reversed(self.devices):
                if os.path.exists(d.path) and os.path.realpath(d.path) in swaps:
                    n2l.run(f"swapoff {d.path}")
                d.remove()
            for undo in reversed(self.cleanups):
                undo()
            for m in reversed(self.media):
                m.remove()
        finally:
            for srv in self.servers:
                srv.stop(9, timeout=10)
                srv.link.remove()
            # The servers' logs, for a look after the guest is gone.
            out = os.environ.get("N2L_OUT")
            if out:
                os.makedirs(os.path.join(out, "server-logs"), exist_ok=True)
                for srv in self.servers:
                    if os.path.exists(srv.log):
                        shutil.copy(srv.log, os.path.join(out, "server-logs"))


@pytest.fixture
def lab():
    lab = Lab()
    yield lab
    lab.cleanup()
