"""Live UI state from the accessibility tree: elements found by XPath or CSS selectors.

The tree is the XML the ``accessibility_tree`` getter returns (``mcpworld.env.a11y_dump``): element
names are roles (``push-button``), ``name`` is the accessible name, and the prefixes ``st:``
(states), ``attr:`` (object attributes), ``cp:`` (geometry) and ``val:`` (values) work in both
XPath (``//*[@st:focused="true"]``) and CSS (``push-button[attr|toolkit=gtk]``).
"""

from __future__ import annotations

from typing import Any

from lxml import etree
from lxml.cssselect import CSSSelector, SelectorError
from rapidfuzz import fuzz

from mcpworld.core.errors import UserError
from mcpworld.env.a11y_dump import NAMESPACES
from mcpworld.evaluation.registry import metric

NAME = "check_accessibility_tree"


def _parse(xml: Any) -> etree._Element | None:
    if not isinstance(xml, (str, bytes)) or not xml:
        return None
    try:
        return etree.fromstring(
            xml.encode() if isinstance(xml, str) else xml,
            parser=etree.XMLParser(huge_tree=True, resolve_entities=False, no_network=True),
        )
    except etree.XMLSyntaxError:
        return None


def _find(tree: etree._Element, rule: dict[str, Any], where: str) -> list[etree._Element]:
    if "xpath" in rule:
        try:
            hits = tree.xpath(rule["xpath"], namespaces=NAMESPACES)
        except etree.XPathError as exc:
            raise UserError(
                f"metric {NAME!r}: {where}.xpath {rule['xpath']!r} is not valid XPath ({exc}); "
                f"namespace prefixes: {', '.join(NAMESPACES)}"
            ) from exc
        return [e for e in hits if isinstance(e, etree._Element)] if isinstance(hits, list) else []
    selectors = rule.get("selectors")
    if isinstance(selectors, str):
        selectors = [selectors]
    if not isinstance(selectors, list) or not selectors:
        raise UserError(f"metric {NAME!r}: {where} needs 'xpath' or a non-empty 'selectors' list, got {rule!r}")
    found: list[etree._Element] = []
    for selector in selectors:
        try:
            found.extend(CSSSelector(str(selector), namespaces=NAMESPACES)(tree))
        except SelectorError as exc:
            raise UserError(f"metric {NAME!r}: {where} selector {selector!r} is not valid CSS ({exc})") from exc
    return found


@metric(NAME)
def check_accessibility_tree(result: Any, rules: Any, osname: str = "ubuntu") -> float:
    """Product over ``rules`` (a list of ``{xpath | selectors, text?, exact?}``) of each rule's score.

    A rule scores 0 when nothing matches; without ``text`` a match scores 1; with ``text`` the best
    matching element's text scores 1/0 under ``exact: true``, else its fuzzy ratio. ``osname`` is
    accepted for OSWorld task files; only Linux trees exist here.
    """
    if isinstance(rules, dict):
        rules = [rules]
    if not isinstance(rules, list) or not rules or not all(isinstance(r, dict) for r in rules):
        raise UserError(f"metric {NAME!r} needs rules as a non-empty list of {{xpath|selectors, text?, exact?}}, got {rules!r}")
    tree = _parse(result)
    if tree is None:
        return 0.0
    score = 1.0
    for i, rule in enumerate(rules):
        elements = _find(tree, rule, f"rules[{i}]")
        if not elements:
            return 0.0
        if "text" not in rule:
            continue
        want = str(rule["text"])
        texts = [e.text or "" for e in elements]
        if rule.get("exact", False):
            score *= float(want in texts)
        else:
            score *= max(fuzz.ratio(text, want) / 100.0 for text in texts)
        if score == 0.0:
            return 0.0
    return score


@metric("check_left_panel")
def check_left_panel(result: Any) -> float:
    """1 when LibreOffice Impress shows its slide pane: the tree has a ``document-frame`` named "Slides View".

    result: the ``accessibility_tree`` getter's XML. A closed pane leaves no such frame.
    """
    tree = _parse(result)
    if tree is None:
        return 0.0
    return float(any(frame.get("name") == "Slides View" for frame in tree.iter("document-frame")))
