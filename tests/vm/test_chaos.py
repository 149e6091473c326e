"""Chaos: a swapping workload that verifies every page, on a device with
Network RAM over three nswapd and Flash, while the servers are killed,
restarted, paused and shrunk, one at a time, on links that lose,
duplicate, reorder and delay packets.

With replicas:2 nothing may be lost: every page verifies, no slot is lost,
no read fails. With replicas:1 the device must report exactly the slots
whose only server died, and never return wrong data. After the device is
removed, no server holds a page of it."""
import os
import signal
import threading
import time

import n2l
from n2l import sh, table_line

MB = 1 << 20
NETEM = "delay 100us 50us distribution normal loss 0.5% duplicate 0.5% reorder 5% 50%"


def chaos_servers(lab, mb, n=3):
    """n nswapd, each a peer of the others, with a config file to shrink it."""
    servers = []
    for i in range(n):
        conf = f"/tmp/n2l/chaos-{i}.conf"
        with open(conf, "w") as f:
            f.write(f"min_mb = {mb}\nmax_mb = {mb}\n")
        peers = [f"--peer=10.77.{j + 1}.2:7070" for j in range(n) if j != i]
        srv = lab.server("nswapd", ["--config", conf, "--reserve-mb", "0",
                                    "--interval-ms", "200",
                                    "--request-timeout-s", "3", *peers])
        srv.link.shape(NETEM)
        srv.conf = conf
        servers.append(srv)
    return servers


def resize(srv, mb):
    with open(srv.conf, "w") as f:
        f.write(f"min_mb = {mb}\nmax_mb = {mb}\n")
    srv.signal(signal.SIGHUP)


def settled(dev, n):
    """The status once every server is up and nothing is underreplicated."""
    st = dev.status()
    ups = sum(s["state"] == "up" for s in st["servers"])
    return st if ups == n and not st["underreplicated"] else None


class Chaos(threading.Thread):
    """One server event at a time, each once the device has settled from
    the last: kill and restart, pause past dead_after_ms, shrink and grow."""

    def __init__(self, dev, servers, seconds):
        super().__init__(daemon=True)
        self.dev, self.servers, self.seconds = dev, servers, seconds
        self.events = []
        self.error = None

    def run(self):
        try:
            self._run()
        except Exception as e:  # reported by the test
            self.error = e

    def settle(self):
        last = []

        def check():
            st = self.dev.status()
            last[:] = [st]
            return settled(self.dev, len(self.servers))
        try:
            n2l.wait_for(check, timeout=240, what="servers up and every slot replicated")
        except AssertionError:
            st = last[0]
            raise AssertionError(
                f"not settled after {self.events}: underreplicated {st['underreplicated']}, "
                f"servers {[(x['name'], x['state'], x['held'], x['free']) for x in st['servers']]}, "
                f"flash held {st['flash']['held']}/{st['flash']['capacity']}\n"
                f"{self.dev.sysfs_read('servers')}") from None

    def _run(self):
        end = time.time() + self.seconds
        kinds = ("kill", "pause", "shrink")
        i = 0
        while time.time() < end:
            self.settle()
            srv, kind = self.servers[i % len(self.servers)], kinds[i % len(kinds)]
            self.events.append((kind, srv.name))
            if kind == "kill":
                srv.stop(signal.SIGKILL)
                time.sleep(2)
                srv.restart()
                srv.link.shape(NETEM)
            elif kind == "pause":
                srv.signal(signal.SIGSTOP)
                time.sleep(6)       # past netram_dead_after_ms: away
                srv.signal(signal.SIGCONT)
            else:
                resize(srv, 8)
                time.sleep(8)
                resize(srv, 64)
            i += 1


def report(line):
    """The run's figures: in the kernel log (so in the guest console) and
    in $N2L_OUT/chaos.txt, since pytest keeps a passing test's output."""
    n2l.kmsg(line)
    with open(os.path.join(os.environ.get("N2L_OUT", "/tmp"), "chaos.txt"), "a") as f:
        f.write(line + "\n")


def make_device(lab, name, replicas, servers, flash_mb=192):
    f = lab.flash(flash_mb)
    dev = lab.device(name, table_line(256 << 11, f.path,
                                      features=[f"replicas:{replicas}"],
                                      servers=[s.name for s in servers]))
    dev.message("set", "netram_timeout_ms", "2000")
    dev.message("set", "netram_dead_after_ms", "4000")
    n2l.wait_for(lambda: dev.servers_up(len(servers)), what="servers up")
    return dev


def test_chaos_with_two_replicas_loses_nothing(lab):
    from test_io import swap_workload
    servers = chaos_servers(lab, 64)
    dev = make_device(lab, "n2l-chaos", 2, servers)
    chaos = Chaos(dev, servers, seconds=200)
    result = {}
    worker = threading.Thread(target=lambda: result.update(
        run=swap_workload(dev, limit_mb=48, vm_mb=160, seconds=240)))
    worker.start()
    time.sleep(20)
    chaos.start()
    worker.join(timeout=900)
    chaos.join(timeout=300)
    assert not worker.is_alive(), "the workload hung"
    assert chaos.error is None, chaos.error
    p, _ = result["run"]
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    st = n2l.wait_for(lambda: settled(dev, 3), timeout=240, what="repairs done")
    swapped = st["netram"]["write_sectors"] * 512
    report(f"chaos: {len(chaos.events)} events {chaos.events}; "
           f"{swapped // MB} MiB to Network RAM, {st['rereplicated']} slots "
           f"re-replicated, lost {st['lost']}, failed reads {st['failed_reads']}, "
           f"workload: {out.strip().splitlines()[-1] if out.strip() else '-'}")
    assert {kind for kind, _ in chaos.events} == {"kill", "pause", "shrink"}
    assert swapped >= 128 * MB
    assert st["lost"] == 0 and st["failed_reads"] == 0
    assert st["rereplicated"] > 0
    sh(f"swapoff {dev.path}")
    dev.remove()
    for srv in servers:
        n2l.wait_for(lambda: n2l.server_pages_in_use(srv) == 0, timeout=60,
                     what=f"{srv.name} to hold nothing of the device")


def test_chaos_with_one_replica_reports_exactly_what_died(lab):
    """Pages on a server killed and restarted are lost, and only those: a
    scan finds no wrong block, and exactly `lost` blocks that fail."""
    servers = chaos_servers(lab, 48)
    dev = make_device(lab, "n2l-chaos1", 1, servers, flash_mb=64)
    n2l.write_pattern(dev.path, 0, 96 * MB, 61)
    held = {s["name"]: s["held"] for s in dev.status()["servers"]}
    victim = servers[1]
    victim.stop(signal.SIGKILL)
    time.sleep(2)
    victim.restart()
    st = n2l.wait_for(lambda: (lambda s: s["lost"] and s)(dev.status()),
                      timeout=120, what="restart noticed")
    assert st["lost"] == held[victim.name]
    good, wrong, eio = n2l.scan_pattern(dev.path, 0, 96 * MB, 61)
    report(f"chaos, one replica: the killed server held {held[victim.name]} slots; "
           f"lost {st['lost']}; scan: {good} good, {wrong} wrong, {eio} EIO")
    assert wrong == 0 and eio == st["lost"] and good == 96 * 256 - eio
    dev.remove()
    for srv in servers:
        n2l.wait_for(lambda: n2l.server_pages_in_use(srv) == 0, timeout=60,
                     what=f"{srv.name} to hold nothing of the device")
