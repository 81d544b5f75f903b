"""``check_moved_jpgs``: the entries of a directory (getter ``list_directory``) against the expected names."""

from __future__ import annotations

from typing import Any

from mcpworld.evaluation.metrics.appstate.common import _string_list
from mcpworld.evaluation.registry import metric


@metric("check_moved_jpgs")
def check_moved_jpgs(result: Any, rules: Any) -> float:
    """1 when the directory holds exactly the files ``rules["expected"]`` (a list of names).

    result = entry names (our getter ``list_directory``) or OSWorld's tree ``{"children": [{"name"}…]}``
    (a tree without ``children`` or a child without ``name`` scores 0, as OSWorld raised).
    Compared as sets, and the counts must agree.
    """
    expected = _string_list(rules, "expected", "check_moved_jpgs")
    if isinstance(result, dict):
        try:
            result = [child["name"] for child in result["children"]]
        except (KeyError, TypeError):
            return 0.0
    if not isinstance(result, list):
        return 0.0
    names = [str(name) for name in result]
    return float(len(names) == len(expected) and set(names) == {str(e) for e in expected})
