# SPDX-License-Identifier: GPL-2.0-only
"""What the in-guest benchmarks share: fio runs, the record of the
environment, and A/B comparisons of interleaved runs by their medians."""
import json
import os
import platform
import statistics
import time

from n2llab import sh


def fio_job(path, rw, bs, qd, size_mb, runtime=3, ramp=1):
    """One fio job on path; returns fio's figures of its direction (the
    JSON's "read" or "write"). runtime None: one pass over size_mb,
    untimed (preconditioning)."""
    return fio_jobs(path, [(rw, bs, qd)], size_mb, runtime, ramp)[0]


def fio_jobs(path, jobs, size_mb, runtime=3, ramp=1):
    """fio jobs (rw, bs, qd) on path, one after the other (stonewall) in
    one fio: a fio start costs a guest two seconds, as much as a job
    measures. Returns each job's figures of its direction."""
    timing = f"--time_based --runtime={runtime} --ramp_time={ramp}" if runtime else ""
    each = " ".join(f"--name=job{i} --rw={rw} --bs={bs} --iodepth={qd} --stonewall"
                    for i, (rw, bs, qd) in enumerate(jobs))
    out = sh(f"fio --filename={path} --size={size_mb}M --direct=1 --ioengine=libaio "
             f"--randrepeat=1 --norandommap {timing} --output-format=json {each}",
             timeout=3600)
    return [job["read" if "read" in rw else "write"]
            for job, (rw, _, _) in zip(json.loads(out)["jobs"], jobs)]


def fio(path, rw, bs, qd, size_mb, runtime=3, ramp=1):
    """One fio job on path; returns (IOPS, MiB/s)."""
    res = fio_job(path, rw, bs, qd, size_mb, runtime, ramp)
    return res["iops"], res["bw_bytes"] / (1 << 20)


def us_per_request(res, qd):
    """What a request costs a queue of qd kept full, in us, from fio's
    figures of a time-based job: its runtime over its requests plus qd.
    fio's runtime runs on until the requests in flight at the end have
    completed, and counts none of them: fio's IOPS would charge a 1 MiB
    stream of 32 that drain, a third more over one second; this does
    not (within 1% of what the n2lmedia model planned, 4 KiB and 1 MiB,
    QD1 and QD32, under instruction counting)."""
    ios = res["total_ios"]
    return round(res["runtime"] * 1000 / (ios + qd), 1) if ios else None


def exact_timing():
    """Whether timing is exact: an instruction-counted guest."""
    return os.environ.get("N2L_ICOUNT") == "1"


# N2L_ICOUNT's modes (userspace/vm/n2l-vm).
TIMING_MODES = {
    "1": "icount shift=0,sleep=off (1 vCPU, guest time = instructions)",
    "sleep": "icount shift=0,sleep=on (1 vCPU, busy guest time = instructions)",
}


def environment(**extra):
    """Kernel, QEMU, fio and the timing mode, plus whatever the caller adds."""
    env = {
        "kernel": platform.release(),
        "qemu": os.environ.get("N2L_QEMU", ""),
        "fio": sh("fio --version").strip(),
        "vcpus": os.cpu_count(),
        "mode": TIMING_MODES.get(os.environ.get("N2L_ICOUNT"), "TCG wall clock (noisy: +-20%)"),
        "cpu": cpu_model(),
    }
    env.update(extra)
    return env


def cpu_model():
    """The guest CPU's name and whether its memcpy may use rep movsb (ERMS
    or FSRM), which TCG runs a byte at a time (userspace/vm/accel)."""
    name, flags = "", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and not name:
                    name = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return f"{name}, rep movsb: {'yes' if flags & {'erms', 'fsrm'} else 'no'}"


def boot_id():
    """This boot's id: the runs of one boot, and only they, pair."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def median_of(runs, case, target, key):
    return statistics.median(r[key] for r in runs
                             if r["case"] == case and r["target"] == target)


def write_results(out_dir, name, result, lines):
    """<name>.json with every run, <name>.md with the summary; prints it."""
    with open(os.path.join(out_dir, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out_dir, f"{name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
