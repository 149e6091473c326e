# SPDX-License-Identifier: GPL-2.0-only
"""The Debian packages make deb builds, as the tests find them installed
(tests/vm/packaged-root installs them; tests/vm/test_packages.py uses
them in a guest, tests/packages checks what dpkg leaves on the host)."""
import glob
import os
import subprocess

PACKAGES = ("nswap2l-dkms", "nswapd", "nswap2l-tools")


def installed(pkg):
    p = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                       capture_output=True, text=True)
    return p.stdout == "install ok installed"


def kernels_with_headers():
    """The kernels DKMS builds for: those whose headers are installed."""
    return sorted(os.path.basename(os.path.dirname(b))
                  for b in glob.glob("/lib/modules/*/build"))
