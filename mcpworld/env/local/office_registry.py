"""LibreOffice's settings file (``registrymodifications.xcu``): the items a first start adds, merged
into a golden profile's.

A first start records what makes later starts fast (the build its extension caches were checked
against, ``LastCompatibilityCheckID``; setup completed; the locale): without them every start re-checks
and re-registers the bundled extensions (≈ 0.4 s of CPU, 0.5 s to ready). But it also drops golden
items of the components it did not load (Impress's ``StartWithTemplate`` when Calc started), so the
warm layer keeps every golden item and adds only the new ones.
"""

from __future__ import annotations

import re

FILE_NAME = "registrymodifications.xcu"
ITEM = re.compile(r"<item\b.*?</item>", re.S)
# an item's identity: its configuration path and the name of the property or node it sets
KEY = re.compile(r'<item oor:path="([^"]*)">\s*<(?:prop|node) oor:name="([^"]*)"')


def item_key(item: str) -> tuple[str, str] | None:
    found = KEY.match(item)
    return (found.group(1), found.group(2)) if found else None


def merged(golden: str, started: str) -> str:
    """``golden`` with the items of ``started`` (the same file after a first start) that it lacks
    appended before its closing tag; golden items win where both set the same thing."""
    known = {item_key(item) for item in ITEM.findall(golden)}
    added = [item for item in ITEM.findall(started) if item_key(item) not in known]
    if not added:
        return golden
    end = golden.rindex("</oor:items>")
    return golden[:end] + "".join(item + "\n" for item in added) + golden[end:]
