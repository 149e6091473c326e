"""The Network RAM client at its min watermark (issue 24, items 2 and 3).

The pressure is the module parameter test_nomem (nswap-net/kclient/nomem.c),
which puts the client's own allocations where a machine at its min
watermark, with nothing left to reclaim, puts them: one that may fail
fails at once; one the page allocator would retry forever (GFP_NOIO
without __GFP_NORETRY) waits until the parameter is cleared; a mempool
keeps its reserve. Debian's kernels have no failslab or fail_page_alloc
(CONFIG_FAULT_INJECTION is off), and memory really squeezed to the
watermark under TCG is neither quick nor repeatable; test_remote.py's
squeeze does that, with swap, on a second machine.

Each test runs with hung_task_panic on (a task blocked for 60 s ends the
guest) and under a watchdog: what must happen under pressure must happen
within a bound, or the test dumps the blocked tasks (sysrq w, which the
harness prints), gives the memory back, so that the guest lives on to
clean up, and fails with "hang"."""
import contextlib
import os
import signal

import pytest

import n2l
from n2l import table_line
from n2lkeys import add_logon_key
from test_netram import DELAY_US, nswapd, server, servers_up, shrink

MB = 1 << 20
NOMEM = "/sys/module/nswap2l/parameters/test_nomem"


def write_knob(path, value):
    """Write a sysctl or parameter; its old value."""
    old = open(path).read().strip()
    with open(path, "w") as f:
        f.write(f"{value}\n")
    return old


@contextlib.contextmanager
def min_watermark():
    """The client at its min watermark, and hung_task_panic on."""
    saved = [(p, write_knob(p, v)) for p, v in (
        ("/proc/sys/kernel/hung_task_timeout_secs", 60),
        ("/proc/sys/kernel/hung_task_panic", 1))]
    write_knob(NOMEM, "Y")
    try:
        yield
    finally:
        write_knob(NOMEM, "N")
        for p, v in saved:
            write_knob(p, v)


def no_hang(what, done, timeout):
    """done()'s first true value within timeout s; else a hang: the blocked
    tasks go to the kernel log, the memory comes back (what hung then ends,
    and the test can clean up), and the test fails."""
    try:
        return n2l.wait_for(done, timeout=timeout, interval=0.5, what=what)
    except AssertionError:
        n2l.run("echo w > /proc/sysrq-trigger")
        write_knob(NOMEM, "N")
        pytest.fail(f"hang at the min watermark: {what} not done in {timeout} s "
                    f"(the blocked tasks are below)", pytrace=False)


def netram_device(lab, name, sectors, servers, flash="-", **kw):
    dev = lab.device(name, table_line(sectors, flash, servers=[s.name for s in servers],
                                      **kw))
    n2l.wait_for(lambda: servers_up(dev, len(servers)), what="servers up")
    return dev


def puts(dev, srv):
    """PUT requests the client has sent to srv."""
    return n2l.server_line(dev, srv)["puts"]


def reset_with_writes_in_flight(lab, a, b, encrypt):
    """One device over a and b; a stops, takes writes and is killed."""
    features = ["encrypt:n2l:pressure"] if encrypt else []
    name = "n2l-reset-" + ("encrypt" if encrypt else "plain")
    # The device is larger than b: a has the most room for it.
    dev = netram_device(lab, name, 32 << 11, [a, b], features=features)
    # Stopped, a stays up (and takes writes) until it resets.
    dev.message("set", "netram_timeout_ms", "30000")
    # More writes in flight than the pools hold: 16 seals, or 256 pages of
    # ciphertext (one 1 MiB write).
    rw, bs, size, depth, in_flight = ("write", "1M", "2M", 2, 1) if encrypt else \
                                     ("randwrite", "4k", "512K", 32, 16)
    before = puts(dev, a)
    a.signal(signal.SIGSTOP)
    with min_watermark():
        fio = lab.spawn(n2l.fio_verify_cmd(dev.path, rw, bs, size, depth))
        no_hang(f"{in_flight} PUTs in flight to the stopped server",
                lambda: puts(dev, a) >= before + in_flight or fio.rc is not None, 30)
        assert fio.rc is None, f"the writes did not wait for the stopped server: {fio.output()}"
        a.stop(signal.SIGKILL)
        no_hang("fio's writes and their verification", lambda: fio.rc is not None, 45)
    assert fio.rc == 0, fio.output()
    st = dev.status()
    print(f"{name}: {st['slow_writes']} slow writes")
    assert st["slow_writes"] >= in_flight, st
    assert st["lost"] == st["failed_reads"] == 0, st
    dev.remove()


