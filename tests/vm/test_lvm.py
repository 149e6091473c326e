# SPDX-License-Identifier: GPL-2.0-only
"""Flash and disk on LVM logical volumes (lvm2 over the emulated devices,
one volume group per medium): fio verify and swap under memory pressure
over nswap2l stacked on them, with discards passed down through the
volume to the Flash device."""
import os

import n2l
from n2l import sh, table_line
from test_io import fio_verify, swap_workload

MB = 1 << 20
CONF = "/tmp/n2l/lvm"
# lvm2 on its own: only our devices (null_blk, a type it does not know),
# no udev (libdevmapper makes the nodes itself, DM_DISABLE_UDEV), no
# metadata backups in /etc.
LVM_CONF = """\
devices {
    filter = [ "a|^/dev/n2lvm|", "r|.*|" ]
    types = [ "nullb", 16 ]
    use_devicesfile = 0
}
activation { udev_sync = 0 udev_rules = 0 monitoring = 0 }
backup { backup = 0 archive = 0 }
"""


def lvm(cmd):
    return sh(f"LVM_SYSTEM_DIR={CONF} DM_DISABLE_UDEV=1 {cmd}")


class VolumeGroup:
    """A volume group on one emulated device, and one volume of size_mb in
    it; remove() takes both away (the lab removes media in reverse)."""

    def __init__(self, name, pv, size_mb):
        os.makedirs(CONF, exist_ok=True)
        with open(f"{CONF}/lvm.conf", "w") as f:
            f.write(LVM_CONF)
        self.name = name
        lvm(f"pvcreate -q -y {pv.path}")
        lvm(f"vgcreate -q {name} {pv.path}")
        lvm(f"lvcreate -q -y -L {size_mb}M -n slots {name}")
        self.pv = pv
        self.path = f"/dev/{name}/slots"
        n2l.wait_for(lambda: os.path.exists(self.path), timeout=10, what=self.path)

    def remove(self):
        lvm(f"vgremove -q -f {self.name}")
        lvm(f"pvremove -q -y {self.pv.path}")


def lvm_media(lab):
    """Flash (discard) and disk volumes of 64 and 128 MiB, their devices."""
    fpv = lab.nullb(80, discard=True, prefix="n2lvm")
    dpv = lab.nullb(160, prefix="n2lvm")
    flash, disk = VolumeGroup("n2lflash", fpv, 64), VolumeGroup("n2ldisk", dpv, 128)
    lab.media += [flash, disk]
    return flash, disk


def test_fio_verify_over_flash_and_disk_on_lvm(lab):
    flash, disk = lvm_media(lab)
    dev = lab.device("n2l-lvm", table_line(192 << 11, flash.path, disk.path))
    fio_verify(dev.path, "randrw", "16k", "160M", iodepth=8)
    st = dev.status()
    assert st["flash"]["held"] == 16384 and st["disk"]["held"] > 0, st


def test_swap_over_flash_and_disk_on_lvm(lab):
    flash, disk = lvm_media(lab)
    dev = lab.device("n2l-lvm-swap", table_line(192 << 11, flash.path, disk.path))
    p, st = swap_workload(dev, limit_mb=48, vm_mb=128, seconds=30, discard=True)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert not [ln for ln in out.splitlines()
                if "fail" in ln.lower() and "failed: 0" not in ln.lower()], out
    swapped = (st["flash"]["write_sectors"] + st["disk"]["write_sectors"]) * 512
    assert swapped >= 32 * MB, f"only {swapped} bytes swapped out"
    sh(f"swapoff {dev.path}")
    # Freed swap slots are discarded, down through the volume to the device.
    assert dev.status()["discarded"] > 0
    assert flash.pv.stat()["discards"] > 0
