# SPDX-License-Identifier: GPL-2.0-only
"""n2l-sim as a user runs it: options, exit codes, the three trace
producers, the table and the JSON, hand-built traces with known results,
and seeded random traces (with garbage) under ASan/UBSan, whose results
are checked against what the test itself knows of the trace."""
import json
import os
import random
import re
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM = os.environ.get("N2L_SIM", os.path.join(ROOT, "build/sim-san/n2l-sim"))
SIM_OPT = os.environ.get("N2L_SIM_OPT", os.path.join(ROOT, "build/n2l-sim"))
POLICIES = ["auto", "lrs", "mrs", "none", "random", "rr"]
MEDIA = ["netram", "flash", "disk"]


def run(args, stdin=None, binary=SIM):
    p = subprocess.run([binary] + args, input=stdin, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode >= 0, "killed by signal %d\n%s" % (-p.returncode, p.stderr)
    assert "runtime error" not in p.stderr, p.stderr
    assert "AddressSanitizer" not in p.stderr, p.stderr
    return p


def sim_json(path, *args):
    p = run(["--json", *args, str(path)])
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def line(fmt, t, event, fields):
    """One event as tracefs, trace-cmd or perf script print it."""
    stamp = "%d.%06d" % (int(t), round((t - int(t)) * 1e6))
    if fmt == "tracefs":
        return "  n2l-pattern-123 [000] ..... %s: nswap2l_%s: %s" % (stamp, event, fields)
    if fmt == "trace-cmd":
        return "     n2l-pattern-123   [000]  %s: nswap2l_%s:        %s" % (stamp, event, fields)
    return "     n2l-pattern   123 [000]  %s: nswap2l:nswap2l_%s: %s" % (stamp, event, fields)


def slots(op, t, slot, nr, medium="netram", dev="254:0"):
    return (t, op, "dev=%s slot=%d nr=%d medium=%s" % (dev, slot, nr, medium))


def render(events, fmt="tracefs", header=True):
    text = ["# tracer: nop", "#", "#   TASK-PID  CPU#  TIMESTAMP  FUNCTION"] if header else []
    text += [line(fmt, t, op, fields) for t, op, fields in events]
    return "\n".join(text) + "\n"


def write_trace(tmp_path, events, fmt="tracefs", name="t.trace"):
    path = tmp_path / name
    path.write_text(render(events, fmt))
    return path


# 8 slots written one by one, then read back.
EIGHT = [slots("write", 1.0 + i / 10, i, 1) for i in range(8)] + \
        [slots("read", 1.8, 0, 8)]

# The scenario of tests/sim/test-replay.c, worked out by hand there.
SCENARIO = [
    slots("write", 10.0, 8, 2),
    slots("write", 10.1, 0, 4),
    slots("write", 10.2, 4, 2),
    (11.0001, "migrate", "dev=254:0 slot=8 nr=2 moved=2 from=netram to=flash"),
    slots("write", 11.5, 12, 2),
    slots("read", 12.5, 0, 4),
    slots("read", 12.6, 8, 2, "flash"),
    slots("read", 12.7, 0, 4),
    slots("read", 12.8, 6, 2, "none"),
]

# ----------------------------------------------------------------------
# Options and exit codes


def test_help_lists_options_and_policies():
    p = run(["--help"])
    assert p.returncode == 0
    assert p.stdout.startswith("Usage: n2l-sim")
    for opt in ["--dev", "--policy", "--netram-slots", "--flash-slots",
                "--disk-slots", "--interval-ms", "--amount-mode", "--amount",
                "--seed", "--json"]:
        assert opt + " " in p.stdout
    assert " ".join(POLICIES) in p.stdout


@pytest.mark.parametrize("args, says", [
    ([], "no TRACE"),
    (["a", "b"], "one TRACE only"),
    (["--bogus", "t"], "unrecognized option"),
    (["--netram-slots"], "requires an argument"),
    (["--amount", "101", "t"], "at most 100"),
    (["--amount-mode", "netram", "--amount", "101", "t"], "at most 100"),
    (["--amount", "1073741825", "--amount-mode", "fixed", "t"], "--amount"),
    (["--amount-mode", "some", "t"], "--amount-mode"),
    (["--interval-ms", "9", "t"], "--interval-ms"),
    (["--interval-ms", "3600001", "t"], "--interval-ms"),
    (["--interval-ms", "1e3", "t"], "--interval-ms"),
    (["--policy", "nope", "t"], "no prefetch policy 'nope'"),
    (["--policy", "lrs", "--policy", "lrs", "t"], "given twice"),
    (["--policy", "none", "--policy", "default", "t"], "given twice"),
    (["--dev", "254", "t"], "--dev"),
    (["--dev", "254:-1", "t"], "--dev"),
    (["--netram-slots", "-1", "t"], "--netram-slots"),
    (["--flash-slots", "4294967296", "t"], "--flash-slots"),
    (["--disk-slots", "", "t"], "--disk-slots"),
    (["--seed", "18446744073709551616", "t"], "--seed"),
    (["--max-slots", "0", "t"], "--max-slots"),
])
def test_usage_errors_exit_2(args, says):
    # "t" does not exist: exit 2, not 1, shows the options were refused first
    p = run(args)
    assert p.returncode == 2, p.stderr
    assert says in p.stderr
    assert "--help" in p.stderr
    assert p.stdout == ""


def test_a_percentage_over_100_is_fine_as_a_fixed_amount(tmp_path):
    path = write_trace(tmp_path, EIGHT)
    p = run(["--amount-mode", "fixed", "--amount", "1000", str(path)])
    assert p.returncode == 0, p.stderr


def test_input_errors_exit_1(tmp_path):
    p = run([str(tmp_path / "missing")])
    assert p.returncode == 1 and "No such file" in p.stderr
    p = run([str(tmp_path)])                # a directory cannot be read
    assert p.returncode == 1
    (tmp_path / "empty").write_text("")
    p = run([str(tmp_path / "empty")])
    assert p.returncode == 1 and "no nswap2l events" in p.stderr
    (tmp_path / "other").write_text("# tracer: nop\n  bash-1 [000] ..... 1.0: sched_switch: x=1\n")
    p = run([str(tmp_path / "other")])
    assert p.returncode == 1 and "other: no nswap2l events (0 malformed lines)" in p.stderr
    path = write_trace(tmp_path, EIGHT)
    p = run(["--dev", "9:9", str(path)])
    assert p.returncode == 1 and "no nswap2l events for device 9:9" in p.stderr
    big = write_trace(tmp_path, [slots("write", 1.0, 4294967295, 1)], name="big")
    p = run([str(big)])
    assert p.returncode == 1 and "--max-slots" in p.stderr
    assert p.stdout == ""


def test_garbage_only_is_no_events_and_says_what_was_wrong(tmp_path):
    path = tmp_path / "garbage"
    path.write_bytes(b"\x00\xff\xfe nswap2l_write\n"
                     b"x-1 [0] 1.0: nswap2l_read: dev=1:0 slot=99999999999 nr=1 medium=flash\n"
                     b"\x7fELF\x02\x01\x01\n")
    p = run([str(path)])
    assert p.returncode == 1
    assert "garbage:2: malformed nswap2l event ignored: bad field value" in p.stderr
    assert "garbage: no nswap2l events (2 malformed lines)" in p.stderr
    p = run(["-"], stdin=path.read_text(errors="replace"))
    assert p.returncode == 1 and "<stdin>:2: malformed" in p.stderr


# ----------------------------------------------------------------------
# Input forms


def test_stdin_gives_what_the_file_gives(tmp_path):
    path = write_trace(tmp_path, SCENARIO)
    from_file = sim_json(path)
    p = run(["--json", "-"], stdin=path.read_text())
    assert p.returncode == 0, p.stderr
    from_stdin = json.loads(p.stdout)
    assert from_stdin["trace"]["file"] == "<stdin>"
    assert from_stdin["policies"] == from_file["policies"]


def test_json_survives_an_odd_file_name(tmp_path):
    path = write_trace(tmp_path, EIGHT, name='we"ird\\name\tx.trace')
    j = sim_json(path)
    assert j["trace"]["file"] == str(path)


def test_the_three_producers_give_the_same_results(tmp_path):
    results = []
    for fmt in ["tracefs", "trace-cmd", "perf"]:
        path = write_trace(tmp_path, SCENARIO, fmt, name=fmt)
        j = sim_json(path, "--amount-mode", "fixed", "--amount", "3")
        assert j["trace"]["events"] == len(SCENARIO)
        assert j["trace"]["malformed"] == 0
        results.append((j["model"], j["policies"]))
    assert results[0] == results[1] == results[2]


def test_malformed_lines_are_counted_and_reported(tmp_path):
    text = render(SCENARIO).splitlines()
    text.insert(4, "  n2l-pattern-123 [000] ..... 10.05: nswap2l_write: dev=254:0 slot=1")
    text.insert(6, "  n2l-pattern-123 [000] ..... 10.15: nswap2l_read: dev=254:0 slot=4294967296 nr=1 medium=netram")
    text.insert(7, "some other line mentioning nothing")
    path = tmp_path / "t.trace"
    path.write_text("\n".join(text) + "\n")
    p = run(["--json", str(path)])
    assert p.returncode == 0
    j = json.loads(p.stdout)
    assert j["trace"]["malformed"] == 2
    assert j["trace"]["events"] == len(SCENARIO)
    assert "t.trace:5: malformed nswap2l event ignored: missing field" in p.stderr
    assert "t.trace:7: malformed nswap2l event ignored: bad field value" in p.stderr
    p = run([str(path)])
    assert "2 malformed lines ignored" in p.stdout


def test_device_is_the_first_seen_unless_chosen(tmp_path):
    other = [slots("write", 0.5, 0, 3, dev="8:16"), slots("read", 0.6, 0, 3, dev="8:16")]
    path = write_trace(tmp_path, other + SCENARIO)
    p = run([str(path)])
    assert p.returncode == 0
    assert "2 events of device 8:16 (the first seen, --dev chooses; 2 devices in the trace)" in p.stdout
    j = sim_json(path)
    assert j["trace"]["device"] == "8:16" and j["trace"]["devices"] == 2
    assert j["policies"]["none"]["reads"]["netram"] == 3
    j = sim_json(path, "--dev", "254:0")
    assert j["trace"]["device"] == "254:0" and j["trace"]["device_from"] == "option"
    assert j["trace"]["events"] == len(SCENARIO)


# ----------------------------------------------------------------------
# Results worked out by hand


def test_eight_slots_on_a_four_slot_netram(tmp_path):
    path = write_trace(tmp_path, EIGHT)
    j = sim_json(path, "--netram-slots", "4")
    assert list(j["policies"]) == POLICIES
    for name, r in j["policies"].items():
        assert r["reads"] == {"netram": 4, "flash": 4, "disk": 0}, name
        assert r["read_pct"] == {"netram": 50.0, "flash": 50.0, "disk": 0.0}
        assert r["held"] == {"netram": 4, "flash": 4, "disk": 0}
        assert r["prefetched"] == 0 and r["read_prefetch_ratio"] is None
    j = sim_json(path, "--netram-slots", "4", "--flash-slots", "2", "--policy", "lrs")
    assert list(j["policies"]) == ["lrs"]
    assert j["policies"]["lrs"]["reads"] == {"netram": 4, "flash": 2, "disk": 2}
    # by default Network RAM holds what the trace put there at most: all 8
    j = sim_json(path)
    assert j["model"]["netram_slots"] == 8 and j["model"]["netram_from_trace"]
    assert j["policies"]["none"]["reads"]["netram"] == 8


def test_scenario_results_per_policy(tmp_path):
    path = write_trace(tmp_path, SCENARIO)
    j = sim_json(path, "--amount-mode", "fixed", "--amount", "3", "--netram-slots", "100")
    want = {  # prefetched, hits, netram reads, flash reads
        "lrs": (6, 6, 0, 10), "rr": (6, 4, 2, 8), "mrs": (6, 2, 6, 4),
        "none": (0, 0, 10, 0),
    }
    for name, (pf, hits, netram, flash) in want.items():
        r = j["policies"][name]
        assert (r["prefetched"], r["prefetch_hits"]) == (pf, hits), name
        assert (r["reads"]["netram"], r["reads"]["flash"]) == (netram, flash), name
        assert r["zero_reads"] == 2
    assert j["policies"]["lrs"]["read_prefetch_ratio"] == 1.0
    assert abs(j["policies"]["rr"]["read_prefetch_ratio"] - 4 / 6) < 1e-6
    assert j["policies"]["random"]["prefetched"] == 6


def test_table_shows_what_the_json_shows(tmp_path):
    path = write_trace(tmp_path, SCENARIO)
    args = ["--amount-mode", "fixed", "--amount", "3", str(path)]
    table = run(args).stdout
    j = json.loads(run(["--json"] + args).stdout)
    rows = {}
    for row in table.splitlines():
        words = row.split()
        if words and words[0] in POLICIES:
            rows[words[0]] = words
    assert list(rows) == POLICIES
    for name, words in rows.items():
        r = j["policies"][name]
        assert int(words[1]) == r["prefetched"] and int(words[2]) == r["prefetch_hits"]
        assert [int(words[i]) for i in (4, 6, 8)] == [r["reads"][m] for m in MEDIA]
        assert int(words[10]) == r["zero_reads"]
        assert [int(w) for w in words[12:15]] == [r["held"][m] for m in MEDIA]
    assert "netram 8 slots (the trace's peak)" in table.replace("Network RAM", "netram")


def test_random_repeats_with_a_seed(tmp_path):
    events = [slots("write", 1.0 + i / 100, (i * 37) % 200, 1) for i in range(200)]
    events += [slots("read", 4.0, 0, 100)]
    path = write_trace(tmp_path, events)
    args = ["--policy", "random", "--amount-mode", "fixed", "--amount", "20"]
    a = sim_json(path, *args, "--seed", "7")
    b = sim_json(path, *args, "--seed", "7")
    c = sim_json(path, *args, "--seed", "8")
    assert a == b
    assert a["model"]["seed"] == 7
    assert a["policies"]["random"]["prefetched"] == 40
    # half the slots are read back: which 40 moved decides the hits
    assert a["policies"]["random"]["prefetch_hits"] != c["policies"]["random"]["prefetch_hits"]


def test_flash_capacity_bounds_what_is_prefetched(tmp_path):
    events = [slots("write", 1.0 + i / 100, i, 1) for i in range(300)]
    path = write_trace(tmp_path, events)
    for flash in [0, 1, 7, 120]:
        j = sim_json(path, "--flash-slots", str(flash), "--amount-mode", "fixed",
                     "--amount", "100")
        for name, r in j["policies"].items():
            # auto makes room only when Network RAM runs short: here it never does
            assert r["prefetched"] == (0 if name in ("none", "auto") else min(flash, 200)), name
            assert r["held"]["flash"] == r["prefetched"]


def test_auto_makes_room_only_when_network_ram_runs_short(tmp_path):
    """300 slots written 10 ms apart, the first 20 read at the end. With
    100 slots of Network RAM, full from the first run on, auto moves what
    the amount knobs ask (10% of 100 swap-outs a run, two runs), oldest
    first: those that are read. With room for every slot of the device
    (300; its 4 runs of headroom would be 400), it moves nothing."""
    events = [slots("write", 1.0 + i / 100, i, 1) for i in range(300)] + \
        [slots("read", 3.995, 0, 20)]
    path = write_trace(tmp_path, events)
    short = sim_json(path, "--netram-slots", "100", "--policy", "auto")["policies"]["auto"]
    assert (short["prefetched"], short["prefetch_hits"]) == (20, 20), short
    assert (short["prefetch_target"], short["prefetch_activations"]) == (20, 2), short
    assert short["prefetch_room_target"] == 20, short
    roomy = sim_json(path, "--netram-slots", "300", "--policy", "auto")["policies"]["auto"]
    assert roomy["prefetched"] == 0 and roomy["prefetch_target"] == 0, roomy
    assert roomy["prefetch_room_target"] == 0, roomy


# ----------------------------------------------------------------------
# Seeded random traces with garbage, under the sanitizers


GARBAGE = [
    ("nswap2l_write: dev=254:0 slot=1 nr=1 medium=netram", True),     # no timestamp
    ("  x-1 [000] ..... 5.0: nswap2l_read: dev=254:0 slot=18446744073709551616 nr=1 medium=flash", True),
    ("  x-1 [000] ..... 5.0: nswap2l_free: dev=254:0 slot=4294967295 nr=2 medium=none", True),
    ("  x-1 [000] ..... 5.0: nswap2l_migrate: dev=254:0 slot=0 nr=1 moved=2 from=netram to=flash", True),
    ("  x-1 [000] ..... 5.0: nswap2l_write: dev=254:0 slot=0 nr", True),
    ("  x-1 [000] ..... 5.0: nswap2l_write", True),
    ("  x-1 [000] ..... 5.0: sched_switch: prev_comm=x prev_pid=1", False),
    ("\x01\x02\x03 random bytes", False),
    ("CPU 0 is empty", False),
]


def random_trace(rng, fmt):
    """Events, garbage, and what the test knows the device's totals are."""
    nr_slots = rng.choice([16, 64, 300])
    t, out, bad = 100.0, [], 0
    totals = {"read": 0, "write": 0}
    for _ in range(rng.randint(1, 400)):
        t += rng.choice([0.0, 0.001, 0.05, 0.3, 2.5])
        if rng.random() < 0.05:
            text, looks = rng.choice(GARBAGE)
            out.append(text)
            bad += looks
            continue
        dev = "254:0" if rng.random() < 0.85 else "254:7"
        slot = rng.randrange(nr_slots)
        nr = rng.randint(0, min(40, nr_slots - slot))
        op = rng.choice(["write", "write", "read", "read", "free", "migrate"])
        if op == "migrate":
            out.append(line(fmt, t, op, "dev=%s slot=%d nr=%d moved=%d from=netram to=flash"
                            % (dev, slot, nr, rng.randint(0, nr))))
            continue
        out.append(line(fmt, t, op, "dev=%s slot=%d nr=%d medium=%s"
                        % (dev, slot, nr, rng.choice(MEDIA + ["none"]))))
        if dev == "254:0" and op in totals:
            totals[op] += nr
    return "\n".join(out) + "\n", bad, totals


def random_options(rng):
    args = []
    for opt, values in [("--netram-slots", ["0", "3", "50"]),
                        ("--flash-slots", ["0", "5", "40"]),
                        ("--disk-slots", ["0", "10"]),
                        ("--interval-ms", ["10", "250", "1000"]),
                        ("--seed", ["0", "1", "99"])]:
        if rng.random() < 0.5:
            args += [opt, rng.choice(values)]
    mode = rng.choice(["swapouts", "fixed", "netram"])
    amount = rng.randint(0, 300 if mode == "fixed" else 100)
    return args + ["--dev", "254:0", "--amount-mode", mode, "--amount", str(amount)]


@pytest.mark.parametrize("seed", range(30))
def test_random_traces_keep_the_books(tmp_path, seed):
    rng = random.Random(seed)
    fmt = ["tracefs", "trace-cmd", "perf"][seed % 3]
    text, bad, totals = random_trace(rng, fmt)
    path = tmp_path / "r.trace"
    path.write_text(text)
    args = random_options(rng) + ["--json", str(path)]
    p = run(args)
    if p.returncode == 1:       # the device may have drawn no events at all
        assert "no nswap2l events for device 254:0" in p.stderr
        return
    assert p.returncode == 0, p.stderr
    j = json.loads(p.stdout)
    assert j["trace"]["malformed"] == bad
    caps = j["model"]
    for name, r in j["policies"].items():
        assert sum(r["reads"].values()) + r["zero_reads"] == totals["read"], name
        assert sum(r["writes"].values()) + r["nospc_writes"] == totals["write"], name
        assert r["prefetch_hits"] <= r["prefetched"]
        for m in MEDIA:
            cap = caps[m + "_slots"]
            assert cap is None or r["held"][m] <= cap, (name, m)
        assert sum(r["held"].values()) <= caps["slots"]
    assert j["policies"]["none"]["prefetched"] == 0
    # the optimised build agrees with the sanitizer build to the byte
    assert run(args, binary=SIM_OPT).stdout == p.stdout
