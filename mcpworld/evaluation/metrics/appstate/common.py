"""What several app-state metrics share: a settings file's lines as a text file iterates them, and a
rules key whose value must be a list.
"""

from __future__ import annotations

import re
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.general import rule_value

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")  # lines as a text file iterates them (ends kept)


def _string_list(rules: dict[str, Any], key: str, metric_name: str) -> list[Any]:
    value = rule_value(rules, key, metric_name)
    if not isinstance(value, list):
        raise UserError(f"metric {metric_name!r}: {key!r} must be a list, got {value!r}")
    return value
