# SPDX-License-Identifier: GPL-2.0-only
"""groups.py: the guests a run is shared out to, with the options that
change what the run holds."""
import groups
import profiles


def test_a_prefetch_run_asked_for_more_reps_boots_a_guest_for_each():
    # bench/run once split a run of 12 reps by the profile's 6: reps 6-11
    # never ran, and the run called itself whole
    assert groups.groups("prefetch", 2, ["--policies", "none,auto", "--reps", "12"]) == \
        [str(r) for r in range(12)]
    assert groups.groups("prefetch", 2, ["--reps=3"]) == ["0", "1", "2"]
    assert groups.groups("prefetch", 2, []) == \
        [str(r) for r in range(profiles.get("prefetch").reps)]


def test_the_profiles_runs_are_shared_by_cost_and_reps_count():
    for reps in (None, 4):
        argv = ["--reps", str(reps)] if reps else []
        got = groups.groups("quick", 2, argv)
        units = [profiles.parse_units(g) for g in got]
        assert len(got) == 2
        want = profiles.get("quick", **({"reps": reps} if reps else {})).all_units()
        assert sorted(u for g in units for u in g) == sorted(want)


def test_named_workloads_run_in_one_guest_but_not_for_the_sweep():
    assert groups.groups("quick", 2, ["--workloads", "wl1,wl2"]) == ["wl1,wl2"]
    got = groups.groups("sweep", 2, ["--workloads", "wl1"])
    assert len(got) == 2 and all("/" in g for g in got)
