"""``check_config_status``: one setting of GIMP's gimprc, a list of S-expressions such as
``(theme "Light")`` or ``(default-view (show-menubar no))``, read line by line as OSWorld reads it.
"""

from __future__ import annotations

from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.appstate.common import _LINE
from mcpworld.evaluation.metrics.general import read_text_strict, rule_value
from mcpworld.evaluation.registry import metric


def _gimprc_words(line: str) -> list[str]:
    """A gimprc line as OSWorld splits it: outer parentheses trimmed, then split on whitespace."""
    return line.strip().lstrip("(").rstrip(")\n").split()


@metric("check_config_status")
def check_config_status(result: str | None, rules: Any) -> float:
    """1 when some gimprc line sets ``rules["key"]`` to ``rules["value"]``, read line by line as OSWorld does.

    result = path of a gimprc (getter ``gimp_config_file``). Each line that is not a comment is
    trimmed of its outer parentheses and split on whitespace; it matches when its first word is the
    key and its last word is the value, quotes included (``(theme "Light")`` needs ``"\\"Light\\""``).
    A two-name key ``[form, setting]`` needs those as the first two words of one line. As in OSWorld,
    a value with spaces never matches, and a line holding only spaces before a match ends the scan
    with 0 (OSWorld raised there).
    """
    key = rule_value(rules, "key", "check_config_status")
    expected = rule_value(rules, "value", "check_config_status")
    if not isinstance(key, (str, list)):
        raise UserError(f"metric 'check_config_status': 'key' must be a name or a list of two names, got {key!r}")
    text = read_text_strict(result)
    if text is None:
        return 0.0
    for line in _LINE.findall(text):
        if line.startswith("#") or line == "\n":
            continue
        words = _gimprc_words(line)
        if not words:
            return 0.0
        if isinstance(key, str):
            if words[0] == key and words[-1] == expected:
                return 1.0
        elif len(key) == 2:
            if len(words) < 2:
                return 0.0
            if words[0] == key[0] and words[1] == key[1] and words[-1] == expected:
                return 1.0
    return 0.0
