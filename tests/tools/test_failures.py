# SPDX-License-Identifier: GPL-2.0-only
"""tests/failures: make check's last words before its summary say why
each failed test failed, from every JUnit file under a directory, so
that CI's shortened log keeps the reason."""
import os
import subprocess

TOOL = os.path.join(os.path.dirname(__file__), "..", "failures")

SUITE = """<testsuites><testsuite tests="3" failures="1" errors="1">
<testcase classname="test_a" name="test_ok"/>
<testcase classname="test_a" name="test_bad"><failure message="assert 3 == 27">{body}
E   assert 3 == 27</failure></testcase>
<testcase classname="test_b" name="test_broke"><error message="fixture">boom</error></testcase>
</testsuite></testsuites>"""


def run(top):
    return subprocess.run([TOOL, str(top)], capture_output=True, text=True, check=True).stdout


def test_names_each_failure_with_its_assertion(tmp_path):
    (tmp_path / "vm" / "shard").mkdir(parents=True)
    body = "\n".join(f"traceback line {i}" for i in range(100))
    (tmp_path / "vm" / "shard" / "junit.xml").write_text(SUITE.format(body=body))
    out = run(tmp_path)
    assert "FAILED test_a::test_bad" in out and "FAILED test_b::test_broke" in out
    assert "E   assert 3 == 27" in out and "boom" in out
    assert "test_ok" not in out
    assert "traceback line 99" in out and "traceback line 10\n" not in out


def test_says_when_a_file_cannot_be_read(tmp_path):
    (tmp_path / "junit.xml").write_text("<testsuites><testsuite>")
    assert "unreadable JUnit file" in run(tmp_path)


def test_says_nothing_when_nothing_failed(tmp_path):
    (tmp_path / "junit.xml").write_text(SUITE.format(body="").replace(
        "<failure", "<skipped").replace("</failure>", "</skipped>").replace(
        '<error message="fixture">boom</error>', ""))
    assert run(tmp_path) == ""
