"""Metrics over LibreOffice's settings, read from its registrymodifications.xcu (an XML list of
``<item oor:path>`` entries): Writer's default font, the locale, the autosave interval, Impress's
presenter console.
"""

from __future__ import annotations

import fnmatch
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric

OOR = "{http://openoffice.org/2001/registry}"
# Enough for any real profile; a bigger file is not a LibreOffice settings file.
XCU_MAX_BYTES = 64 * 1024 * 1024


def _parse_xml_safely(path: str | None) -> ET.Element | None:
    """Root of a local XML file, or None. Documents with a DTD are refused: without one there are no
    entity declarations, so neither external entities nor entity expansion can happen."""
    if not path or not Path(path).is_file():
        return None
    try:
        data = Path(path).read_bytes()[: XCU_MAX_BYTES + 1]
    except OSError:
        return None
    if len(data) > XCU_MAX_BYTES or re.search(rb"<!DOCTYPE|<!ENTITY", data, re.I):
        return None
    try:
        return ET.fromstring(data)
    except ET.ParseError:
        return None


def _items(root: ET.Element, path: str) -> list[ET.Element]:
    """``<item oor:path=path>`` elements anywhere in the document, in document order."""
    return [item for item in root.iter("item") if item.get(f"{OOR}path") == path]


def _props(element: ET.Element, name: str, direct: bool = False) -> list[ET.Element]:
    """``<prop oor:name=name>`` children (``direct``) or descendants of ``element``."""
    found = element.findall("prop") if direct else [p for p in element.iter("prop") if p is not element]
    return [prop for prop in found if prop.get(f"{OOR}name") == name]


@metric("find_default_font")
def find_default_font(result: str | None, rules: Any) -> float:
    """1 when LibreOffice Writer's default font (DefaultFont ``Standard``) is ``rules["font_name"]``.

    result = path of registrymodifications.xcu (getter ``libreoffice_config`` / ``vm_file``). As in
    OSWorld the last ``<value>`` of a ``Standard`` prop under a DefaultFont item counts, compared
    exactly (no trimming). ``rules["font_type"]`` (ours) picks another DefaultFont entry.
    Never changed, or an unreadable file = 0.
    """
    expected = rule_value(rules, "font_name", "find_default_font")
    font_type = rule_value(rules, "font_type", "find_default_font", default="Standard")
    root = _parse_xml_safely(result)
    if root is None:
        return 0.0
    font = None
    for item in _items(root, "/org.openoffice.Office.Writer/DefaultFont"):
        for prop in _props(item, font_type):
            for value in prop.findall("value"):
                font = value.text
    return float(font is not None and font == expected)


def _locale_values(root: ET.Element, prop_name: str) -> list[ET.Element]:
    """``<value>`` children of ``prop_name`` props directly under items whose path ends in ``L10N``."""
    return [
        value
        for item in root.iter("item")
        if item.get(f"{OOR}path", "").endswith("L10N")
        for prop in _props(item, prop_name, direct=True)
        for value in prop.findall("value")
    ]


@metric("check_libre_locale")
def check_libre_locale(result: str | None, rules: Any) -> float:
    """1 when LibreOffice's locale setting matches a ``rules["locale_set"]`` pattern (case-sensitive
    fnmatch globs such as ``"de-*"``).

    result = path of registrymodifications.xcu. As in OSWorld the first ``ooSetupSystemLocale``
    value of an ``…L10N`` item is the locale, else the first ``ooLocale`` one; neither, or an empty
    value, scores 0.
    """
    patterns = rule_value(rules, "locale_set", "check_libre_locale")
    if not isinstance(patterns, (list, str)) or not all(isinstance(p, str) for p in patterns):
        raise UserError(f"metric 'check_libre_locale': locale_set must be a list of patterns, got {patterns!r}")
    root = _parse_xml_safely(result)
    if root is None:
        return 0.0
    values = _locale_values(root, "ooSetupSystemLocale") or _locale_values(root, "ooLocale")
    locale = values[0].text if values else None
    if locale is None:
        return 0.0
    return float(any(fnmatch.fnmatchcase(locale, pattern) for pattern in patterns))


@metric("check_auto_saving_time")
def check_auto_saving_time(result: str | None, rules: Any) -> float:
    """1 when LibreOffice's autosave interval (``/org.openoffice.Office.Common/Save/Document``
    ``AutoSaveTimeIntervall``, minutes) equals ``rules["minutes"]``.

    result = path of registrymodifications.xcu (as OSWorld reads it for Impress). As in OSWorld the
    last such item counts, its value must be an integer (spaces allowed) equal to the rule value as
    Python compares them (``"3"`` is not 3); unset, empty, not a number or no file scores 0.
    """
    minutes = rule_value(rules, "minutes", "check_auto_saving_time")
    root = _parse_xml_safely(result)
    if root is None:
        return 0.0
    interval = None
    for item in _items(root, "/org.openoffice.Office.Common/Save/Document"):
        props = _props(item, "AutoSaveTimeIntervall")
        if props:
            value = props[0].find(".//value")
            if value is None:
                return 0.0  # OSWorld raised here
            interval = value.text
    if interval is None:
        return 0.0
    try:
        return float(int(interval) == minutes)
    except ValueError:
        return 0.0


@metric("check_presenter_console_disable")
def check_presenter_console_disable(result: str | None) -> float:
    """1 when Impress's presenter console is switched off: the first ``EnablePresenterScreen`` prop of
    ``/org.openoffice.Office.Impress/Misc/Start`` has the value ``false`` (any case, not trimmed),
    as OSWorld reads it. Unset (LibreOffice's default: on), empty or no file scores 0.

    result = path of registrymodifications.xcu.
    """
    root = _parse_xml_safely(result)
    if root is None:
        return 0.0
    props = [
        prop
        for item in _items(root, "/org.openoffice.Office.Impress/Misc/Start")
        for prop in _props(item, "EnablePresenterScreen", direct=True)
    ]
    if not props:
        return 0.0
    value = props[0].find("value")
    text = value.text if value is not None else None
    return float(text is not None and text.lower() == "false")
