# SPDX-License-Identifier: GPL-2.0-only
"""The metadata device of the metadata:<dev> feature, read offline, as
thin_check and thin_dump read dm-thin's: `n2lctl meta check` and
`n2lctl meta dump`. The format (version 2) is dm-nswap2l/nswap2l-meta.h's,
which is authoritative; in short, in 4 KiB blocks, little-endian:

    block 0, 1        superblock copies; generation G's is in block G % 2
    2 .. 2+M-1        map area 0, M = ceil(nr_slots / 510) map blocks
    2+M .. 2+2M-1     map area 1; generation G's map is in area G % 2
    2+2M, 2+2M+1      the Network RAM blocks of areas 0 and 1 (the servers
                      at each index, each replica group's members, the
                      version a loaded device goes on from)

Version 1 has no Network RAM blocks (its Network RAM slots are lost at
load); it is read too.

The committed map is that of the valid superblock of the highest
generation. Writer makes images the way the kernel commits, for the tests
and as the format in executable form.
"""
import dataclasses
import errno
import ipaddress
import os
import stat
import struct
import uuid

BLOCK = 4096
MAGIC = 0x314154454d4c324e      # "N2LMETA1"
VERSION = 2
V1 = 1                          # without the Network RAM blocks
CSUM_SEED = 0x6e326c6d
SB_BLOCKS = 2
ENTRIES = 510                   # per map block
CLEAN = 0x1                     # superblock flag: written as the device closed

# enum n2l_medium (dm-nswap2l/n2l-types.h): an entry's bits 0..1.
NONE, NETRAM, FLASH, DISK = range(4)
MEDIUM_NAMES = ("none", "netram", "flash", "disk")
TITLES = ("none", "Network RAM", "Flash", "disk")
MEDIUM_MASK = 0x3
LOST = 0x4 << 2                 # SME_LOST << SME_FLAGS_SHIFT
RESERVED = 0xec                 # the volatile flags: ~N2L_META_ENTRY_MASK
LOC_SHIFT = 8
GROUP_BITS = 8                  # of a Network RAM location, below the version
SERVERS = 64                    # server indices of a device
GROUPS = 1 << GROUP_BITS
REPLICAS = 3                    # members of a group at most
NO_SERVER = 0xff                # a group's unused member
AF_INET, AF_INET6 = 2, 10

SB = struct.Struct("<IIQ16sQIIIIIIQ")
MAP_HEADER = struct.Struct("<IIQ")
MAP_ENTRIES = struct.Struct(f"<{ENTRIES}Q")
NETRAM_HEADER = struct.Struct("<IIQQQ")     # csum, servers, gen, vers_floor, reserved
SERVER = struct.Struct("<H2s16s")           # family, port (big-endian), address

EXIT_OK, EXIT_ERRORS, EXIT_UNFORMATTED = 0, 1, 2

# ----------------------------------------------------------------------
# Checksums


def _crc32c_table():
    table = []
    for byte in range(256):
        c = byte
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return tuple(table)


_CRC32C = _crc32c_table()


def crc32c(data):
    """The standard CRC-32C (Castagnoli, as iSCSI and ext4 use it)."""
    crc = 0xffffffff
    table = _CRC32C
    for byte in data:
        crc = table[(crc ^ byte) & 0xff] ^ (crc >> 8)
    return crc ^ 0xffffffff


def block_csum(block):
    """The kernel's crc32c(~0, block + 4, BLOCK - 4) ^ N2L_META_CSUM_SEED.
    The kernel's crc32c() leaves out the standard final inversion, which
    is why the standard one is inverted back here."""
    return (crc32c(block[4:BLOCK]) ^ 0xffffffff) ^ CSUM_SEED


def csum_ok(block):
    return len(block) == BLOCK and struct.unpack_from("<I", block)[0] == block_csum(block)


def seal(block):
    """The block with its checksum filled in."""
    block = bytearray(block)
    struct.pack_into("<I", block, 0, block_csum(block))
    return bytes(block)

# ----------------------------------------------------------------------
# Layout and entries


