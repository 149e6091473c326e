"""The nswap2l table line and status line, in one place for the admin CLI,
the tests and the benchmark runner. Field order: dm-nswap2l/nswap2l.rst."""

MEDIA = ("netram", "flash", "disk")
SLOT_BYTES = 4096
COUNTERS = ("nospc", "discarded", "zero_reads", "dropped")
NETRAM_COUNTERS = ("lost", "failed_reads", "slow_writes", "slow_reads",
                   "moved_pages", "returned_pages", "replicas", "underreplicated",
                   "rereplicated", "auth_failures")
# The engine's effort, last in the status line: what the prefetch policy
# asked for, and how often it was asked.
PREFETCH_EFFORT = ("prefetch_target", "prefetch_activations")


def table_line(sectors, flash="-", disk="-", features=(), servers=(),
               placement="netram-first", placement_args=(), prefetch="none",
               prefetch_args=(), start=0):
    """The dmsetup table line of one nswap2l target."""
    words = [flash or "-", disk or "-", "8", str(len(features)), *features,
             str(len(servers)), *servers,
             placement, str(len(placement_args)), *placement_args,
             prefetch, str(len(prefetch_args)), *prefetch_args]
    return f"{start} {sectors} nswap2l " + " ".join(str(w) for w in words)


def _counters(st, w, i, keys):
    """Fields w[i:] as the integer counters named by keys; the next index."""
    for k in keys:
        st[k] = int(w[i])
        i += 1
    return i


def _policy(w, i):
    """'<name> <#args> <arg>...' at w[i]: (name, args, the next index)."""
    nargs = int(w[i + 1])
    return w[i], w[i + 2:i + 2 + nargs], i + 2 + nargs


def parse_status(line):
    """Parse the INFO status of one nswap2l target, with or without the
    leading '<start> <length> nswap2l'."""
    w = line.split()
    if len(w) > 2 and w[2] == "nswap2l":
        w = w[3:]
    # The last field, whatever is added before it: "full" when no medium
    # has room for a slot that is on none yet, else "ok".
    st = {"space": w[-1]}
    if st["space"] not in ("ok", "full"):
        raise ValueError(f"expected ok or full last: {line}")
    w = w[:-1]
    st["slot_sectors"] = int(w[0])
    mapped, slots = w[1].split("/")
    st["mapped"], st["slots"] = int(mapped), int(slots)
    i = 2
    for m in MEDIA:
        if w[i] != m:
            raise ValueError(f"expected medium {m} at field {i}: {line}")
        held, cap = w[i + 1].split("/")
        st[m] = {"held": int(held), "capacity": int(cap),
                 "reads": int(w[i + 2]), "writes": int(w[i + 3]),
                 "read_sectors": int(w[i + 4]), "write_sectors": int(w[i + 5])}
        i += 6
    i = _counters(st, w, i, COUNTERS)
    st["placement"], st["placement_args"], i = _policy(w, i)
    nserv = int(w[i])
    i += 1
    st["servers"] = []
    for _ in range(nserv):
        name, state, held, free, cap = w[i:i + 5]
        st["servers"].append({"name": name, "state": state, "held": int(held),
                              "free": int(free), "capacity": int(cap)})
        i += 5
    i = _counters(st, w, i, NETRAM_COUNTERS)
    st["prefetch_policy"], st["prefetch_args"], i = _policy(w, i)
    st["prefetched"], st["prefetch_hits"] = int(w[i]), int(w[i + 1])
    st["read_prefetch_ratio"], st["read_parallelism"] = float(w[i + 2]), float(w[i + 3])
    i += 4
    for m in MEDIA:
        st[m]["reads_inflight"] = int(w[i])
        i += 1
    for m in MEDIA:
        st[m]["moved_in"], st[m]["moved_out"] = int(w[i]), int(w[i + 1])
        i += 2
    # Every read of a prefetched slot while it stays on Flash, and the
    # original Nswap2L's read/prefetch ratio: those per slot prefetched.
    st["prefetch_reads"], st["read_prefetch_ratio_all"] = int(w[i]), float(w[i + 1])
    i += 2
    # Added later still: the slots the prefetch policy asked for, summed
    # over its activations, and those activations. A module before them
    # reports neither: None, not an error.
    st["prefetch_target"] = st["prefetch_activations"] = None
    if len(w) - i >= len(PREFETCH_EFFORT):
        i = _counters(st, w, i, PREFETCH_EFFORT)
    # And then how much of that target the policy asked for to keep room
    # on Network RAM (auto's room rule); None from a module before it.
    st["prefetch_room_target"] = None
    if st["prefetch_target"] is not None and len(w) > i:
        i = _counters(st, w, i, ("prefetch_room_target",))
    if i != len(w):
        raise ValueError(f"{len(w) - i} fields left over: {line}")
    return st


# Latency histograms: sysfs <medium>_<op>_latency, bucket counts by the
# time from map to completion; bucket 0 under 1 us, bucket i from
# 2^(i-1) us to under 2^i us, the last from 2^22 us on.
LATENCY_OPS = ("read", "write")
LATENCY_BUCKETS = 24


def latency_bound_us(i):
    """The exclusive upper bound of bucket i in microseconds (None: the
    last bucket has none)."""
    return None if i >= LATENCY_BUCKETS - 1 else 1 << i


def parse_latency(text):
    """A latency sysfs file: its bucket counts."""
    counts = [int(x) for x in text.split()]
    if len(counts) != LATENCY_BUCKETS:
        raise ValueError(f"{len(counts)} buckets, not {LATENCY_BUCKETS}: {text!r}")
    return counts


def read_latency(sysfs_dir):
    """{(medium, op): bucket counts} of a device's sysfs directory."""
    out = {}
    for m in MEDIA:
        for op in LATENCY_OPS:
            with open(f"{sysfs_dir}/{m}_{op}_latency") as f:
                out[(m, op)] = parse_latency(f.read())
    return out


def latency_quantile_us(counts, q):
    """The upper bound (us) of the bucket holding quantile q of counts;
    None when it is the last bucket, 0 when there are no samples."""
    total = sum(counts)
    if not total:
        return 0
    seen = 0
    for i, n in enumerate(counts):
        seen += n
        if seen >= q * total:
            return latency_bound_us(i)
    return None