def test_server_reset_with_writes_in_flight_at_min_watermark(lab):
    """Item 2. The server every write goes to (it has the most room) stops
    with writes in flight and resets its connection (it is killed): each
    of those writes fails there and goes to the slow path, holding its
    seal (encrypted: its ciphertext too, 256 pages of the pool's 256 for
    one 1 MiB write), and wants another server in its place (as every
    write does whose replica drops, with replicas:2). The slow path sealed
    each write again for that server, from the pools the waiting writes
    held: at the min watermark it waited for them forever. Must hold,
    plain and with encrypt: every write lands and reads back (fio verifies
    every block), nothing is lost, nothing hangs."""
    add_logon_key("n2l:pressure", os.urandom(32))
    a, b = nswapd(lab, 8), nswapd(lab, 4)
    reset_with_writes_in_flight(lab, a, b, encrypt=False)
    a.restart()
    reset_with_writes_in_flight(lab, a, b, encrypt=True)


def test_servers_shrinking_together_at_min_watermark(lab):
    """Item 3. Two servers shrink at the same moment while the client is at
    its min watermark; they give pages up to a third server, their peer,
    while it has room (MOVED), and hand the rest back (RETURN). The
    receive thread read a RETURN into memory it allocated with GFP_NOIO,
    and the event work read a MOVED's pages back into a 1 MiB buffer it
    allocated: each waited for memory, the receive thread with every reply
    of its server behind it. Must hold: every page given up lands (on the
    peer or on Flash) and reads back, nothing is lost, nothing hangs."""
    c = nswapd(lab, 1)
    confs, shrinking = [], []
    for name in ("a", "b"):
        conf = f"/tmp/n2l/pressure-{name}.conf"
        with open(conf, "w") as f:
            f.write("min_mb = 8\nmax_mb = 8\n")
        confs.append(conf)
        shrinking.append(lab.server("nswapd", ["--config", conf, "--reserve-mb", "0",
                                               "--interval-ms", "200", "--peer", c.name],
                                    delay_us=DELAY_US))
    f = lab.flash(16)
    dev = netram_device(lab, "n2l-give-up", 12 << 11, shrinking, f.path)
    n2l.write_pattern(dev.path, 0, 12 * MB, 41)
    st = dev.status()
    assert st["netram"]["held"] == 3072 and min(s["held"] for s in st["servers"]) > 1024, st
    # The peer joins once the data is in: it takes only what is moved.
    dev.message("add_server", c.name)
    n2l.wait_for(lambda: servers_up(dev, 3), what="the peer up")
    with min_watermark():
        for srv, conf in zip(shrinking, confs):
            shrink(srv, conf, 4)
        no_hang("the pages given up landing elsewhere",
                lambda: all(server(dev, s.name)["held"] <= 1024 for s in shrinking), 45)
        bad = n2l.check_pattern(dev.path, 0, 12 * MB, 41)
    st = dev.status()
    print(f"moved {st['moved_pages']}, handed back {st['returned_pages']}, "
          f"flash {st['flash']['held']}, servers {st['servers']}")
    assert bad == 0
    assert st["mapped"] == 3072 and st["lost"] == st["failed_reads"] == 0, st
    assert st["moved_pages"] + st["returned_pages"] >= 3072 - 2048, st
