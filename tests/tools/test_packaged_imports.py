# SPDX-License-Identifier: GPL-2.0-only
"""The tools package carries every module of userspace/pylib that n2lctl
and the generator import, and the modules those import, in turn: a module
left out breaks every n2lctl command of an installed system (stop 45's
pre-check: n2lctl imported n2lproto, which the package does not carry)."""
import ast
import os
import re

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYLIB = os.path.join(REPO, "userspace", "pylib")


def pylib_imports(path):
    """The userspace/pylib modules a file imports, at any level."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return {n for n in names if os.path.exists(os.path.join(PYLIB, f"{n}.py"))}


def needed(*tools):
    todo = set().union(*(pylib_imports(os.path.join(REPO, "userspace", t)) for t in tools))
    done = set()
    while todo:
        m = todo.pop()
        done.add(m)
        todo |= pylib_imports(os.path.join(PYLIB, f"{m}.py")) - done
    return done


def packaged():
    """The modules debian/rules installs, and those build-deb puts in the
    source it builds from: each must name them all."""
    with open(os.path.join(REPO, "packaging", "debian", "rules")) as f:
        rules = set(re.search(r"for m in ([\w ]+); do", f.read()).group(1).split())
    with open(os.path.join(REPO, "packaging", "build-deb")) as f:
        source = set(re.findall(r"userspace/pylib/(\w+)\.py", f.read()))
    return rules, source


def test_the_package_carries_every_module_the_tools_import():
    want = needed("n2lctl", "nswap2l-generator")
    rules, source = packaged()
    assert want <= rules, f"debian/rules does not install {sorted(want - rules)}"
    assert want <= source, f"build-deb does not ship {sorted(want - source)}"
    assert {"n2lkeys", "n2ltab"} <= want       # the walk finds what is there


def test_the_walk_follows_imports_of_imports(tmp_path):
    assert "n2lkeys" in needed("n2lctl")
    assert pylib_imports(os.path.join(PYLIB, "n2ltab.py")) >= {"n2lkeys"}
