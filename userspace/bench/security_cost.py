#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Guest side of userspace/bench/security-cost: what psk: and encrypt:
cost the client, in instructions per 4 KiB page, with the page servers
off the client's clock.

This guest runs with -icount shift=0,sleep=on (N2L_ICOUNT=sleep): while
its one vCPU runs, guest time counts its instructions, one a nanosecond;
while it idles, waiting for the servers, time follows the host's clock.
So the client's busy time over a run, its guest time less its idle and
iowait time (/proc/stat), counts the instructions it executed. The page
servers run in another guest (userspace/vm/server-guest.sh), so none of
theirs are counted; fio's own are, the same on every device.

Four Network-RAM-only devices of SIZE_MB each, on the other guest's two
nswapd: plain and encrypt: on one without keys, psk: and psk: +
encrypt: on one with the key. Every case moves a fixed amount: one pass
over the device, and one over its first SHORT_MB. A fio run also costs
what does not depend on its pages (its start, some 200 million
instructions here), so a case's figure is the difference of the two
runs' busy time over the difference of their pages: the client's
instructions per page. Reps interleave the devices, each rep in its own
shuffled order; the figure is the median.

The kernel's own ciphers, in this guest and counted the same way:
tcrypt's speed tests at 4096 bytes, whose cycles are guest time stamps,
so instructions (QEMU's TSC counts instructions under icount): gcm(aes)
with a 256-bit key, encrypt: seals and opens every page with it; and
poly1305, which with one ChaCha20 block is a psk: frame's tag.
"""
import argparse
import json
import os
import random
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "pylib"))
import accounting  # noqa: E402
import hotspots  # noqa: E402
import n2lbench  # noqa: E402
import n2lkeys  # noqa: E402
import n2llab  # noqa: E402
from nswap2l import table_line  # noqa: E402

OUT = os.environ.get("N2L_OUT", "/tmp")
SIZE_MB = 128
SHORT_MB = 8
# A profile samples a fixed time, not a pass: a smaller device will do.
PROFILE_MB = 32
PAGE = 4096
# tests/vm/remote-servers in the other guest: 7070 without keys, 7071
# with the key N2L_REMOTE_PSK as identity "bench".
PLAIN_SERVER, PSK_SERVER = "10.88.0.2:7070", "10.88.0.2:7071"
CASES = [("randread", "4k", 32), ("randwrite", "4k", 32),
         ("read", "1M", 4), ("write", "1M", 4)]
DEVICES = {
    "plain": ([], PLAIN_SERVER),
    "psk": (["psk:bench"], PSK_SERVER),
    "encrypt": (["encrypt:n2l:bench-pages"], PLAIN_SERVER),
    "psk+encrypt": (["psk:bench", "encrypt:n2l:bench-pages"], PSK_SERVER),
}


def idle_ns():
    """This guest's idle and iowait time so far."""
    ticks = accounting.proc_stat()
    return (ticks[3] + ticks[4]) * 1_000_000_000 // accounting.USER_HZ


def busy_instructions(fn):
    """fn()'s busy guest time in ns, that is its instructions, and its
    result."""
    t0, i0 = time.monotonic_ns(), idle_ns()
    res = fn()
    t1, i1 = time.monotonic_ns(), idle_ns()
    return (t1 - t0) - (i1 - i0), res


def pass_cost(path, rw, bs, qd, mb):
    """(busy instructions, pages) of one fio pass over path's first mb MiB."""
    ns, res = busy_instructions(lambda: n2lbench.fio_job(path, rw, bs, qd, mb, runtime=None))
    return ns, res["io_bytes"] // PAGE


def make_devices(names, size_mb):
    """The devices named, of size_mb each, every page written once (the
    reads' pages must be on the servers)."""
    psk = bytes.fromhex(os.environ["N2L_REMOTE_PSK"])
    n2lkeys.add_logon_key("nswap2l:bench", psk)
    n2lkeys.add_logon_key("n2l:bench-pages", os.urandom(32))
    devs = {}
    for name in names:
        features, server = DEVICES[name]
        devs[name] = n2llab.Device(f"cost-{name.replace('+', '-')}",
                                   table_line(size_mb * 2048, features=features,
                                              servers=[server]))
    for dev in devs.values():
        n2llab.wait_for(lambda: dev.servers_up(1), what="nswapd up", timeout=300)
        n2lbench.fio(dev.path, "write", "1M", 4, size_mb, runtime=None)
        assert dev.status()["netram"]["held"] == size_mb * 256, dev.status()
    return devs


def measure(devs, reps, seed, save):
    """Every case on every device, reps times; save(runs, reps done) after
    each rep, so that a run stopped early keeps what it measured."""
    rng = random.Random(seed)
    runs = []
    for rep in range(reps):
        for rw, bs, qd in CASES:
            order = list(devs)
            rng.shuffle(order)
            for name in order:
                (ns, pages), (ns0, pages0) = (
                    pass_cost(devs[name].path, rw, bs, qd, mb) for mb in (SIZE_MB, SHORT_MB))
                per_page = (ns - ns0) / (pages - pages0)
                runs.append({"case": f"{rw} {bs} qd{qd}", "device": name, "rep": rep,
                             "pages": pages, "busy_instructions": ns,
                             "short_pages": pages0, "short_busy_instructions": ns0,
                             "per_page": round(per_page)})
                print(f"{rw:9} {bs:3} qd{qd:<2} rep {rep} {name:12} "
                      f"{per_page:9.0f} instructions a page", flush=True)
        save(runs, rep + 1)


TCRYPT_ALGO = re.compile(r"testing speed of (?:async |sync )?(\S+) \((\S+)\)"
                         r"(?: (encryption|decryption))?")
TCRYPT_AEAD_TEST = re.compile(r"\((\d+) bit key, (\d+) byte blocks\)")
TCRYPT_HASH_TEST = re.compile(r"\(\s*(\d+) byte blocks,\s*(\d+) bytes per update")
TCRYPT_CYCLES = re.compile(r"1 operation in (\d+) cycles|(\d+) cycles/operation")


def tcrypt_results(lines):
    """{(algorithm, driver, direction, key bits, bytes): cycles} of tcrypt's
    speed tests with sec=0, whose figure may come on a line of its own
    after its test's. A hash's key bits are 0, and only one update of the
    whole block is kept."""
    out, algo, test = {}, None, None
    for line in lines:
        m = TCRYPT_ALGO.search(line)
        if m:
            algo, test = (m.group(1), m.group(2), m.group(3) or ""), None
            continue
        m = TCRYPT_AEAD_TEST.search(line)
        if m:
            test = (int(m.group(1)), int(m.group(2)))
        m = TCRYPT_HASH_TEST.search(line)
        if m:
            test = (0, int(m.group(1))) if m.group(1) == m.group(2) else None
        m = TCRYPT_CYCLES.search(line)
        if m and algo and test:
            out[algo + test] = int(m.group(1) or m.group(2))
            test = None
    return out


def tcrypt(mode):
    """dmesg lines of one tcrypt run (its module load fails by design)."""
    n2llab.run("dmesg -C")
    n2llab.run(f"modprobe tcrypt mode={mode} sec=0")
    return n2llab.sh("dmesg").splitlines()


def cipher_costs():
    """{what: instructions} of the kernel's ciphers on about a page: what
    encrypt: does to every page, and a psk: frame's tag less its one
    ChaCha20 block (poly1305 over 4128 bytes, tcrypt's size nearest a
    page frame's header and page)."""
    res = tcrypt_results(tcrypt(211) + tcrypt(321))
    out = {}
    for (algo, driver, direction, bits, size), cycles in sorted(res.items()):
        if algo == "gcm(aes)" and bits == 256 and size == 4096:
            out[f"gcm(aes) 256-bit {direction}, 4096 bytes ({driver})"] = cycles
        elif algo == "poly1305" and size == 4128:
            out[f"poly1305, 4128 bytes ({driver})"] = cycles
    return out


def summarize(runs):
    """{case: {device: [median, lowest, highest] instructions a page}}"""
    out = {}
    for r in runs:
        out.setdefault(r["case"], {}).setdefault(r["device"], []).append(r["per_page"])
    return {case: {d: [round(statistics.median(v)), min(v), max(v)] for d, v in devs.items()}
            for case, devs in out.items()}


def spread(fig):
    """"median (lowest–highest)", or the one figure of a single rep."""
    med, lo, hi = fig
    return f"{med}" if lo == hi else f"{med} ({lo}–{hi})"


def report(result):
    s, env = result["summary"], result["environment"]
    lines = ["# What psk: and encrypt: cost the client", "",
             f"{result['date']}, kernel {env['kernel']}, {env['mode']}.", "",
             f"{env['runs']}. Instructions the client guest executed a 4 KiB page: "
             "fio's own work a page is in it, the same on every device; what a run "
             "costs whatever its pages (fio's start) is not; the page servers ran in "
             "another guest and are not counted.", "",
             "Each cell: the median of the reps (lowest–highest); the differences "
             "are of the medians. The servers answer on the host's clock, so how "
             "packets and wakeups batch, and with it the client's instructions, "
             "varies from run to run.", "",
             "| case | plain | psk | encrypt | psk+encrypt | psk - plain | "
             "encrypt - plain |", "|---|---:|---:|---:|---:|---:|---:|"]
    for case, d in s.items():
        cells = " | ".join(spread(d[dev]) for dev in DEVICES)
        lines.append(f"| {case} | {cells} | {d['psk'][0] - d['plain'][0]} | "
                     f"{d['encrypt'][0] - d['plain'][0]} |")
    lines += ["", "The kernel's ciphers on one 4096-byte page, in this guest "
              "(tcrypt, sec=0; cycles are instructions here):", "",
              "| cipher | instructions |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in result["ciphers"].items()]
    return lines


def rewrite_report(path):
    """The summary and report of a run's JSON again, from its runs (the
    summary's form may be newer than the run)."""
    with open(path) as f:
        result = json.load(f)
    result["summary"] = summarize(result["runs"])
    n2lbench.write_results(os.path.dirname(os.path.abspath(path)),
                           os.path.basename(path)[:-len(".json")], result, report(result))
    return 0


# Where the vCPU waits for the servers: sleep=on samples it on the host's
# clock, so these are no instructions of anyone's.
IDLE = ("native_safe_halt", "default_idle", "acpi_idle", "cpu_idle", "do_idle")


def busy_symbols(rec):
    """hotspots.record()'s (requests, symbols) without the idle loop's."""
    ios, syms = rec
    return ios, {k: v for k, v in syms.items() if not any(i in k for i in IDLE)}


def profile(devs, runtime):
    """4 KiB QD32 reads and writes under perf on the plain and the encrypt:
    device: where encrypt:'s instructions a page beyond its cipher go."""
    n2llab.sh("echo 0 > /proc/sys/kernel/kptr_restrict")     # module symbols
    out = []
    for rw in ("randwrite", "randread"):
        recs = [busy_symbols(hotspots.record(devs[d].path, rw, 32, PROFILE_MB, runtime,
                                             f"/tmp/perf-{d}.data"))
                for d in ("plain", "encrypt")]
        rows, total = hotspots.compare(*recs, top=30)
        out.append({"case": f"{rw} 4k qd32", "instructions_per_request": total,
                    "symbols": [{"symbol": sym, "plain": round(a), "encrypt": round(b)}
                                for sym, a, b in rows]})
    return out


def profile_report(profs, ciphers):
    lines = ["# Where encrypt:'s instructions go", "",
             f"{n2lbench.now()}, perf cpu-clock samples of the client guest at "
             f"{hotspots.FREQ} a guest second (sleep=on: a busy sample is "
             f"{1e9 / hotspots.FREQ:.0f} instructions; the idle loop's samples, on the "
             "host's clock, left out), one fio job a device, the servers in another "
             "guest. What runs with interrupts off is counted where they come back on "
             "(`_raw_spin_unlock_irqrestore`).", "",
             "The kernel's ciphers on one page (tcrypt, instructions):", ""]
    lines += [f"- {k}: {v}" for k, v in ciphers.items()]
    return lines + hotspots.comparison_lines(profs, "plain", "encrypt", "##")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", type=int, metavar="SECONDS",
                    help="instead of the reps: plain and encrypt: under perf, "
                         "SECONDS a case (security-profile.md)")
    ap.add_argument("--report", metavar="JSON",
                    help="on the host: summarize a run's JSON and write its report again")
    a = ap.parse_args()
    if a.report:
        return rewrite_report(a.report)
    if os.environ.get("N2L_ICOUNT") != "sleep":
        sys.exit("security_cost: needs N2L_ICOUNT=sleep (busy time = instructions)")
    n2llab.load_modules()
    if not n2llab.remote_link("client"):
        sys.exit("security_cost: no link to the servers' guest")
    ciphers = cipher_costs()
    if a.profile:
        profs = profile(make_devices(("plain", "encrypt"), PROFILE_MB), a.profile)
        n2lbench.write_results(OUT, "security-profile", {"profiles": profs, "ciphers": ciphers},
                               profile_report(profs, ciphers))
        return 0
    devs = make_devices(DEVICES, SIZE_MB)

    def save(runs, done):
        result = {
            "benchmark": "security-cost",
            "date": n2lbench.now(),
            "environment": n2lbench.environment(
                runs=f"fio libaio direct, one pass over {SIZE_MB} MiB less one over "
                     f"{SHORT_MB} MiB a run, {done} of {a.reps} reps, interleaved in "
                     "shuffled order, median"),
            "summary": summarize(runs),
            "ciphers": ciphers,
            "runs": runs,
        }
        n2lbench.write_results(OUT, "security-cost", result, report(result))
    measure(devs, a.reps, a.seed, save)
    return 0


if __name__ == "__main__":
    sys.exit(main())
