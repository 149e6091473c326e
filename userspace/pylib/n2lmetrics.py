"""Every counter of nswap2l devices in the Prometheus text exposition
format (version 0.0.4), for node_exporter's textfile collector: one
sample per device (label device), per device and medium (medium), or per
device and page server (server), and latency histograms per device,
medium and operation. METRICS and HISTOGRAMS document each metric; the
README's table is checked against them (tests/vm/test_table.py)."""
from nswap2l import LATENCY_BUCKETS, LATENCY_OPS, MEDIA, latency_bound_us

PREFIX = "nswap2l_"

# (name, type, labels, help, value of (status, medium or server))
DEVICE, MEDIUM, SERVER = "device", "device,medium", "device,server"

METRICS = (
    ("slots", "gauge", DEVICE, "Slots (4 KiB each) of the device.",
     lambda st, _: st["slots"]),
    ("mapped_slots", "gauge", DEVICE, "Slots that hold data.",
     lambda st, _: st["mapped"]),
    ("held_slots", "gauge", MEDIUM, "Slots held on the medium.",
     lambda st, m: st[m]["held"]),
    ("capacity_slots", "gauge", MEDIUM,
     "Slots the medium can hold (Network RAM: what the servers donate).",
     lambda st, m: st[m]["capacity"]),
    ("reads_total", "counter", MEDIUM, "Read requests sent to the medium.",
     lambda st, m: st[m]["reads"]),
    ("writes_total", "counter", MEDIUM, "Write requests sent to the medium.",
     lambda st, m: st[m]["writes"]),
    ("read_bytes_total", "counter", MEDIUM, "Bytes read from the medium.",
     lambda st, m: st[m]["read_sectors"] * 512),
    ("written_bytes_total", "counter", MEDIUM, "Bytes written to the medium.",
     lambda st, m: st[m]["write_sectors"] * 512),
    ("reads_in_flight", "gauge", MEDIUM, "Reads of the medium not yet completed.",
     lambda st, m: st[m]["reads_inflight"]),
    ("moved_in_slots_total", "counter", MEDIUM,
     "Slots migrated onto the medium (prefetch, drains, hand-backs).",
     lambda st, m: st[m]["moved_in"]),
    ("moved_out_slots_total", "counter", MEDIUM, "Slots migrated off the medium.",
     lambda st, m: st[m]["moved_out"]),
    ("nospc_errors_total", "counter", DEVICE,
     "Writes failed with ENOSPC: no medium had room and none was coming.",
     lambda st, _: st["nospc"]),
    ("discarded_slots_total", "counter", DEVICE, "Slots freed by discard (TRIM).",
     lambda st, _: st["discarded"]),
    ("zero_filled_reads_total", "counter", DEVICE,
     "Reads of never-written slots, answered with zeroes.",
     lambda st, _: st["zero_reads"]),
    ("dropped_writes_total", "counter", DEVICE,
     "Writes superseded by a later write of the same slot before they landed.",
     lambda st, _: st["dropped"]),
    ("full", "gauge", DEVICE,
     "1 when no medium has room for another slot: writes of new slots fail (ENOSPC).",
     lambda st, _: int(st["space"] == "full")),
    ("lost_slots", "gauge", DEVICE,
     "Slots whose every Network RAM copy is gone (reads fail until rewritten).",
     lambda st, _: st["lost"]),
    ("failed_reads_total", "counter", DEVICE, "Reads failed with an I/O error.",
     lambda st, _: st["failed_reads"]),
    ("slow_writes_total", "counter", DEVICE,
     "Network RAM writes placed again after a server refused or lost them.",
     lambda st, _: st["slow_writes"]),
    ("slow_reads_total", "counter", DEVICE,
     "Network RAM reads retried on another copy or after a reconnect.",
     lambda st, _: st["slow_reads"]),
    ("server_moved_pages_total", "counter", DEVICE,
     "Pages servers moved to a peer (MOVED).", lambda st, _: st["moved_pages"]),
    ("server_returned_pages_total", "counter", DEVICE,
     "Pages servers handed back (RETURN).", lambda st, _: st["returned_pages"]),
    ("replicas", "gauge", DEVICE, "Copies kept of each Network RAM slot.",
     lambda st, _: st["replicas"]),
    ("underreplicated_slots", "gauge", DEVICE,
     "Network RAM slots with fewer copies than replicas.",
     lambda st, _: st["underreplicated"]),
    ("rereplicated_slots_total", "counter", DEVICE,
     "Slots copied again to restore their replica count.",
     lambda st, _: st["rereplicated"]),
    ("auth_failures_total", "counter", DEVICE,
     "Pages from servers whose seal did not check (never returned).",
     lambda st, _: st["auth_failures"]),
    ("prefetched_slots_total", "counter", DEVICE,
     "Slots the prefetch policy moved from Network RAM to Flash.",
     lambda st, _: st["prefetched"]),
    ("prefetch_hits_total", "counter", DEVICE,
     "Prefetched slots read since they moved (first read of each).",
     lambda st, _: st["prefetch_hits"]),
    ("read_prefetch_ratio", "gauge", DEVICE, "prefetch_hits / prefetched.",
     lambda st, _: st["read_prefetch_ratio"]),
    ("prefetch_reads_total", "counter", DEVICE,
     "Reads of prefetched slots while they stay on Flash unwritten (every read).",
     lambda st, _: st["prefetch_reads"]),
    ("read_prefetch_ratio_all", "gauge", DEVICE,
     "prefetch_reads / prefetched (the original Nswap2L's read/prefetch ratio).",
     lambda st, _: st["read_prefetch_ratio_all"]),
    ("prefetch_target_total", "counter", DEVICE,
     "Slots the migration engine set out to move, summed over its activations.",
     lambda st, _: st["prefetch_target"]),
    ("prefetch_activations_total", "counter", DEVICE,
     "Runs of the migration engine whose plan asked for slots.",
     lambda st, _: st["prefetch_activations"]),
    ("prefetch_room_target_total", "counter", DEVICE,
     "Of the prefetch target, the slots asked for to keep room on Network RAM.",
     lambda st, _: st["prefetch_room_target"]),
    ("read_parallelism", "gauge", DEVICE,
     "Mean reads in flight over the media, sampled at each read.",
     lambda st, _: st["read_parallelism"]),
    ("server_up", "gauge", SERVER, "1 when the server is up (takes writes).",
     lambda srv, _: int(srv["state"] == "up")),
    ("server_held_slots", "gauge", SERVER, "Slots of the device the server holds.",
     lambda srv, _: srv["held"]),
    ("server_free_pages", "gauge", SERVER,
     "Pages the server can still take, as the client counts them.",
     lambda srv, _: srv["free"]),
    ("server_capacity_pages", "gauge", SERVER, "Pages the server donates.",
     lambda srv, _: srv["capacity"]),
    ("server_puts_total", "counter", SERVER, "PUT requests sent.",
     lambda srv, _: srv["puts"]),
    ("server_gets_total", "counter", SERVER, "GET requests sent.",
     lambda srv, _: srv["gets"]),
    ("server_full_total", "counter", SERVER, "PUTs refused: full or draining.",
     lambda srv, _: srv["full"]),
    ("server_timeouts_total", "counter", SERVER, "Requests timed out.",
     lambda srv, _: srv["timeouts"]),
    ("server_reconnects_total", "counter", SERVER, "Connections made again.",
     lambda srv, _: srv["reconnects"]),
    ("server_protocol_errors_total", "counter", SERVER,
     "Malformed or unauthenticated frames (each drops the connection).",
     lambda srv, _: srv["protocol_errors"]),
    ("server_bad_seals_total", "counter", SERVER,
     "Pages from the server whose seal did not check.",
     lambda srv, _: srv["bad_seals"]),
    ("server_reconciliations_total", "counter", SERVER,
     "Reconciliations (after a reconnect or an invalidation overflow).",
     lambda srv, _: srv["reconciled"]),
    ("server_orphans_total", "counter", SERVER,
     "Pages reconciliation dropped: held by the server, wanted by no slot.",
     lambda srv, _: srv["orphans"]),
    ("server_missing_total", "counter", SERVER,
     "Pages reconciliation found gone from the server.",
     lambda srv, _: srv["missing"]),
    ("server_reported_pages", "gauge", SERVER,
     "Pages of the device the server says it holds.",
     lambda srv, _: srv["server_held"]),
    ("server_latency_seconds", "gauge", SERVER, "Mean reply time (EWMA).",
     lambda srv, _: srv["latency_us"] / 1e6),
    ("server_slow", "gauge", SERVER,
     "1 when the server is demoted as persistently slow.",
     lambda srv, _: srv["slow"]),
)


