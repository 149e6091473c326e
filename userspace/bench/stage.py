# SPDX-License-Identifier: GPL-2.0-only
"""Workload binaries and their libraries copied into the guest's tmpfs
before anything is timed. The guest sees the host's filesystem through
virtiofs: under a memory limit a workload's text and libc are reclaimed
like any page cache and faulted back in from the host, host I/O that
would land in the timed run and differ between runs. From tmpfs they are
swap-backed pages, paged like the workload's own memory onto the device
under test, the same way in every configuration."""
import os
import re
import shutil
import subprocess

LDD_LINE = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x")


def libraries(binary):
    """The absolute paths of the shared objects binary loads, the loader
    included, as ldd resolves them."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True,
                         check=True).stdout
    return [m[1] for m in map(LDD_LINE.search, out.splitlines()) if m]


def loader_of(libs):
    return next(p for p in libs if os.path.basename(p).startswith("ld-linux"))


class Stage:
    """A directory in tmpfs holding binaries and one lib/ of everything
    they load; argv() runs one through the staged loader, so that no file
    of the host's is mapped into the timed process."""

    def __init__(self, root):
        self.root = root
        self.lib = os.path.join(root, "lib")
        os.makedirs(self.lib, exist_ok=True)
        self.loader = None
        self.names = set()      # the binaries staged

    def add(self, binary):
        libs = libraries(binary)
        for path in libs:
            shutil.copy(path, os.path.join(self.lib, os.path.basename(path)))
        self.loader = os.path.join(self.lib, os.path.basename(loader_of(libs)))
        shutil.copy(binary, os.path.join(self.root, os.path.basename(binary)))
        self.names.add(os.path.basename(binary))

    def argv(self, name, args):
        return [self.loader, "--library-path", self.lib,
                os.path.join(self.root, name)] + list(args)


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"
