#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Guest side of make bench-netram: comparisons of Network RAM devices,
each a baseline against a contender over the same netem-shaped links, in
one boot:

  nbd       swap over NBD (nbd + nbdkit's memory plugin) against a
            Network-RAM-only nswap2l device, both servers behind one link;
  nvme      the same against NVMe/TCP: the kernel's target (nvmet-tcp)
            exporting a RAM disk, the kernel's nvme-tcp host;
  replicas  replicas:1 against replicas:2, over the same two nswapd, each
            behind a link of its own; with --remote, the two nswapd of
            another guest (userspace/bench/netram --remote), on a CPU of
            their own, over a link between the guests (REMOTE_LINKS).

Every device is preconditioned with one sequential pass, so that reads
fetch stored pages; then every case runs A, B, A, B, ... The ratio is the
contender's median over the baseline's.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "pylib"))
import n2lbench  # noqa: E402
import n2lkeys  # noqa: E402
import n2llab  # noqa: E402
from nswap2l import table_line  # noqa: E402

OUT = os.environ.get("N2L_OUT", "/tmp")
SIZE_MB = 256
# (fio rw, block size, queue depth, what is compared, target ratio)
NBD_CASES = [
    ("randread", "4k", 1, "iops", 1.5),
    ("randread", "4k", 32, "iops", 1.5),
    ("randwrite", "4k", 1, "iops", 1.5),
    ("randwrite", "4k", 32, "iops", 1.5),
    ("read", "1M", 4, "mib_s", 0.9),
    ("write", "1M", 4, "mib_s", 0.9),
]
# Two copies: reads as fast, writes paying for the second copy.
REPLICA_CASES = [
    ("randread", "4k", 32, "iops", 0.95),
    ("read", "1M", 4, "mib_s", 0.95),
    ("randwrite", "4k", 32, "iops", 0.6),
    ("write", "1M", 4, "mib_s", 0.6),
]

# Authentication and encryption against plain pages: at most 10% off.
SECURITY_CASES = [
    ("randread", "4k", 32, "iops", 0.9),
    ("randwrite", "4k", 32, "iops", 0.9),
    ("read", "1M", 4, "mib_s", 0.9),
    ("write", "1M", 4, "mib_s", 0.9),
]


def case_name(rw, bs, qd):
    return f"{rw} {bs} qd{qd}"


