#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""make bench-crypto: what Network RAM's security costs a 4 KiB page in
CPU time on this machine, natively (no VM), with the algorithms the
product uses, through OpenSSL (build/tools/n2l-cryptobench, from
userspace/bench/crypto/n2l-cryptobench.c):

  psk:      a ChaCha20-Poly1305 tag on every frame, header and payload as
            associated data (nswapd tags and verifies with OpenSSL, the
            kernel client with the kernel's ChaCha20 and Poly1305 library);
  encrypt:  every page AES-256-GCM encrypted and authenticated (the kernel
            client, with the kernel's gcm(aes): the figure here is
            OpenSSL's on the same CPU, an estimate of it);
  and for reference ChaCha20-Poly1305 encrypting the page.

Runs the tool's --self-test first (known-answer vectors, tampering
refused) and refuses to publish figures if it fails. Builds nothing:
make bench-crypto builds the tool. Writes crypto-native.json (the tool's
output, every batch) and crypto-native.md (the table) to results/netram/.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "userspace", "pylib"))
import n2lbench  # noqa: E402

TOOL = os.path.join(ROOT, "build", "tools", "n2l-cryptobench")
OUT = os.path.join(ROOT, "results", "netram")
NAME = "crypto-native"
COMMAND = "make bench-crypto"
# what each of the product's modes pays a page, by the tool's operations
MODES = [
    ("psk:", "the sender tags the frame, the receiver verifies it", "psk-tag", "psk-verify"),
    ("encrypt:", "the client seals a page it writes, opens one it reads",
     "gcm-seal", "gcm-open"),
]


def run_tool(tool, args):
    """The tool's JSON; a RuntimeError with its output if it fails."""
    p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise RuntimeError(f"{tool} {' '.join(args)}: exit {p.returncode}\n"
                           f"{p.stdout[-3000:]}{p.stderr[-2000:]}")
    return json.loads(p.stdout)


def self_test(tool):
    """The self-test's counts; a RuntimeError naming the failed checks."""
    p = subprocess.run([tool, "--self-test"], capture_output=True, text=True, timeout=600)
    try:
        res = json.loads(p.stdout)
        failed = [c["check"] for c in res["checks"] if not c["ok"]]
    except (ValueError, KeyError):
        res, failed = None, [f"no report: {p.stdout[-1000:]}{p.stderr[-1000:]}"]
    if p.returncode or failed:
        raise RuntimeError(f"{tool} --self-test failed (exit {p.returncode}), not "
                           "publishing figures: " + "; ".join(failed))
    return {"passed": res["passed"], "failed": res["failed"]}


def flags_text(flags):
    have = [f for f, on in flags.items() if on]
    lack = [f for f, on in flags.items() if not on]
    return (", ".join(have) or "none") + " present" + \
        (f"; {', '.join(lack)} absent" if lack else "")


def summary_lines(result):
    """The markdown of crypto-native.md: a row an operation, ns a page
    at the median [the fastest batch], GB/s a core at the median."""
    ops = {op["name"]: op for op in result["ops"]}
    lines = ["# What Network RAM's security costs a page, natively", "",
             f"{result['date']}, CPU {result['cpu']} ({flags_text(result['cpu_flags'])}), "
             f"{result['openssl']}"
             + (f", OPENSSL_ia32cap={result['openssl_ia32cap']}"
                if result.get("openssl_ia32cap") else "") + ".", "",
             f"CPU time of the thread (`{result['clock']}`, which other processes do not "
             f"advance) a {result['page_bytes']}-byte page: the median and the minimum "
             f"over {result['batches']} batches of {result['pages_per_batch']} pages, the "
             f"operations taking turns batch by batch; GB/s a core is the page's bytes "
             f"over the median. Pages cycle through a pool of {result['pool_pages']}, in "
             "cache: the cipher's work, not the memory traffic moving a page costs anyway. "
             "One page a frame, the worst case of psk: (a frame of more pages pays "
             "its header's and tag's share once).", "",
             "| operation | algorithm | what | ns/page median [min] | GB/s per core |",
             "|---|---|---|---:|---:|"]
    for op in result["ops"]:
        lines.append(f"| {op['name']} | {op['algorithm']} | {op['what']} | "
                     f"{op['median_ns']:.0f} [{op['min_ns']:.0f}] | "
                     f"{op['gb_s_per_core']:.2f} |")
    lines += ["", "A page both ways, at the medians:", ""]
    for mode, how, a, b in MODES:
        if a in ops and b in ops:
            lines.append(f"- {mode} {ops[a]['median_ns']:.0f} + {ops[b]['median_ns']:.0f} ns "
                         f"({how})")
    lines += ["", "OpenSSL's implementations, nswapd's own; the kernel client uses the "
              "kernel's (its ChaCha20 and Poly1305 library for psk: tags, gcm(aes) for "
              "encrypt:), whose speed on the same CPU may differ.", "",
              f"Self-test: {result['self_test']['passed']} checks passed "
              "(RFC 8439 2.8.2, GCM test case 16, the protocol's frame tag, tampering "
              "refused).", "",
              f"Produced by `{result['command']}`."]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tool", nargs="?", default=TOOL, help=f"the tool (default {TOOL})")
    ap.add_argument("--quick", action="store_true", help="a few short batches")
    ap.add_argument("--batches", type=int, help="batches an operation (tool's default 15)")
    ap.add_argument("--out", default=OUT, help=f"where to write {NAME}.* (default {OUT})")
    a = ap.parse_args()

    if not os.access(a.tool, os.X_OK):
        sys.exit(f"{a.tool}: not built (make bench-crypto builds it)")
    checks = self_test(a.tool)
    args = (["--quick"] if a.quick else []) + \
        (["--batches", str(a.batches)] if a.batches else [])
    command = COMMAND if a.tool == TOOL and not args else \
        "python3 userspace/bench/crypto.py " + " ".join(sys.argv[1:])
    result = {"benchmark": "crypto-native", "date": n2lbench.now(), "command": command,
              **run_tool(a.tool, args), "self_test": checks}
    os.makedirs(a.out, exist_ok=True)
    n2lbench.write_results(a.out, NAME, result, summary_lines(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
