# SPDX-License-Identifier: GPL-2.0-only
"""/etc/nswap2ltab: the nswap2l devices a machine sets up at boot, one a
line, in the manner of crypttab (nswap2ltab(5)):

    <name> <media> <servers> <policies> <options>

    nswap0  flash=/dev/nvme0n1p3  10.0.0.2:7070,10.0.0.3:7070  netram-first,lrs:percent=25  size=8G,swap,pri=10

Every field but the name may be "-" (none, or the defaults). The parser
is strict: a line it does not understand is an error naming the file and
line, never a device made differently from what was meant.
"""
import re

import n2lkeys

TAB = "/etc/nswap2ltab"
PSK_FILE = "/etc/nswap2l/psk"

# Unit instance names allow these; a name is used unescaped in nswap2l@NAME.
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
SERVER_RE = re.compile(r"^(\d{1,3}(\.\d{1,3}){3}|\[[0-9A-Fa-f:.]+\]):\d{1,5}$")
MEDIA = ("flash", "disk")
FLAGS = ("swap", "discard", "no-discard-passdown")
VALUED = ("size", "pri", "replicas", "psk", "psk-file", "encrypt-key", "metadata")


class TabError(Exception):
    pass


class Entry:
    """One line: what n2lctl needs to create the device and what the
    generator needs to order its units."""

    def __init__(self, name, media, servers, placement, prefetch, options):
        self.name = name
        self.media = media              # {"flash": path, "disk": path}
        self.servers = servers
        self.placement = placement      # (policy, [key, value, ...])
        self.prefetch = prefetch
        self.options = options          # {flag: True, key: value}

    @property
    def swap(self):
        return "swap" in self.options

    @property
    def priority(self):
        return self.options.get("pri")

    @property
    def device(self):
        return f"/dev/mapper/{self.name}"

    @property
    def devices(self):
        """The block devices it is made of: media, then metadata."""
        meta = [self.options["metadata"]] if "metadata" in self.options else []
        return [*self.media.values(), *meta]


def _split(field):
    return [] if field == "-" else field.split(",")


def _media(field, where):
    media = {}
    for item in _split(field):
        kind, _, path = item.partition("=")
        if kind not in MEDIA or not path.startswith("/"):
            raise TabError(f"{where}: media are flash=/dev/... and disk=/dev/..., not '{item}'")
        if kind in media:
            raise TabError(f"{where}: {kind} given twice")
        media[kind] = path
    return media


def _servers(field, where):
    servers = _split(field)
    for s in servers:
        if not SERVER_RE.match(s):
            raise TabError(f"{where}: server '{s}' is not a.b.c.d:port or [v6]:port")
    return servers


def _policy(item, where):
    """'name[:key=value]...' as (name, [key, value, ...])."""
    name, *pairs = item.split(":")
    args = []
    for p in pairs:
        key, eq, value = p.partition("=")
        if not key or not eq or not value:
            raise TabError(f"{where}: policy argument '{p}' is not key=value")
        args += [key, value]
    if not name:
        raise TabError(f"{where}: empty policy name in '{item}'")
    return name, args


def _policies(field, where):
    items = _split(field)
    if len(items) > 2:
        raise TabError(f"{where}: policies are placement[,prefetch], not '{field}'")
    placement = _policy(items[0], where) if items else ("netram-first", [])
    prefetch = _policy(items[1], where) if len(items) > 1 else ("none", [])
    return placement, prefetch


def _options(field, where):
    options = {}
    for item in _split(field):
        key, eq, value = item.partition("=")
        if key in FLAGS and not eq:
            options[key] = True
        elif key in VALUED and eq and value:
            options[key] = value
        else:
            raise TabError(f"{where}: unknown option '{item}' (options: "
                           f"{', '.join(FLAGS)}, {'=, '.join(VALUED)}=)")
    for key in ("pri", "replicas"):
        if key in options and not re.match(r"^-?\d+$", options[key]):
            raise TabError(f"{where}: {key}={options[key]} is not a number")
    if "metadata" in options and not options["metadata"].startswith("/"):
        raise TabError(f"{where}: metadata={options['metadata']} is not a path (/dev/...)")
    if "pri" in options and "swap" not in options:
        raise TabError(f"{where}: pri= without swap")
    if "discard" in options and "swap" not in options:
        raise TabError(f"{where}: discard without swap")
    return options


def parse_line(line, where):
    words = line.split()
    if len(words) != 5:
        raise TabError(f"{where}: {len(words)} fields; a line is "
                       "<name> <media> <servers> <policies> <options>")
    name, media, servers, policies, options = words
    if not NAME_RE.match(name):
        raise TabError(f"{where}: name '{name}' (letters, digits, _ . -; at most 64)")
    e = Entry(name, _media(media, where), _servers(servers, where),
              *_policies(policies, where), _options(options, where))
    if not e.media and not e.servers:
        raise TabError(f"{where}: {name} has neither media nor servers")
    if e.options.get("metadata") in e.media.values():
        raise TabError(f"{where}: {name}'s metadata device is one of its media")
    if e.servers and "size" not in e.options:
        raise TabError(f"{where}: {name} has servers, so it needs size=")
    return e


def parse(text, path=TAB):
    """Every entry of the tab's text; names are unique."""
    entries = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        e = parse_line(line, f"{path}:{n}")
        if e.name in entries:
            raise TabError(f"{path}:{n}: {e.name} appears twice")
        entries[e.name] = e
    return entries


def read(path=TAB):
    try:
        with open(path) as f:
            return parse(f.read(), path)
    except FileNotFoundError:
        return {}


def entry(name, path=TAB):
    e = read(path).get(name)
    if e is None:
        raise TabError(f"{path}: no device {name}")
    return e


def read_psk(path, identity):
    """The 32-byte key of identity from a file of '<identity> <64 hex
    digits> [peer]' lines (nswapd's --psk-file format)."""
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            words = raw.split("#", 1)[0].split()
            if len(words) in (2, 3) and words[0] == identity:
                return _hex_key(words[1], f"{path}:{n}")
    raise TabError(f"{path}: no key for identity {identity}")


def read_key_file(path):
    """A file holding one key as 64 hex digits."""
    with open(path) as f:
        text = f.read()
    lineno = text[:len(text) - len(text.lstrip())].count("\n") + 1
    return _hex_key(text.strip(), f"{path}:{lineno}")


def _hex_key(text, where):
    if not re.match(r"^[0-9A-Fa-f]{64}$", text):
        raise TabError(f"{where}: a key is 64 hex digits")
    key = bytes.fromhex(text)
    weak = n2lkeys.refusal(key, where)
    if weak:
        raise TabError(weak)
    return key
