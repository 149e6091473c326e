# SPDX-License-Identifier: GPL-2.0-only
"""userspace/vm/n2l-vm: a guest whose console stands still before its
command starts (TCG once hung one 5 s into its boot, spinning a core for
33 minutes) is killed after N2L_VM_BOOT_STALL seconds and booted once
more; a second hang fails the run. vng is stood in for by a script that
prints a boot line, then hangs or, if told to, starts the command as
guest-run does (leaving started and status in the shared directory)."""
import os
import subprocess
import textwrap
import time

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "userspace", "vm", "n2l-vm")

FAKE_VNG = textwrap.dedent("""\
    #!/bin/bash
    # the directory shared read-write: --rwdir DIR
    while [ $# -gt 0 ]; do [ "$1" = --rwdir ] && out=$2; shift; done
    n=$(cat "$out/boots" 2>/dev/null || echo 0)
    echo $((n + 1)) >"$out/boots"
    echo "[    5.092959] Loading compiled-in X.509 certificates"
    if [ "$((n + 1))" -ge "${FAKE_BOOTS_OK_FROM:-99}" ]; then
        : >"$out/started"
        echo 0 >"$out/status"
        exit 0
    fi
    exec sleep 600
    """)


def run_vm(tmp_path, ok_from=None):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    vng = bindir / "vng"
    vng.write_text(FAKE_VNG)
    vng.chmod(0o755)
    out = tmp_path / "out"
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", N2L_VM_BOOT_STALL="3")
    if ok_from:
        env["FAKE_BOOTS_OK_FROM"] = str(ok_from)
    t0 = time.monotonic()
    p = subprocess.run([TOOL, "--out", str(out), "--", "true"], env=env,
                       capture_output=True, text=True, timeout=120)
    return p, out, time.monotonic() - t0


def test_a_boot_that_hangs_is_killed_and_booted_again(tmp_path):
    p, out, took = run_vm(tmp_path, ok_from=2)
    assert p.returncode == 0, p
    assert (out / "boots").read_text().strip() == "2"
    assert "console stood still for 3 s before its command started" in p.stderr, p.stderr
    assert "X.509" in (out / "console-boot-stalled.log").read_text()
    assert took < 60


def test_a_boot_that_hangs_twice_fails(tmp_path):
    p, out, took = run_vm(tmp_path)
    assert p.returncode != 0, p
    assert (out / "boots").read_text().strip() == "2"
    assert p.stderr.count("console stood still") == 2, p.stderr
    assert took < 60
    # nothing of the killed guests is left running
    assert subprocess.run(["pgrep", "-f", f"rwdir {out}"], capture_output=True).returncode == 1
