# SPDX-License-Identifier: GPL-2.0-only
"""fsync_writer.py DIR LOG: files of random data written into DIR one after
the other, each fsynced with DIR, and each logged to LOG with its SHA-256
once it is durable (the log flushed and fsynced too), until killed: what
a power cut or a reset must keep (test_meta.py, tests/reboot)."""
import hashlib
import os
import sys


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def main(directory, log):
    with open(log, "a") as lf:
        for i in range(100000):
            data = os.urandom(4096 * (1 + i % 7))
            fd = os.open(os.path.join(directory, f"f{i}"),
                         os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            os.write(fd, data)
            os.fsync(fd)
            os.close(fd)
            fsync_path(directory)
            lf.write(f"f{i} {hashlib.sha256(data).hexdigest()}\n")
            lf.flush()
            os.fsync(lf.fileno())


if __name__ == "__main__":
    main(*sys.argv[1:3])
