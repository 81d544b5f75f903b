"""Dump the AT-SPI accessibility tree of a display as XML (OSWorld's element/namespace shape).

This file is a script as well as a module: the environment runs its source with the
distribution's ``/usr/bin/python3`` (where Debian's python3-pyatspi lives) inside the episode's
display and D-Bus session, so it imports only the standard library at the top and pyatspi inside
``dump``. The harness imports it for ``NAMESPACES`` and ``dump_command``.

Shape: the root is ``<desktop-frame>``; each accessible is an element named after its role
(``page tab list`` → ``page-tab-list``) with ``name``, states as ``st:<state>="true"``, object
attributes as ``attr:<key>``, geometry as ``cp:screencoord``/``cp:size`` ("(x, y)"), numeric
values as ``val:*`` and its text content as the element text. Tables claim absurd child counts
(a Calc sheet reports 2^31-1), so children per node, depth, nodes and time are all capped.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

_NS_BASE = "https://mcpworld.invalid/ns/a11y/"
NAMESPACES = {prefix: _NS_BASE + prefix for prefix in ("st", "attr", "cp", "val")}
NO_PYATSPI = "MCPWORLD_NO_PYATSPI"  # on stderr when the interpreter lacks pyatspi

DEFAULT_LIMITS = {"max_depth": 60, "max_children": 500, "max_nodes": 20000, "max_text": 10000, "budget_s": 30.0}

_NAME_BAD = re.compile(r"[^A-Za-z0-9_.-]")


def _tag(role: str) -> str:
    tag = _NAME_BAD.sub("-", role.strip().replace(" ", "-")) or "unknown"
    return tag if re.match(r"[A-Za-z_]", tag) else "_" + tag


def _q(prefix: str, name: str) -> str:
    return f"{{{NAMESPACES[prefix]}}}{_tag(name)}"


def dump(limits: dict) -> str:
    import pyatspi  # Debian's python3-pyatspi; only under the system interpreter

    deadline = time.monotonic() + float(limits["budget_s"])
    counted = [0]

    def describe(node, parent):
        element = ET.SubElement(parent, _tag(node.getRoleName()), {"name": node.name or ""})
        states = node.getState()
        for state in states.getStates():
            element.set(_q("st", pyatspi.stateToString(state)), "true")
        try:
            for pair in node.getAttributes() or []:
                key, _, value = pair.partition(":")
                element.set(_q("attr", key), value)
        except Exception:
            pass
        try:
            component = node.queryComponent()
            x, y = component.getPosition(pyatspi.DESKTOP_COORDS)
            w, h = component.getSize()
            element.set(_q("cp", "screencoord"), f"({x}, {y})")
            element.set(_q("cp", "size"), f"({w}, {h})")
        except NotImplementedError:
            pass
        try:
            value = node.queryValue()
            for key, attribute in (("value", "currentValue"), ("min", "minimumValue"), ("max", "maximumValue")):
                element.set(_q("val", key), str(getattr(value, attribute)))
        except NotImplementedError:
            pass
        try:
            text = node.queryText()
            element.text = text.getText(0, min(text.characterCount, int(limits["max_text"])))
        except NotImplementedError:
            pass
        return element

    def walk(node, parent, depth):
        if counted[0] >= limits["max_nodes"] or time.monotonic() > deadline:
            parent.set("truncated", "true")
            return
        counted[0] += 1
        try:
            element = describe(node, parent)
            count = node.childCount
        except Exception:  # the app went away mid-dump, or a broken accessible
            return
        if depth >= limits["max_depth"]:
            return
        if count > limits["max_children"]:
            element.set("truncated", "true")
        for i in range(min(count, int(limits["max_children"]))):
            try:
                child = node.getChildAtIndex(i)
            except Exception:
                continue
            if child is not None:
                walk(child, element, depth + 1)

    for prefix, uri in NAMESPACES.items():
        ET.register_namespace(prefix, uri)
    root = ET.Element("desktop-frame", {"name": "desktop"})
    desktop = pyatspi.Registry.getDesktop(0)
    for i in range(desktop.childCount):
        app = desktop.getChildAtIndex(i)
        if app is not None:
            walk(app, root, 1)
    return ET.tostring(root, encoding="unicode")


def dump_command(python: str = "/usr/bin/python3", **limits: float) -> str:
    """A shell command that prints the tree of the display it runs in (its own source, inlined)."""
    merged = dict(DEFAULT_LIMITS, **limits)
    return shlex.join([python, "-c", Path(__file__).read_text(), json.dumps(merged)])


def main(limits: dict) -> None:
    try:
        import pyatspi  # noqa: F401
    except ImportError:
        print(NO_PYATSPI, file=sys.stderr)
        sys.exit(3)
    sys.stdout.write(dump(limits))


if __name__ == "__main__":
    main(dict(DEFAULT_LIMITS, **json.loads(sys.argv[1])) if len(sys.argv) > 1 else DEFAULT_LIMITS)
