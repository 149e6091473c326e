"""Fixtures for the in-VM tests.

Every test fails if the kernel log it caused shows BUG:, WARNING:, Oops
(or their relatives); the log is printed with the failure. The guest runs
with panic_on_warn, so most such problems end the VM instead, and the
harness prints the console.
"""
import os

import pytest

import n2l


@pytest.fixture(scope="session", autouse=True)
def kernel_modules():
    assert os.path.exists(n2l.MODULE), "build the module first (make module)"
    n2l.load_modules()
    n2l.unwatch_dm_devices()
    n2l.dmesg_new()
    yield


@pytest.fixture(autouse=True)
def kernel_log_clean(request):
    """Fail the test on any kernel problem it caused; show its log."""
    n2l.dmesg_new()
    yield
    lines = n2l.dmesg_new()
    bad = n2l.kernel_problems(lines)
    if bad:
        pytest.fail("kernel problems during the test:\n" + "\n".join(lines[-200:]),
                    pytrace=False)


class Lab:
    """Makes media and devices for one test and removes them after it."""

    def __init__(self):
        self.devices = []
        self.media = []
        self.servers = []

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

    def device(self, name, table):
        d = n2l.Device(name, table)
        self.devices.append(d)
        return d

    def cleanup(self):
        for d in reversed(self.devices):
            n2l.run(f"swapoff {d.path}")
            d.remove()
        for m in reversed(self.media):
            m.remove()
        for srv in self.servers:
            srv.stop(9, timeout=10)
            srv.link.remove()


@pytest.fixture
def lab():
    lab = Lab()
    yield lab
    lab.cleanup()
