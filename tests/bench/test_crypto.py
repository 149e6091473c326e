# SPDX-License-Identifier: GPL-2.0-only
"""make bench-crypto (userspace/bench/crypto.py and its tool,
userspace/bench/crypto/n2l-cryptobench.c), on the host: the tool built
under ASan and UBSan passes its known-answer self-test, its frame tag is
the protocol's (n2lproto.Tagger's), a quick run reports every figure,
and the markdown says what the JSON does."""
import json
import os
import subprocess

import pytest

import crypto
import n2lproto

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "userspace", "bench", "crypto", "n2l-cryptobench.c")
OPS = ["psk-tag", "psk-verify", "gcm-seal", "gcm-open", "chacha-seal", "chacha-open"]


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    """The tool under the sanitizers, with nswapd's warnings as errors."""
    out = str(tmp_path_factory.mktemp("cryptobench") / "n2l-cryptobench")
    subprocess.run(
        ["gcc", "-std=gnu11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
         "-Wshadow", "-Wformat=2", "-Wstrict-prototypes", "-Wmissing-prototypes",
         "-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
         "-fno-sanitize-recover=all", "-I" + os.path.join(ROOT, "nswap-net"),
         "-o", out, SRC, "-lcrypto"], check=True)
    return out


def run(tool, *args):
    p = subprocess.run([tool, *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def test_self_test_passes_every_check(tool):
    rc, out, err = run(tool, "--self-test")
    res = json.loads(out)
    assert rc == 0 and err == "", err
    assert res["failed"] == 0 and res["passed"] == len(res["checks"]) >= 20
    names = " ".join(c["check"] for c in res["checks"])
    for what in ("RFC 8439 2.8.2: seal", "test case 16: seal", "flipped tag bit",
                 "psk: verify refuses a flipped header bit", "replay"):
        assert what in names


def test_frame_tag_is_the_protocols(tool):
    """The sample the self-test prints, tagged again by the protocol's
    Python implementation from its header and payload rule."""
    s = json.loads(run(tool, "--self-test")[1])["psk_sample"]
    payload = bytes((i * 7 + 1) & 0xff for i in range(n2lproto.PAGE_SIZE + n2lproto.SEAL_LEN))
    header = n2lproto.pack_header(n2lproto.header(
        n2lproto.OP_PUT, id=1, key=7, count=1, vers=9, length=len(payload)))
    assert s["header"] == header.hex()
    tagger = n2lproto.Tagger(bytes.fromhex(s["key"]), seq=s["seq"])
    assert tagger.tag(header + payload).hex() == s["tag"]


def test_quick_run_reports_every_operation(tool):
    rc, out, err = run(tool, "--quick")
    assert rc == 0, err
    res = json.loads(out)
    assert res["clock"] == "CLOCK_THREAD_CPUTIME_ID" and res["page_bytes"] == 4096
    assert res["cpu"] and res["openssl"].startswith("OpenSSL")
    assert {"aes", "avx2"} <= set(res["cpu_flags"])
    assert [op["name"] for op in res["ops"]] == OPS
    for op in res["ops"]:
        assert len(op["batches_ns"]) == res["batches"] >= 1
        assert 0 < op["min_ns"] <= op["median_ns"] <= max(op["batches_ns"]), op
        assert min(op["batches_ns"]) == pytest.approx(op["min_ns"], abs=0.05)
        assert op["gb_s_per_core"] == pytest.approx(4096 / op["median_ns"], rel=1e-3)


def test_bad_arguments_are_refused(tool):
    for args in (["--pages", "0"], ["--batches"], ["--bogus"], ["--self-test", "--quick"]):
        assert run(tool, *args)[0] == 2, args


RESULT = {
    "benchmark": "crypto-native", "date": "2026-01-01T00:00:00Z",
    "command": "make bench-crypto", "tool": "n2l-cryptobench", "cpu": "Some CPU",
    "cpu_flags": {"aes": True, "avx2": True, "vaes": False}, "openssl": "OpenSSL 3.0.0",
    "openssl_ia32cap": None, "clock": "CLOCK_THREAD_CPUTIME_ID", "page_bytes": 4096,
    "pages_per_batch": 2000, "batches": 3, "pool_pages": 64,
    "ops": [
        {"name": "psk-tag", "algorithm": "ChaCha20-Poly1305", "what": "tag a frame",
         "bytes": 4160, "median_ns": 684.4, "min_ns": 671.6, "gb_s_per_core": 5.984,
         "batches_ns": [671.6, 684.4, 700.0]},
        {"name": "psk-verify", "algorithm": "ChaCha20-Poly1305", "what": "verify it",
         "bytes": 4160, "median_ns": 690.0, "min_ns": 680.0, "gb_s_per_core": 5.936,
         "batches_ns": [680.0, 690.0, 695.0]},
        {"name": "gcm-seal", "algorithm": "AES-256-GCM", "what": "encrypt + tag a page",
         "bytes": 4112, "median_ns": 1102.5, "min_ns": 1079.2, "gb_s_per_core": 3.713,
         "batches_ns": [1079.2, 1102.5, 1110.0]},
    ],
    "self_test": {"passed": 22, "failed": 0},
}


def test_markdown_renders_the_json():
    md = "\n".join(crypto.summary_lines(RESULT))
    assert md.startswith("# What Network RAM's security costs a page, natively\n")
    assert ("2026-01-01T00:00:00Z, CPU Some CPU (aes, avx2 present; vaes absent), "
            "OpenSSL 3.0.0.") in md
    assert "over 3 batches of 2000 pages" in md and "a pool of 64" in md
    assert "| operation | algorithm | what | ns/page median [min] | GB/s per core |" in md
    assert "| psk-tag | ChaCha20-Poly1305 | tag a frame | 684 [672] | 5.98 |" in md
    assert "| gcm-seal | AES-256-GCM | encrypt + tag a page | 1102 [1079] | 3.71 |" in md
    assert "- psk: 684 + 690 ns" in md
    assert "- encrypt:" not in md       # gcm-open missing: no sum
    assert "Self-test: 22 checks passed" in md
    assert md.endswith("Produced by `make bench-crypto`.")
    masked = dict(RESULT, openssl_ia32cap="~0x200000200000000")
    assert "OpenSSL 3.0.0, OPENSSL_ia32cap=~0x200000200000000." in \
        "\n".join(crypto.summary_lines(masked))
