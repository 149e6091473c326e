# SPDX-License-Identifier: GPL-2.0-only
"""The systemd units of one nswap2ltab entry (what nswap2l-generator
writes), in the manner of systemd-cryptsetup-generator.

Boot: nswap2l@NAME.service creates the device once the network is online
and its media have appeared, and runs mkswap when asked; the swap unit
swaps on it with its priority. Shutdown runs that order backwards: swap
goes off (every page read back from the servers) before the device is
removed, and the device is removed before the network goes down, because
each unit is ordered after what it needs. Nothing here is in swap.target
or local-fs.target: those are reached long before the network.
"""
import os


def escape_path(path):
    """systemd-escape --path: /dev/mapper/a-b -> dev-mapper-a\\x2db."""
    out = []
    for i, ch in enumerate(path.strip("/")):
        if ch == "/":
            out.append("-")
        elif ch.isascii() and (ch.isalnum() or ch in ":_" or (ch == "." and i)):
            out.append(ch)
        else:
            out.append("".join(f"\\x{b:02x}" for b in ch.encode()))
    return "".join(out) or "-"


def device_unit(path):
    return escape_path(path) + ".device"


def service_name(e):
    return f"nswap2l@{e.name}.service"


def swap_name(e):
    return escape_path(e.device) + ".swap"


def service_unit(e, n2lctl, tab):
    media = " ".join(device_unit(p) for p in e.devices)
    needs = [f"BindsTo={media}", f"After={media}"] if media else []
    return "\n".join([
        "# Written by nswap2l-generator from " + tab,
        "[Unit]",
        f"Description=nswap2l device {e.name}",
        "Documentation=man:nswap2ltab(5) man:n2lctl(8)",
        f"SourcePath={tab}",
        "Wants=network-online.target",
        "After=network-online.target systemd-modules-load.service",
        *needs,
        "Before=remote-fs.target",
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        # Keys live in this service's own session keyring, only while
        # n2lctl loads the table: the kernel copies them.
        "KeyringMode=private",
        f"ExecStart={n2lctl} tab start --tab {tab} {e.name}",
        f"ExecStop={n2lctl} tab stop --tab {tab} {e.name}",
        # Stopping reads back nothing (swap is already off), but a
        # server may be slow to answer FREE_ALL.
        "TimeoutSec=300",
        "",
    ])


def swap_unit(e, tab):
    priority = [f"Priority={e.priority}"] if e.priority is not None else []
    return "\n".join([
        "# Written by nswap2l-generator from " + tab,
        "[Unit]",
        f"Description=nswap2l swap on {e.device}",
        "Documentation=man:nswap2ltab(5)",
        f"SourcePath={tab}",
        # Not in swap.target (the default): that is reached before the
        # network, whose pages this swap holds.
        "DefaultDependencies=no",
        f"BindsTo={service_name(e)}",
        f"After={service_name(e)}",
        "Before=remote-fs.target umount.target",
        "Conflicts=umount.target",
        "",
        "[Swap]",
        f"What={e.device}",
        *priority,
        # Always: swap that does not discard leaves every slot it ever
        # used mapped, and a device larger than its media then fills them
        # all (writes fail with ENOSPC).
        "Options=discard",
        # swapoff reads every page back: from Network RAM that takes time.
        "TimeoutSec=600",
        "",
    ])


def device_timeout(tab):
    """A drop-in for the device's own unit. Whatever uses the device (the
    swap unit, a mount) waits for that unit, whose job would fail after
    systemd's default 90 s: less than a network can take to come up. The
    service's own timeout bounds the wait, as for crypttab's devices."""
    return "\n".join([
        "# Written by nswap2l-generator from " + tab,
        "[Unit]",
        "JobTimeoutSec=infinity",
        "",
    ])


def write(entries, unit_dir, n2lctl, tab):
    """Units and remote-fs.target.wants links for every entry."""
    wants = os.path.join(unit_dir, "remote-fs.target.wants")
    os.makedirs(wants, exist_ok=True)
    for e in entries.values():
        dropin = os.path.join(device_unit(e.device) + ".d", "40-device-timeout.conf")
        os.makedirs(os.path.join(unit_dir, os.path.dirname(dropin)), exist_ok=True)
        units = {service_name(e): service_unit(e, n2lctl, tab),
                 dropin: device_timeout(tab)}
        if e.swap:
            units[swap_name(e)] = swap_unit(e, tab)
        for name, text in units.items():
            with open(os.path.join(unit_dir, name), "w") as f:
                f.write(text)
        top = swap_name(e) if e.swap else service_name(e)
        link = os.path.join(wants, top)
        if not os.path.lexists(link):
            os.symlink(os.path.join("..", top), link)