def ping_rtt_us(addr):
    """The link's round trip as ping sees it, or None without ping: the
    figures of a long run must not be lost for want of a footnote."""
    try:
        out = subprocess.run(["ping", "-c", "20", "-i", "0.05", "-q", addr],
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        return None
    line = [ln for ln in out.splitlines() if "min/avg/max" in ln]
    return float(line[0].split("=")[1].split("/")[1]) * 1000 if line else None


class Comparison:
    """A baseline device against a contender, case by case."""

    def __init__(self, name, title, baseline, contender, cases, paths, notes):
        self.name, self.title = name, title
        self.baseline, self.contender = baseline, contender
        self.cases, self.paths, self.notes = cases, paths, notes

    def run(self, reps, runtime, runs):
        for rw, bs, qd, _, _ in self.cases:
            for rep in range(reps):
                for target in (self.baseline, self.contender):
                    iops, mibs = n2lbench.fio(self.paths[target], rw, bs, qd,
                                              SIZE_MB, runtime=runtime)
                    runs.append({"comparison": self.name,
                                 "case": case_name(rw, bs, qd), "target": target,
                                 "rep": rep, "iops": iops, "mib_s": mibs})
                    print(f"{self.name:9} {case_name(rw, bs, qd):17} rep {rep} "
                          f"{target:12} {iops:9.0f} IOPS {mibs:8.1f} MiB/s",
                          flush=True)

    def summary(self, runs):
        mine = [r for r in runs if r["comparison"] == self.name]
        out = []
        for rw, bs, qd, key, target in self.cases:
            case = case_name(rw, bs, qd)
            base = n2lbench.median_of(mine, case, self.baseline, key)
            cont = n2lbench.median_of(mine, case, self.contender, key)
            out.append({"comparison": self.name, "case": case, "metric": key,
                        "baseline": self.baseline, "contender": self.contender,
                        self.baseline: base, self.contender: cont,
                        "ratio": cont / base, "target_ratio": target,
                        "meets_target": None if target is None else cont / base >= target})
        return out


def precondition(dev_or_path, netram_slots=None):
    path = getattr(dev_or_path, "path", dev_or_path)
    n2lbench.fio(path, "write", "1M", 4, SIZE_MB, runtime=None)
    if netram_slots is not None:
        st = dev_or_path.status()
        assert st["netram"]["held"] == netram_slots, st


def netram_only_device(link, name, port):
    """A Network-RAM-only nswap2l device on one nswapd behind link,
    preconditioned."""
    srv = n2llab.nswapd(link, SIZE_MB + 64, port=port)
    dev = n2llab.Device(name, table_line(SIZE_MB * 2048, servers=[srv.name]))
    n2llab.wait_for(lambda: dev.servers_up(1), what="nswapd up")
    precondition(dev, SIZE_MB * 256)
    return dev


NSWAP2L_NOTE = f"nswap2l: a Network-RAM-only device, one nswapd donating {SIZE_MB + 64} MiB."


def nbd_comparison(link):
    dev = netram_only_device(link, "bench-net", 7070)
    nbd = n2llab.NbdExport(link, SIZE_MB)
    precondition(nbd)
    return Comparison(
        "nbd", "Network RAM (nswap2l + nswapd) against NBD (nbd + nbdkit memory)",
        "nbd", "nswap2l", NBD_CASES, {"nbd": nbd.path, "nswap2l": dev.path},
        "Both servers sit behind the same link. NBD: nbd-client -b 4096 (one "
        f"connection) to nbdkit's memory plugin ({n2llab.sh('nbdkit --version').strip()}); "
        + NSWAP2L_NOTE)


def nvme_comparison(link):
    """No target: where Network RAM stands against what two kernels do
    alone."""
    dev = netram_only_device(link, "bench-net-nvme", 7071)
    nvme = n2llab.NvmeTcpExport(link, SIZE_MB)
    precondition(nvme.path)
    return Comparison(
        "nvme", "Network RAM (nswap2l + nswapd) against NVMe/TCP (nvme-tcp + nvmet-tcp)",
        "nvme-tcp", "nswap2l", [c[:4] + (None,) for c in NBD_CASES],
        {"nvme-tcp": nvme.path, "nswap2l": dev.path},
        "Both servers sit behind the same link. NVMe/TCP: the kernel's target "
        "(nvmet-tcp) exporting a memory-backed null_blk of the region's size, the "
        "kernel's host (nvme-tcp) with its defaults (an I/O queue per CPU); the target "
        "runs in the guest's kworkers, as nswapd and nbdkit run in its processes. "
        + NSWAP2L_NOTE)


# Each server takes half of the one-copy device and all of the two-copy one.
REPLICA_SERVER_MB = SIZE_MB + SIZE_MB // 2 + 64
# The links between the guests (userspace/bench/netram --remote [--socket]).
REMOTE_LINKS = {
    "tap": "virtio NICs on taps bridged on the host, with checksum and "
           "segmentation offloads, MTU 1500, not shaped",
    "socket": "QEMU's socket netdev between the guests, no offloads, "
              "MTU 1500, not shaped",
}
# The page servers of tests/vm/remote-servers, in the other guest.
REMOTE_SERVERS = ["10.88.0.2:7070", "10.88.0.2:7071"]


def local_replica_servers(delay_us, rate_mbit):
    links = [n2llab.Link(i, delay_us=delay_us, rate_mbit=rate_mbit) for i in (2, 3)]
    names = [n2llab.nswapd(link, REPLICA_SERVER_MB).name for link in links]
    return names, ("Two nswapd, each behind a link of its own; both devices use both. ")


def remote_replica_servers():
    if not n2llab.remote_link("client"):
        raise SystemExit("netram: --remote needs the link to the servers' guest")
    return REMOTE_SERVERS, (
        "Two nswapd in another guest, on a vCPU of their own, reached over the "
        "link between the guests named above; timed on the wall clock, "
        "since two guests' instruction counts are not one clock. ")


def replica_comparison(delay_us, rate_mbit, remote=False):
    names, where = remote_replica_servers() if remote else \
        local_replica_servers(delay_us, rate_mbit)
    devs = {}
    for n in (1, 2):
        devs[f"replicas:{n}"] = n2llab.Device(
            f"bench-r{n}", table_line(SIZE_MB * 2048, features=[f"replicas:{n}"],
                                      servers=names))
    for dev in devs.values():
        n2llab.wait_for(lambda: dev.servers_up(2), what="nswapd up", timeout=300)
    precondition(devs["replicas:1"], SIZE_MB * 256)
    precondition(devs["replicas:2"], SIZE_MB * 256)
    assert not devs["replicas:2"].status()["underreplicated"]
    return Comparison(
        "replicas", "One copy against two (replicas:1, replicas:2)",
        "replicas:1", "replicas:2", REPLICA_CASES,
        {k: d.path for k, d in devs.items()},
        where + "With two copies a write completes when both servers have it; a "
        "read goes to one.")


def security_comparisons(delay_us, rate_mbit):
    """plain against psk: (authenticated, every frame tagged) and against
    encrypt: (every page AES-GCM at the client), each server on a link
    of its own with the same shape."""
    import n2lproto
    links = [n2llab.Link(i, delay_us=delay_us, rate_mbit=rate_mbit) for i in (4, 5, 6)]
    psk = os.urandom(32)
    n2lkeys.add_logon_key("nswap2l:bench", psk)
    n2lkeys.add_logon_key("n2l:bench-pages", os.urandom(32))
    n2lproto.write_psk_file("/tmp/bench.psk", {"bench": psk})
    mb = SIZE_MB + 64
    servers = [n2llab.nswapd(links[0], mb), n2llab.nswapd(links[1], mb, "--psk-file", "/tmp/bench.psk"),
               n2llab.nswapd(links[2], mb)]
    features = [[], ["psk:bench"], ["encrypt:n2l:bench-pages"]]
    devs = {}
    for name, srv, feat in zip(("plain", "psk", "encrypt"), servers, features):
        devs[name] = n2llab.Device(f"bench-{name}", table_line(SIZE_MB * 2048, features=feat,
                                                               servers=[srv.name]))
    for dev in devs.values():
        n2llab.wait_for(lambda: dev.servers_up(1), what="nswapd up")
        precondition(dev, SIZE_MB * 256)
    paths = {k: d.path for k, d in devs.items()}
    note = ("Three nswapd, each behind a link of its own with the same shape; one "
            "Network-RAM-only device on each. ")
    return [Comparison("psk", "Plain against authenticated (psk:, every frame tagged)",
                       "plain", "psk", SECURITY_CASES, paths,
                       note + "psk: HMAC-SHA256 handshake, ChaCha20-Poly1305 tag on every frame."),
            Comparison("encrypt", "Plain against encrypted pages (encrypt:, AES-256-GCM)",
                       "plain", "encrypt", SECURITY_CASES, paths,
                       note + "encrypt: every page encrypted and authenticated at the "
                       "client (gcm(aes), AES-NI in the guest).")]


def fmt_us(us):
    return "not measured" if us is None else f"{us:.0f} us"


def verdict(s):
    if s["target_ratio"] is None:
        return "none set"
    return f">= {s['target_ratio']}: {'met' if s['meets_target'] else 'MISSED'}"


def report(result):
    env = result["environment"]
    link = env["link"]
    where = (f"Links: veth + netem, {link['delay_us_each_way']} us each way, "
             f"{link['rate_mbit'] or 'unlimited'} Mbit/s; ping RTT "
             f"{fmt_us(link['ping_rtt_us'])} (guest time).") if "remote" not in link else \
        f"Servers in another guest: {link['remote']}; ping RTT {fmt_us(link['ping_rtt_us'])}."
    lines = ["# Network RAM devices compared", "",
             f"{result['date']}, kernel {env['kernel']}, {env['mode']}.", "",
             f"{where} {SIZE_MB} MiB regions, preconditioned. {env['runs']}."]
    for c in result["comparisons"]:
        rows = [s for s in result["summary"] if s["comparison"] == c["name"]]
        lines += ["", f"## {c['title']}", "", c["notes"], "",
                  f"| case | metric | {c['baseline']} | {c['contender']} | ratio | target |",
                  "|---|---|---:|---:|---:|---|"]
        for s in rows:
            unit = "IOPS" if s["metric"] == "iops" else "MiB/s"
            lines.append(f"| {s['case']} | {unit} | {s[c['baseline']]:.0f} | "
                         f"{s[c['contender']]:.0f} | {s['ratio']:.2f} | {verdict(s)} |")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runtime", type=int, default=3, help="guest seconds per run")
    ap.add_argument("--delay-us", type=int, default=50, help="netem delay, each way")
    ap.add_argument("--rate-mbit", type=int, default=1000, help="netem rate, each way")
    ap.add_argument("--only", help="run only these comparisons (nbd, nvme, replicas, security; "
                    "comma-separated)")
    ap.add_argument("--remote", choices=REMOTE_LINKS,
                    help="replicas only, with the servers in another guest over this link")
    a = ap.parse_args()
    if a.remote and a.only != "replicas":
        ap.error("--remote goes with --only replicas")

    n2llab.load_modules()
    link = n2llab.Link(1, delay_us=a.delay_us, rate_mbit=a.rate_mbit)
    makers = {"nbd": lambda: [nbd_comparison(link)],
              "nvme": lambda: [nvme_comparison(link)],
              "replicas": lambda: [replica_comparison(a.delay_us, a.rate_mbit, a.remote)],
              "security": lambda: security_comparisons(a.delay_us, a.rate_mbit)}
    only = a.only.split(",") if a.only else list(makers)
    comparisons = [c for name, make in makers.items() if name in only for c in make()]
    runs = []
    for c in comparisons:
        c.run(a.reps, a.runtime, runs)
    if a.remote:
        profile = {"remote": REMOTE_LINKS[a.remote],
                   "ping_rtt_us": ping_rtt_us(REMOTE_SERVERS[0].split(":")[0])}
    else:
        profile = link.describe()
        profile["ping_rtt_us"] = ping_rtt_us(link.addr)
    result = {
        "benchmark": "netram",
        "date": n2lbench.now(),
        "environment": n2lbench.environment(
            link=profile,
            runs=f"fio libaio direct, {a.runtime} s + 1 s ramp per run, {a.reps} "
                 "interleaved runs per device and case, median"),
        "comparisons": [{"name": c.name, "title": c.title, "baseline": c.baseline,
                         "contender": c.contender, "notes": c.notes}
                        for c in comparisons],
        "summary": [s for c in comparisons for s in c.summary(runs)],
        "runs": runs,
    }
    # A partial run must not overwrite the full one's results.
    name = "netram" if only == list(makers) else "netram-" + "-".join(only)
    if a.remote:
        name += "-remote" + ("" if a.remote == "tap" else "-" + a.remote)
    n2lbench.write_results(OUT, name, result, report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
