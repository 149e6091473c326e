# SPDX-License-Identifier: GPL-2.0-only
"""userspace/vm/n2l-vm --link: a link it cannot make is refused before any
guest boots, with the forms it takes."""
import os
import subprocess

import pytest

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "userspace", "vm", "n2l-vm")


@pytest.mark.parametrize("link", ["listen:", "listen:tap=", "connect:bogus",
                                  "sideways:7070", "tap=n2ls1", "7070"])
def test_bad_link_refused(tmp_path, link):
    p = subprocess.run([TOOL, "--out", str(tmp_path), "--link", link, "--", "true"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p
    assert "--link listen|connect:PORT or listen|connect:tap=IFNAME" in p.stderr
    assert not (tmp_path / "console.log").exists()
