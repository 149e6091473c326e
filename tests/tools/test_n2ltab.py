# SPDX-License-Identifier: GPL-2.0-only
"""/etc/nswap2ltab's parser and the units nswap2l-generator writes from it
(no VM: tests/boot boots a guest with them)."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "userspace", "pylib"))
import n2ltab  # noqa: E402
import n2lunits  # noqa: E402

GOOD = """\
# name  media                          servers                       policies                     options
swap0   flash=/dev/vdb,disk=/dev/vdc   10.0.0.2:7070,[fd00::2]:7070  netram-first,lrs:percent=25  size=8G,swap,pri=10,discard,psk=node7
scratch disk=/dev/disk/by-id/x-y       -                             -                            -   # trailing comment
fs      flash=/dev/vdd                 -                             -                            metadata=/dev/vde
"""


def test_a_good_tab_parses_into_what_the_table_line_needs():
    tab = n2ltab.parse(GOOD)
    s = tab["swap0"]
    assert s.media == {"flash": "/dev/vdb", "disk": "/dev/vdc"}
    assert s.servers == ["10.0.0.2:7070", "[fd00::2]:7070"]
    assert s.placement == ("netram-first", [])
    assert s.prefetch == ("lrs", ["percent", "25"])
    assert s.swap and s.priority == "10" and s.options["psk"] == "node7"
    d = tab["scratch"]
    assert d.media == {"disk": "/dev/disk/by-id/x-y"} and not d.servers and not d.swap
    assert d.placement == ("netram-first", []) and d.prefetch == ("none", [])
    assert "metadata" not in d.options and d.devices == ["/dev/disk/by-id/x-y"]
    f = tab["fs"]
    assert f.options["metadata"] == "/dev/vde" and f.devices == ["/dev/vdd", "/dev/vde"]


@pytest.mark.parametrize("line,why", [
    ("a flash=/dev/x - -", "4 fields"),
    ("a/b flash=/dev/x - - -", "name 'a/b'"),
    ("-a flash=/dev/x - - -", "name '-a'"),
    ("a ssd=/dev/x - - -", "not 'ssd=/dev/x'"),
    ("a flash=dev/x - - -", "not 'flash=dev/x'"),
    ("a flash=/dev/x,flash=/dev/y - - -", "flash given twice"),
    ("a - - - -", "neither media nor servers"),
    ("a - 10.0.0.2:7070 - -", "needs size="),
    ("a - nfs.example:7070 - size=1G", "not a.b.c.d:port"),
    ("a flash=/dev/x - p:percent -", "'percent' is not key=value"),
    ("a flash=/dev/x - a,b,c -", "placement[,prefetch]"),
    ("a flash=/dev/x - - swp", "unknown option 'swp'"),
    ("a flash=/dev/x - - pri=high,swap", "pri=high is not a number"),
    ("a flash=/dev/x - - pri=3", "pri= without swap"),
    ("a flash=/dev/x - - size", "unknown option 'size'"),
    ("a flash=/dev/x - - metadata=vde", "metadata=vde is not a path"),
    ("a flash=/dev/x - - metadata", "unknown option 'metadata'"),
    ("a flash=/dev/x - - metadata=/dev/x", "metadata device is one of its media"),
])
def test_a_bad_line_is_refused_naming_the_file_line_and_fault(line, why):
    with pytest.raises(n2ltab.TabError) as e:
        n2ltab.parse("# ok\n" + line + "\n", "/etc/nswap2ltab")
    assert str(e.value).startswith("/etc/nswap2ltab:2: ") and why in str(e.value)


def test_a_name_twice_is_refused():
    with pytest.raises(n2ltab.TabError, match="appears twice"):
        n2ltab.parse("a flash=/dev/x - - -\na disk=/dev/y - - -\n")


# Keys that look random (from /dev/urandom, fixed here): n2lctl refuses
# keys with a pattern.
KEY7 = "3e9a51c70fd2846be1a05c93f7284db6190ce57a2bf3806dc4519e27a86bf01d"
KEY8 = "a47c02e95b318fd6630ebf4821d97a5c0e83f2b6d4196ac5f70b2e8d4c13a956"
MAKE_ONE = "make a random one with: head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'"


def test_keys_come_from_nswapd_style_files(tmp_path):
    psk = tmp_path / "psk"
    psk.write_text(f"# identities\nother {KEY8}\nnode7 {KEY7}\n")
    assert n2ltab.read_psk(str(psk), "node7") == bytes.fromhex(KEY7)
    with pytest.raises(n2ltab.TabError, match="no key for identity nobody"):
        n2ltab.read_psk(str(psk), "nobody")
    short = tmp_path / "short"
    short.write_text("abcd\n")
    with pytest.raises(n2ltab.TabError, match="64 hex digits"):
        n2ltab.read_key_file(str(short))
    one = tmp_path / "pages.key"
    one.write_text(KEY8 + "\n")
    assert n2ltab.read_key_file(str(one)) == bytes.fromhex(KEY8)


def n2lctl(*args):
    return subprocess.run([os.path.join(REPO, "userspace", "n2lctl"), *args],
                          capture_output=True, text=True)


def test_server_key_binds_the_identitys_key_to_each_server(tmp_path):
    """The lines to give each server instead of the identity's own key,
    for a client's psk file and for a peer's (nswapd's, with "peer")."""
    import n2lproto
    psk = tmp_path / "psk"
    psk.write_text(f"node7 {KEY7}\nsrv-a {KEY8} peer\n")
    r = n2lctl("server-key", "node7", "010.1.0.5:07070", "[FD00:0::12]:7077",
               "--psk-file", str(psk))
    assert r.returncode == 0, r.stderr
    k7 = bytes.fromhex(KEY7)
    assert r.stdout == (f"# 10.1.0.5:7070\nnode7 {n2lproto.bound_key(k7, '10.1.0.5:7070').hex()}\n"
                        f"# [fd00::12]:7077\nnode7 {n2lproto.bound_key(k7, '[fd00::12]:7077').hex()}\n")
    r = n2lctl("server-key", "srv-a", "10.1.0.6:7077", "--peer", "--psk-file", str(psk))
    bound = n2lproto.bound_key(bytes.fromhex(KEY8), "10.1.0.6:7077").hex()
    assert r.returncode == 0 and r.stdout == f"# 10.1.0.6:7077\nsrv-a {bound} peer\n", r.stderr


@pytest.mark.parametrize("args,why", [
    (["nobody", "10.1.0.5:7070"], "no key for identity nobody"),
    (["node7", "10.1.0.5"], "'10.1.0.5': not a.b.c.d:port or [v6]:port"),
    (["node7", "10.1.0.5:0"], "not a.b.c.d:port"),
    (["node7", "[fd00::g]:1"], "not a.b.c.d:port"),
])
def test_server_key_refuses_what_it_cannot_bind(tmp_path, args, why):
    psk = tmp_path / "psk"
    psk.write_text(f"node7 {KEY7}\n")
    r = n2lctl("server-key", *args, "--psk-file", str(psk))
    assert r.returncode == 1 and why in r.stderr and not r.stdout


@pytest.mark.parametrize("key,why", [
    ("00" * 32, "its bytes take 8 or fewer distinct values"),
    ("ab" * 32, "its bytes take 8 or fewer distinct values"),
    (bytes(range(32)).hex(), "the steps between neighbouring bytes take 8 or fewer distinct values"),
    (KEY7[:32] * 2, "it repeats itself every 16 bytes or fewer"),
])
def test_weak_keys_are_refused_naming_the_file_line_and_a_command(tmp_path, key, why):
    psk = tmp_path / "psk"
    psk.write_text(f"# identities\nother {KEY8}\nnode7 {key}\n")
    with pytest.raises(n2ltab.TabError) as e:
        n2ltab.read_psk(str(psk), "node7")
    assert str(e.value) == f"{psk}:3: the key is too weak ({why}): {MAKE_ONE}"
    one = tmp_path / "pages.key"
    one.write_text(f"\n{key}\n")
    with pytest.raises(n2ltab.TabError) as e:
        n2ltab.read_key_file(str(one))
    assert str(e.value) == f"{one}:2: the key is too weak ({why}): {MAKE_ONE}"


def test_the_generator_orders_units_after_the_network_and_media(tmp_path):
    n2lunits.write(n2ltab.parse(GOOD), str(tmp_path), "/usr/sbin/n2lctl", "/etc/nswap2ltab")
    svc = (tmp_path / "nswap2l@swap0.service").read_text()
    assert "After=network-online.target" in svc and "Wants=network-online.target" in svc
    assert "BindsTo=dev-vdb.device dev-vdc.device" in svc
    assert "ExecStart=/usr/sbin/n2lctl tab start --tab /etc/nswap2ltab swap0" in svc
    assert "ExecStop=/usr/sbin/n2lctl tab stop --tab /etc/nswap2ltab swap0" in svc
    swap = (tmp_path / "dev-mapper-swap0.swap").read_text()
    # Not in swap.target, which is reached before the network: a cycle.
    assert "DefaultDependencies=no" in swap and "Before=swap.target" not in swap
    assert "BindsTo=nswap2l@swap0.service" in swap and "After=nswap2l@swap0.service" in swap
    assert "Priority=10" in swap and "Options=discard" in swap
    wants = sorted(os.listdir(tmp_path / "remote-fs.target.wants"))
    assert wants == ["dev-mapper-swap0.swap", "nswap2l@fs.service", "nswap2l@scratch.service"]
    assert not (tmp_path / "dev-mapper-scratch.swap").exists()
    escaped = (tmp_path / "nswap2l@scratch.service").read_text()
    assert "BindsTo=dev-disk-by\\x2did-x\\x2dy.device" in escaped
    # the metadata device is waited for as the media are
    fs = (tmp_path / "nswap2l@fs.service").read_text()
    assert "BindsTo=dev-vdd.device dev-vde.device" in fs and "After=dev-vdd.device dev-vde.device" in fs


def test_swap_goes_on_with_discards_whether_the_tab_says_so_or_not(tmp_path):
    """Swap without discards leaves every slot it ever used mapped: a
    device larger than its media fills them all and writes then fail with
    ENOSPC (issue 24). "discard" is the default, still accepted."""
    tab = n2ltab.parse("plain flash=/dev/vdb - - swap\nsaid flash=/dev/vdc - - swap,discard\n")
    n2lunits.write(tab, str(tmp_path), "/usr/sbin/n2lctl", "/etc/nswap2ltab")
    for name in ("plain", "said"):
        assert "Options=discard" in (tmp_path / f"dev-mapper-{name}.swap").read_text()


def test_the_device_waits_for_the_network_past_systemds_default_timeout(tmp_path):
    """Swap (or a mount) waits for the device's unit, whose job would
    otherwise fail after 90 s, long before a slow network comes up."""
    n2lunits.write(n2ltab.parse(GOOD), str(tmp_path), "/usr/sbin/n2lctl", "/etc/nswap2ltab")
    for name in ("swap0", "scratch"):
        dropin = tmp_path / f"dev-mapper-{name}.device.d" / "40-device-timeout.conf"
        assert "[Unit]\nJobTimeoutSec=infinity\n" in dropin.read_text()


def test_unit_names_escape_as_systemd_escape_does():
    for path in ("/dev/mapper/a-b", "/dev/disk/by-id/x.y_z:1", "/dev/.hidden"):
        want = subprocess.run(["systemd-escape", "--path", path], capture_output=True,
                              text=True, check=True).stdout.strip()
        assert n2lunits.escape_path(path) == want


def test_a_broken_tab_gets_no_units_and_an_error(tmp_path):
    gen = os.path.join(REPO, "userspace", "nswap2l-generator")
    tab = tmp_path / "tab"
    tab.write_text("a flash=/dev/x - - swp\n")
    p = subprocess.run([os.path.join(REPO, "userspace", "n2lctl"),
                        "tab", "check", "--tab", str(tab)], capture_output=True, text=True)
    assert p.returncode != 0 and "unknown option 'swp'" in p.stderr
    assert os.access(gen, os.X_OK)