def map_blocks(nr_slots):
    return -(-nr_slots // ENTRIES)


def device_blocks(nr_slots, version=VERSION):
    """Blocks a metadata device needs for nr_slots: n2l_meta_blocks()."""
    return SB_BLOCKS + 2 * map_blocks(nr_slots) + (2 if version > V1 else 0)


def netram_block_nr(area, nr_map_blocks):
    return SB_BLOCKS + 2 * nr_map_blocks + area


def area_start(area, nr_map_blocks):
    return SB_BLOCKS + area * nr_map_blocks


def entry(med, loc=0, lost=False):
    """An on-disk map entry: sme_make() less the volatile flags."""
    return (loc << LOC_SHIFT) | (LOST if lost else 0) | med


def netram_loc(group, version):
    """sme_netram_loc(): the replica group below the version."""
    return (version << GROUP_BITS) | group


def entry_medium(e):
    return e & MEDIUM_MASK


def entry_loc(e):
    return e >> LOC_SHIFT


def entry_lost(e):
    """sme_lost(): the flag counts only on a slot that is on no medium."""
    return entry_medium(e) == NONE and bool(e & LOST)


def entry_group(e):
    return entry_loc(e) & ((1 << GROUP_BITS) - 1)


def entry_version(e):
    return entry_loc(e) >> GROUP_BITS


def describe(e):
    """An entry as dump prints it: where the slot's data is."""
    m = entry_medium(e)
    if m == NETRAM:
        return f"group {entry_group(e)} version {entry_version(e)}"
    if m in (FLASH, DISK):
        return f"block {entry_loc(e)}"
    return "lost" if entry_lost(e) else "-"


def entry_json(slot, e):
    out = {"slot": slot, "medium": MEDIUM_NAMES[entry_medium(e)]}
    if entry_medium(e) == NETRAM:
        out.update(group=entry_group(e), version=entry_version(e))
    elif entry_medium(e) in (FLASH, DISK):
        out["block"] = entry_loc(e)
    else:
        out["lost"] = entry_lost(e)
    return out

# ----------------------------------------------------------------------
# Superblocks


@dataclasses.dataclass
class Superblock:
    version: int
    magic: int
    uuid: bytes
    gen: int
    nr_slots: int
    map_blocks: int
    flash_blocks: int
    disk_blocks: int
    flags: int
    entries: int
    commits: int

    @classmethod
    def unpack(cls, block):
        return cls(*SB.unpack_from(block)[1:])

    def pack(self):
        fields = SB.pack(0, *dataclasses.astuple(self))
        return seal(fields + bytes(BLOCK - SB.size))

    def as_json(self):
        d = dataclasses.asdict(self)
        d["uuid"] = str(uuid.UUID(bytes=self.uuid))
        d["clean"] = bool(self.flags & CLEAN)
        return d


def pack_map_block(index, gen, values):
    """Map block index of its area, written by commit gen; values are the
    entries of its slots, the rest of the block zero."""
    values = list(values)
    values += [0] * (ENTRIES - len(values))
    return seal(MAP_HEADER.pack(0, index, gen) + MAP_ENTRIES.pack(*values))

# ----------------------------------------------------------------------
# Network RAM blocks


def pack_server(addr):
    """A server's "a.b.c.d:port" or "[v6]:port" as struct n2l_meta_server;
    None: no server."""
    if addr is None:
        return bytes(SERVER.size)
    host, _, port = addr.rpartition(":")
    if host.startswith("["):
        family, raw = AF_INET6, ipaddress.IPv6Address(host[1:-1]).packed
    else:
        family, raw = AF_INET, ipaddress.IPv4Address(host).packed.ljust(16, b"\0")
    return SERVER.pack(family, int(port).to_bytes(2, "big"), raw)


def unpack_server(raw):
    """(address or None, problem or None) of a struct n2l_meta_server."""
    family, port, addr = SERVER.unpack(raw)
    port = int.from_bytes(port, "big")
    if family == 0:
        return None, (None if not any(raw) else "no family, but bytes set")
    if family == AF_INET:
        text = f"{ipaddress.IPv4Address(addr[:4])}:{port}"
        if any(addr[4:]):
            return text, "bytes set after its IPv4 address"
    elif family == AF_INET6:
        text = f"[{ipaddress.IPv6Address(addr)}]:{port}"
    else:
        return None, f"unknown address family {family}"
    return text, (None if port else "port 0")


def pack_netram_block(gen, vers_floor, servers, groups):
    """The Network RAM block of commit gen: servers {index: address},
    groups {group: sorted member indices}."""
    raw_groups = bytearray([NO_SERVER] * (GROUPS * REPLICAS))
    for g, members in groups.items():
        raw_groups[g * REPLICAS:g * REPLICAS + len(members)] = bytes(members)
    raw_servers = b"".join(pack_server(servers.get(i)) for i in range(SERVERS))
    body = (NETRAM_HEADER.pack(0, SERVERS, gen, vers_floor, 0) + bytes(raw_groups)
            + raw_servers)
    return seal(body + bytes(BLOCK - len(body)))


@dataclasses.dataclass
class NetramBlock:
    nr: int                 # on the device
    vers_floor: int
    servers: dict           # index -> address
    groups: dict            # group -> member indices, of groups with members
    ok: bool


def _netram_block(m, raw, nr, area):
    """The Network RAM block of the committed area, checked."""
    where = f"block {nr} (Network RAM block of area {area})"
    if not csum_ok(raw):
        m.error(f"{where}: checksum mismatch; Network RAM slots are not checked")
        return NetramBlock(nr, 0, {}, {}, False)
    _, servers, gen, floor, _ = NETRAM_HEADER.unpack_from(raw)
    ok = True
    if servers != SERVERS:
        m.error(f"{where}: {servers} servers, not {SERVERS}")
        ok = False
    if gen != m.sb.gen:
        m.error(f"{where}: written by generation {gen}, not the superblock's {m.sb.gen}")
        ok = False
    if not 0 < floor < 1 << 48:
        m.error(f"{where}: version floor {floor} is not a version")
        ok = False
    at = NETRAM_HEADER.size + GROUPS * REPLICAS
    addrs = {}
    for i in range(SERVERS):
        addr, problem = unpack_server(raw[at + i * SERVER.size:at + (i + 1) * SERVER.size])
        if problem:
            m.error(f"{where}: server {i}: {problem}")
            ok = False
        if addr:
            addrs[i] = addr
    groups = {}
    for g in range(GROUPS):
        row = raw[NETRAM_HEADER.size + g * REPLICAS:NETRAM_HEADER.size + (g + 1) * REPLICAS]
        members = [x for x in row if x != NO_SERVER]
        if (list(row[:len(members)]) != members or members != sorted(set(members))
                or any(x not in addrs for x in members)):
            m.error(f"{where}: group {g}: members {list(row)} are not sorted servers "
                    f"it names")
            ok = False
        elif members:
            groups[g] = members
    if any(raw[at + SERVERS * SERVER.size:]):
        m.error(f"{where}: bytes after the servers are not zero")
    return NetramBlock(nr, floor, addrs, groups, ok)

# ----------------------------------------------------------------------
# Reading a device


@dataclasses.dataclass
class MapBlock:
    nr: int             # on the device
    first_slot: int
    values: tuple       # the entries of its slots, nr_slots and beyond left out
    ok: bool            # checksum and header good: its entries were checked


class Meta:
    """What a metadata device holds, and everything wrong with it."""

    def __init__(self):
        self.errors = []
        self.warnings = []
        self.unformatted = False
        self.sb = None              # the committed superblock
        self.sb_block = None
        self.map = []               # MapBlocks of the committed area, read
        self.netram = None          # its NetramBlock (format 2)
        self.counts = {name: 0 for name in (*MEDIUM_NAMES, "lost")}
        self.netram_lost = 0        # Network RAM slots a load marks lost

    def error(self, text):
        self.errors.append(text)

    def warn(self, text):
        self.warnings.append(text)

    @property
    def status(self):
        if self.unformatted:
            return EXIT_UNFORMATTED
        return EXIT_ERRORS if self.errors else EXIT_OK

    def entries(self):
        """(slot, entry) of the committed map, as far as it was read."""
        for mb in self.map:
            yield from enumerate(mb.values, mb.first_slot)


def open_device(path):
    """A block device opened O_EXCL, which fails (EBUSY) while a table
    holds it: a live device's map changes under the reader."""
    flags = os.O_RDONLY
    if stat.S_ISBLK(os.stat(path).st_mode):
        flags |= os.O_EXCL
    try:
        return os.fdopen(os.open(path, flags), "rb")
    except OSError as err:
        if err.errno == errno.EBUSY:
            raise OSError(err.errno, f"{path} is in use (by a device's table?); "
                          "check it once the device is removed") from err
        raise


def read_block(f, nr):
    f.seek(nr * BLOCK)
    return f.read(BLOCK)


def load(path):
    """Read and check the device at path: a Meta, errors and all."""
    m = Meta()
    with open_device(path) as f:
        size = f.seek(0, os.SEEK_END)
        if size < SB_BLOCKS * BLOCK:
            m.error(f"device is {size} bytes, too small for the superblocks "
                    f"({SB_BLOCKS * BLOCK} bytes)")
            return m
        raws = [read_block(f, nr) for nr in range(SB_BLOCKS)]
        if not any(any(raw) for raw in raws):
            m.unformatted = True
            return m
        valid = _superblocks(raws, m)
        if not valid:
            return m
        for nr, sb in valid.items():
            _check_superblock(m, nr, sb, size)
        _check_uuids(m, valid)
        m.sb_block = max(valid, key=lambda nr: valid[nr].gen)
        m.sb = valid[m.sb_block]
        _warn_torn(m, raws)
        if _layout_known(m.sb):
            _read_map(m, f)
    return m


def _superblocks(raws, m):
    """{block: Superblock} of the copies the committed map can come from.
    A copy whose checksum fails is left for _warn_torn(): that is a crash
    during its write, which the format is there to survive."""
    valid = {}
    for nr, raw in enumerate(raws):
        if not any(raw) or not csum_ok(raw):
            continue
        sb = Superblock.unpack(raw)
        if sb.magic != MAGIC:
            m.error(f"block {nr}: checksum good but magic {sb.magic:#018x} is not nswap2l's")
        elif sb.version > VERSION:
            # Its map may be laid out otherwise: nothing else can be judged.
            m.error(f"block {nr}: format version {sb.version} is newer than "
                    f"this tool's ({VERSION})")
            return {}
        elif sb.version not in (V1, VERSION):
            m.error(f"block {nr}: unknown format version {sb.version}")
        else:
            if any(raw[SB.size:]):
                m.error(f"block {nr}: bytes after the superblock's fields are not zero")
            valid[nr] = sb
    if not valid and not m.errors:
        m.error("not an nswap2l metadata device or both superblocks corrupt")
    return valid


def _check_superblock(m, nr, sb, size):
    where = f"block {nr} (superblock of generation {sb.gen})"
    if sb.gen % 2 != nr:
        m.error(f"{where}: generation {sb.gen} belongs in block {sb.gen % 2}")
    if sb.entries != ENTRIES:
        m.error(f"{where}: {sb.entries} entries a map block, not {ENTRIES}")
    if sb.map_blocks != map_blocks(sb.nr_slots):
        m.error(f"{where}: map_blocks {sb.map_blocks}, but {sb.nr_slots} slots "
                f"need {map_blocks(sb.nr_slots)}")
    if sb.flags & ~CLEAN:
        m.error(f"{where}: unknown flags {sb.flags & ~CLEAN:#x}")
    blocks = device_blocks(sb.nr_slots, sb.version)
    if size < blocks * BLOCK:
        m.error(f"{where}: device is {size} bytes, too small: {sb.nr_slots} slots "
                f"need {blocks * BLOCK} bytes ({blocks} blocks)")


def _check_uuids(m, valid):
    """Both copies come from one format: a copy left from an earlier one
    could otherwise win by its higher generation."""
    if len({sb.uuid for sb in valid.values()}) > 1:
        m.error("blocks 0 and 1: the superblocks' uuids differ (copies of different formats)")


def _warn_torn(m, raws):
    for nr, raw in enumerate(raws):
        if any(raw) and not csum_ok(raw):
            m.warn(f"block {nr}: superblock checksum mismatch (torn by a crash "
                   f"during a commit?); using generation {m.sb.gen} in block {m.sb_block}")


def _layout_known(sb):
    """Whether the areas are where the format puts them: if a field that
    places them is wrong, every map block read would be a guess."""
    return sb.entries == ENTRIES and sb.map_blocks == map_blocks(sb.nr_slots)


def _read_map(m, f):
    sb = m.sb
    area = sb.gen % 2
    holders = {}        # (medium, block) -> [(slot, map block), ...]
    if sb.version > V1:
        nr = netram_block_nr(area, sb.map_blocks)
        raw = read_block(f, nr)
        if len(raw) == BLOCK:
            m.netram = _netram_block(m, raw, nr, area)
    for index in range(sb.map_blocks):
        nr = area_start(area, sb.map_blocks) + index
        raw = read_block(f, nr)
        if len(raw) < BLOCK:
            break       # the superblock's check said the device is too small
        mb = _map_block(m, raw, nr, index, area)
        m.map.append(mb)
        if mb.ok:
            for slot, e in enumerate(mb.values, mb.first_slot):
                _check_entry(m, slot, e, nr, holders)
    _check_shared(m, holders)


def _map_block(m, raw, nr, index, area):
    """Map block index of the committed area, its header checked."""
    sb = m.sb
    first = index * ENTRIES
    count = min(ENTRIES, sb.nr_slots - first)
    where = f"block {nr} (map block {index} of area {area}, slots {first}-{first + count - 1})"
    _, stored_index, gen = MAP_HEADER.unpack_from(raw)
    values = MAP_ENTRIES.unpack_from(raw, MAP_HEADER.size)
    ok = csum_ok(raw)
    if not ok:
        m.error(f"{where}: checksum mismatch; its slots are not checked")
    else:
        if stored_index != index:
            m.error(f"{where}: index {stored_index}, not {index}")
            ok = False
        if gen > sb.gen:
            m.error(f"{where}: written by generation {gen}, after the superblock's {sb.gen}")
            ok = False
        if any(values[count:]):
            m.error(f"{where}: entries past slot {sb.nr_slots - 1} are not zero")
    return MapBlock(nr, first, values[:count], ok)


def _check_entry(m, slot, e, nr, holders):
    where = f"block {nr}, slot {slot}"
    med = entry_medium(e)
    if e & RESERVED:
        m.error(f"{where}: reserved bits {e & RESERVED:#x} set in entry {e:#018x}")
    if med != NONE and e & LOST:
        m.error(f"{where}: lost flag on a slot on {TITLES[med]}")
    if med == NONE and entry_loc(e):
        m.error(f"{where}: a location ({entry_loc(e)}) on a slot on no medium")
    if med in (FLASH, DISK):
        _check_block(m, where, med, entry_loc(e))
        holders.setdefault((med, entry_loc(e)), []).append((slot, nr))
    if med == NETRAM:
        _check_netram(m, where, e)
    m.counts["lost" if entry_lost(e) else MEDIUM_NAMES[med]] += 1


def _check_netram(m, where, e):
    """A Network RAM slot: a load keeps it if its group has a server and
    its version lies below the floor; format 1 keeps none."""
    nb = m.netram
    if m.sb.version == V1 or (nb and not nb.ok):
        m.netram_lost += 1
        return
    if nb is None:
        return
    vers = entry_version(e)
    if not 0 < vers < nb.vers_floor:
        m.error(f"{where}: Network RAM version {vers} is not below the floor "
                f"{nb.vers_floor}")
    if entry_group(e) not in nb.groups:
        m.netram_lost += 1


def _check_block(m, where, med, blk):
    """A block of Flash or disk within the media the map was written for."""
    name = TITLES[med]
    blocks = m.sb.flash_blocks if med == FLASH else m.sb.disk_blocks
    if blk >> 32:
        m.error(f"{where}: {name} location {blk:#x} is wider than a block number (32 bits)")
    elif not blocks:
        m.error(f"{where}: on {name}, but the map was written for no {name}")
    elif blk >= blocks:
        m.error(f"{where}: {name} block {blk} is beyond the {blocks} blocks of {name}")


def _check_shared(m, holders):
    """Two slots on one block: a write of either destroys the other."""
    for (med, blk), slots in sorted(holders.items()):
        if len(slots) > 1:
            who = ", ".join(f"slot {slot} (block {nr})" for slot, nr in slots)
            m.error(f"{TITLES[med]} block {blk} is held by {len(slots)} slots: {who}")

# ----------------------------------------------------------------------
# Reports


def summary(m):
    """check's last line."""
    if m.unformatted:
        return "unformatted (the kernel formats a zeroed device on first load)"
    verdict = "OK" if not m.errors else _plural(len(m.errors), "error")
    if m.warnings:
        verdict += ", " + _plural(len(m.warnings), "warning")
    if m.sb is None:
        return f"no committed map: {verdict}"
    sb, c = m.sb, m.counts
    state = "clean" if sb.flags & CLEAN else "not closed cleanly"
    slots = ", ".join(f"{c[name]} {title}" for name, title in
                      (*zip(MEDIUM_NAMES, TITLES), ("lost", "lost")))
    if m.netram_lost:
        slots += f" ({m.netram_lost} of the Network RAM ones lost at load)"
    return (f"generation {sb.gen} (block {m.sb_block}), {_plural(sb.commits, 'commit')}, "
            f"{state}; {sb.nr_slots} slots: {slots}; {verdict}")


def _plural(n, word):
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def check_lines(m):
    """Every problem, errors first, then the summary."""
    return ([f"error: {e}" for e in m.errors] + [f"warning: {w}" for w in m.warnings]
            + [summary(m)])


def dump_lines(m, all_slots=False):
    sb = m.sb
    lines = [f"superblock     block {m.sb_block}",
             f"version        {sb.version}",
             f"magic          {sb.magic:#018x}",
             f"uuid           {uuid.UUID(bytes=sb.uuid)}",
             f"generation     {sb.gen}",
             f"commits        {sb.commits}",
             f"flags          {sb.flags:#x}{' (clean)' if sb.flags & CLEAN else ''}",
             f"nr_slots       {sb.nr_slots}",
             f"map_blocks     {sb.map_blocks}",
             f"flash_blocks   {sb.flash_blocks}",
             f"disk_blocks    {sb.disk_blocks}",
             f"entries        {sb.entries}"]
    nb = m.netram
    if nb:
        lines.append(f"vers_floor     {nb.vers_floor}")
        lines += [f"server {i:<7} {addr}" for i, addr in sorted(nb.servers.items())]
        lines += [f"group {g:<8} servers {' '.join(map(str, members))}"
                  for g, members in sorted(nb.groups.items())]
    lines.append(f"{'slot':>10} {'medium':<7} location")
    for slot, e in m.entries():
        if e or all_slots:
            lines.append(f"{slot:>10} {MEDIUM_NAMES[entry_medium(e)]:<7} {describe(e)}")
    return lines


def dump_json(m, all_slots=False):
    out = {"superblock": {"block": m.sb_block, **m.sb.as_json()},
           "entries": [entry_json(slot, e) for slot, e in m.entries() if e or all_slots]}
    if m.netram:
        nb = m.netram
        out["netram"] = {"block": nb.nr, "vers_floor": nb.vers_floor,
                         "servers": {str(i): a for i, a in sorted(nb.servers.items())},
                         "groups": {str(g): ms for g, ms in sorted(nb.groups.items())}}
    return out

# ----------------------------------------------------------------------
# Writing images


class Writer:
    """Images as the kernel's commits leave them: generation G's map (and
    in format 2 its Network RAM block: servers, groups and vers_floor as
    set on the Writer) into area G % 2, then its superblock into block
    G % 2. Each commit writes its whole area (the kernel writes only the
    blocks that changed)."""

    def __init__(self, path, nr_slots, flash_blocks=0, disk_blocks=0, gen=1,
                 uuid_bytes=bytes(range(16)), version=VERSION):
        self.path = path
        self.version = version
        self.servers = {}           # index -> address, for format 2
        self.groups = {}            # group -> members
        self.vers_floor = 1 << 28
        self.nr_slots = nr_slots
        self.flash_blocks = flash_blocks
        self.disk_blocks = disk_blocks
        self.gen = gen              # of the next commit
        self.commits = 0
        self.uuid = uuid_bytes
        with open(path, "wb") as f:
            f.truncate(device_blocks(nr_slots, version) * BLOCK)

    def superblock(self, gen, clean):
        return Superblock(self.version, MAGIC, self.uuid, gen, self.nr_slots,
                          map_blocks(self.nr_slots), self.flash_blocks, self.disk_blocks,
                          CLEAN if clean else 0, ENTRIES, self.commits + 1)

    def commit(self, entries=None, clean=True):
        """Commit the map {slot: entry} (entries as entry() makes them, or
        any u64); the generation committed."""
        entries = entries or {}
        gen, m = self.gen, map_blocks(self.nr_slots)
        with open(self.path, "r+b") as f:
            for index in range(m):
                slots = range(index * ENTRIES, min((index + 1) * ENTRIES, self.nr_slots))
                f.seek((area_start(gen % 2, m) + index) * BLOCK)
                f.write(pack_map_block(index, gen, (entries.get(s, 0) for s in slots)))
            if self.version > V1:
                f.seek(netram_block_nr(gen % 2, m) * BLOCK)
                f.write(pack_netram_block(gen, self.vers_floor, self.servers, self.groups))
            f.seek(gen % 2 * BLOCK)
            f.write(self.superblock(gen, clean).pack())
        self.gen += 1
        self.commits += 1
        return gen


def format_image(path, nr_slots, flash_blocks=0, disk_blocks=0, entries=None, gen=1,
                 clean=True, version=VERSION, servers=None, groups=None):
    """An image whose committed map is entries at generation gen (with
    format 2's servers and groups); its Writer, to commit more."""
    w = Writer(path, nr_slots, flash_blocks, disk_blocks, gen, version=version)
    w.servers = dict(servers or {})
    w.groups = dict(groups or {})
    w.commit(entries, clean)
    return w