# (name, type, labels, help): histograms per device, medium and op, from
# the sysfs latency files (no _sum: the kernel keeps bucket counts only).
HISTOGRAMS = (
    ("request_latency_seconds", "histogram", "device,medium,op",
     "Requests by time from map to completion, per medium served and "
     "operation (read, write); log2 buckets from 1 us."),
)


def parse_servers(text):
    """The device's sysfs servers file: {name: {state, held, ...}}."""
    out = {}
    for line in text.splitlines():
        w = line.split()
        if len(w) < 2:
            continue
        srv = {"state": w[1]}
        for kv in w[2:]:
            k, _, v = kv.partition("=")
            srv[k] = int(v)
        out[w[0]] = srv
    return out


def _escape(v):
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _sample(name, labels, value):
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    if isinstance(value, float):
        text = repr(value)
    else:
        text = str(int(value))
    return f"{PREFIX}{name}{{{inner}}} {text}"


def render(devices):
    """devices: [(name, status dict, servers dict, latency dict)]: the
    exposition text.
    Samples of one metric stay together under its HELP and TYPE."""
    lines = []
    for name, kind, labels, help_text, value in METRICS:
        lines.append(f"# HELP {PREFIX}{name} {help_text}")
        lines.append(f"# TYPE {PREFIX}{name} {kind}")
        for dev, st, servers, _ in devices:
            if labels == DEVICE:
                lines.append(_sample(name, {"device": dev}, value(st, None)))
            elif labels == MEDIUM:
                for m in MEDIA:
                    lines.append(_sample(name, {"device": dev, "medium": m}, value(st, m)))
            else:
                for srv, fields in sorted(servers.items()):
                    lines.append(_sample(name, {"device": dev, "server": srv},
                                         value(fields, None)))
    for name, kind, _, help_text in HISTOGRAMS:
        lines.append(f"# HELP {PREFIX}{name} {help_text}")
        lines.append(f"# TYPE {PREFIX}{name} {kind}")
        for dev, _, _, latency in devices:
            for m in MEDIA:
                for op in LATENCY_OPS:
                    lines += _histogram(name, {"device": dev, "medium": m, "op": op},
                                        latency[(m, op)])
    return "\n".join(lines) + "\n"


def _histogram(name, labels, counts):
    """Cumulative _bucket samples (le in seconds) and _count."""
    out, seen = [], 0
    for i in range(LATENCY_BUCKETS):
        seen += counts[i]
        bound = latency_bound_us(i)
        le = "+Inf" if bound is None else repr(bound / 1e6)
        out.append(_sample(f"{name}_bucket", {**labels, "le": le}, seen))
    out.append(_sample(f"{name}_count", labels, seen))
    return out
