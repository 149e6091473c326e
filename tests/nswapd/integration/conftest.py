# SPDX-License-Identifier: GPL-2.0-only
"""Real nswapd processes on loopback, driven with userspace/pylib/n2lproto.

NSWAPD names the binary (default build/nswapd-asan, the sanitizer build, so
that a memory error fails the test that caused it). Every server listens on
port 0 and the test reads the real port from its "listening on" log line.
Servers run --insecure unless the test gives --psk-file (see psk_file()).
"""
import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "userspace", "pylib"))

import n2lproto as p  # noqa: E402

NSWAPD = os.environ.get("NSWAPD", os.path.join(ROOT, "build", "nswapd-asan"))
SANITIZER = re.compile(r"ERROR: AddressSanitizer|runtime error:|LeakSanitizer")


def wait_for(cond, timeout=15.0, what="condition", interval=0.02):
    """Poll cond() until it returns something true; fail after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def page(seed, i=0):
    """A recognisable 4 KiB page."""
    head = f"page {seed} {i} ".encode()
    return (head * (p.PAGE_SIZE // len(head) + 1))[:p.PAGE_SIZE]


class Server:
    def __init__(self, tmp, args=(), config=None, meminfo_kb=64 << 20, listen="127.0.0.1:0",
                 name="nswapd"):
        self.tmp = tmp
        self.name = name
        self.meminfo = os.path.join(tmp, f"{name}.meminfo")
        self.set_meminfo(meminfo_kb)
        self.config = None
        if config is not None:
            self.config = os.path.join(tmp, f"{name}.conf")
            self.write_config(config)
        self.logpath = os.path.join(tmp, f"{name}.log")
        cmd = [NSWAPD, "--listen", listen, "--meminfo", self.meminfo,
               "--interval-ms", "50", "--log-level", "debug"]
        if self.config:
            cmd += ["--config", self.config]
        args = [str(a) for a in args]
        if "--psk-file" not in args and "--insecure" not in args and \
                not (config and "psk_file" in config):
            args.append("--insecure")
        cmd += args
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
                   UBSAN_OPTIONS="print_stacktrace=1")
        self.logf = open(self.logpath, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=self.logf, env=env)
        try:
            m = wait_for(lambda: self._listening() or self._died(), what=f"{name} to listen")
        except AssertionError as e:     # how far it got says why
            self.proc.kill()
            raise AssertionError(f"{e}; its log:\n{self.log()}") from None
        if m is True:
            raise AssertionError(f"{name} exited at start:\n{self.log()}")
        self.addr = m

    def _listening(self):
        m = re.search(r"listening on (\S+)", self.log())
        return m.group(1) if m else None

    def _died(self):
        return self.proc.poll() is not None

    def set_meminfo(self, kb):
        tmp = self.meminfo + ".new"
        with open(tmp, "w") as f:
            f.write(f"MemTotal:       {kb * 2} kB\nMemFree:        {kb} kB\n"
                    f"MemAvailable:   {kb} kB\n")
        os.replace(tmp, self.meminfo)

    def write_config(self, text):
        tmp = self.config + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.config)

    def reload(self, text):
        """A new configuration, read on SIGHUP (as an admin changes it)."""
        self.write_config(text)
        self.signal(signal.SIGHUP)

    def log(self):
        with open(self.logpath) as f:
            return f.read()

    def wait_log(self, pattern, timeout=15.0):
        return wait_for(lambda: re.search(pattern, self.log()), timeout,
                        f"log line /{pattern}/ from {self.name}")

    def client(self, device=1, **kw):
        return p.Client.connect(self.addr, device, **kw)

    def status(self, device, **kw):
        with self.client(device, **kw) as c:
            return c.status()

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait_exit(self, timeout=30.0):
        return wait_for(lambda: self.proc.poll() is not None or None, timeout,
                        f"{self.name} to exit") and self.proc.returncode

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(1)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGTERM)   # the second exits at once
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        self.logf.close()


def free_port():
    """A loopback port free now, for a server whose address must be known
    before it starts (a key bound to it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def key_of(name):
    """A test key for an identity: 32 bytes that look random (nswapd
    refuses keys with a pattern), the same in every run."""
    return hashlib.sha256(b"nswapd test key " + name.encode()).digest()


def psk_file(tmp_path, names, peers=(), name="psk"):
    """A psk file (mode 600) with key_of() keys for names; peers are
    marked "peer". Returns its path."""
    path = os.path.join(str(tmp_path), name)
    table = {n: (key_of(n), n in peers) for n in list(names) + [x for x in peers if x not in names]}
    p.write_psk_file(path, table)
    return path


def auth(name):
    """Client.connect() keywords to authenticate as name."""
    return dict(identity=name, psk=key_of(name))


@pytest.fixture
def servers(tmp_path):
    """servers(args..., **kw) starts one; all are stopped and checked for
    sanitizer reports at the end of the test."""
    started = []

    def start(*args, **kw):
        kw.setdefault("name", f"nswapd{len(started)}")
        s = Server(str(tmp_path), args, **kw)
        started.append(s)
        return s

    yield start
    bad = []
    for s in started:
        s.stop()
        if SANITIZER.search(s.log()):
            bad.append(f"{s.name}:\n{s.log()[-6000:]}")
    assert not bad, "sanitizer report:\n" + "\n".join(bad)
