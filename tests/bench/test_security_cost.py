# SPDX-License-Identifier: GPL-2.0-only
"""security_cost.py: tcrypt's figures as the kernel logs them, and the
medians a page."""
import security_cost as sc

# A guest's dmesg of tcrypt mode=211 and mode=321 with sec=0 (6.1, QEMU
# max): an AEAD test's figure comes on a line of its own.
DMESG = """\
[   18.975707] tcrypt:
               testing speed of rfc4106(gcm(aes)) (rfc4106-gcm-aesni) encryption
[   18.975812] test 6 (160 bit key, 4096 byte blocks):
[   18.975926] 1 operation in 9124 cycles (4096 bytes)
               testing speed of gcm(aes) (generic-gcm-aesni) encryption
[   18.976478] test 6 (128 bit key, 4096 byte blocks):
[   18.976592] 1 operation in 9055 cycles (4096 bytes)
[   18.977777] test 22 (256 bit key, 4096 byte blocks):
[   18.977905] 1 operation in 10211 cycles (4096 bytes)
[   18.977999] test 23 (256 bit key, 8192 byte blocks):
[   18.978105] 1 operation in 20001 cycles (8192 bytes)
               testing speed of gcm(aes) (generic-gcm-aesni) decryption
[   18.980648] test 22 (256 bit key, 4096 byte blocks):
[   18.980790] 1 operation in 10496 cycles (4096 bytes)
[  302.291000] tcrypt:
               testing speed of async poly1305 (poly1305-simd)
[  302.293020] tcrypt: test  9 ( 2080 byte blocks, 2080 bytes per update,   1 updates):   4163 cycles/operation,    2 cycles/byte
[  302.293050] tcrypt: test 10 ( 4128 byte blocks,   32 bytes per update, 129 updates):  44000 cycles/operation,   10 cycles/byte
[  302.293080] tcrypt: test 10 ( 4128 byte blocks, 4128 bytes per update,   1 updates):   7933 cycles/operation,    1 cycles/byte
""".splitlines()


def test_tcrypt_figures_are_read_from_their_own_lines():
    r = sc.tcrypt_results(DMESG)
    assert r[("gcm(aes)", "generic-gcm-aesni", "encryption", 256, 4096)] == 10211
    assert r[("gcm(aes)", "generic-gcm-aesni", "encryption", 128, 4096)] == 9055
    assert r[("gcm(aes)", "generic-gcm-aesni", "decryption", 256, 4096)] == 10496
    assert r[("rfc4106(gcm(aes))", "rfc4106-gcm-aesni", "encryption", 160, 4096)] == 9124
    assert r[("poly1305", "poly1305-simd", "", 0, 4128)] == 7933    # not the 32-byte updates
    assert r[("poly1305", "poly1305-simd", "", 0, 2080)] == 4163


def test_a_test_without_its_figure_takes_none_of_the_next():
    lines = ["testing speed of gcm(aes) (generic-gcm-aesni) encryption",
             "test 22 (256 bit key, 4096 byte blocks):",
             "testing speed of gcm(aes) (generic-gcm-aesni) decryption",
             "1 operation in 10496 cycles (4096 bytes)"]
    assert sc.tcrypt_results(lines) == {}


def test_the_cipher_costs_kept_are_encrypts_and_a_pages_tag(monkeypatch):
    monkeypatch.setattr(sc, "tcrypt", lambda mode: DMESG)
    assert sc.cipher_costs() == {
        "gcm(aes) 256-bit decryption, 4096 bytes (generic-gcm-aesni)": 10496,
        "gcm(aes) 256-bit encryption, 4096 bytes (generic-gcm-aesni)": 10211,
        "poly1305, 4128 bytes (poly1305-simd)": 7933}


def test_medians_a_page_by_case_and_device():
    runs = [{"case": "randread 4k qd32", "device": d, "per_page": v}
            for d, v in (("plain", 35000), ("plain", 35200), ("plain", 34900),
                         ("psk", 57000), ("psk", 57700))]
    assert sc.summarize(runs) == {"randread 4k qd32": {"plain": [35000, 34900, 35200],
                                                       "psk": [57350, 57000, 57700]}}
    assert sc.spread([35000, 34900, 35200]) == "35000 (34900–35200)"
    assert sc.spread([35000, 35000, 35000]) == "35000"


def test_a_report_is_written_again_from_the_runs(tmp_path):
    import json
    runs = [{"case": "write 1M qd4", "device": d, "rep": rep, "per_page": v + rep}
            for rep in (0, 1) for d, v in (("plain", 6000), ("psk", 12400),
                                            ("encrypt", 17200), ("psk+encrypt", 24600))]
    path = tmp_path / "security-cost.json"
    path.write_text(json.dumps({
        "date": "d", "summary": {"stale": 1}, "ciphers": {"gcm": 10211}, "runs": runs,
        "environment": {"kernel": "k", "mode": "m", "runs": "r"}}))
    assert sc.rewrite_report(str(path)) == 0
    assert json.loads(path.read_text())["summary"]["write 1M qd4"]["plain"] == [6000, 6000, 6001]
    md = (tmp_path / "security-cost.md").read_text()
    assert "| write 1M qd4 | 6000 (6000–6001) | 12400 (12400–12401) |" in md
    assert "| 6400 | 11200 |" in md
