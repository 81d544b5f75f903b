"""The ``wait_for`` vocabulary of oracle solutions: a replay step that waits for the desktop's state
(a window, a saved file, what the app shows) instead of sleeping a fixed time, so a solution holds on a
busy machine. Loaders check the steps with it; agent/tools/wait_for.py runs them (for the oracle only).

    - wait_for: {window: "^Confirm File Format$"}             # a window (title or class, regex) appears
    - wait_for: {window: "^Confirm File Format$", gone: true} # … and is gone again (a process, widget, text too)
    - wait_for: {file: ~/budget.xlsx, changed: true}         # written since the episode began (and since
                                                             #   the last wait_for that saw it written)
    - wait_for: {file: ~/notes.txt, contains: "TODO"}        # holds this text
    - wait_for: {process: "shellIntegration-bash"}           # a process of this desktop (command line, regex)
    - wait_for: {widget: "^Insert$", role: menu, state: selected}
                                                             # an accessible of the app (name and/or role,
                                                             #   regex; states it must have) in the AT-SPI tree
    - wait_for: {text: "Slide Transition", region: [600, 0, 1000, 300]}
                                                             # words on the screen (OCR, regex), in a region
    - wait_for: {screen: changed}                            # the screen differs from the frame before the
                                                             #   last computer action, then holds still
    - wait_for: {screen: still, region: [0, 0, 500, 80]}     # … only holds still (nothing left to draw)
    - wait_for: {..., timeout: 60}                           # seconds (default 30)

Conditions in one step must all hold at once. Names (window, widget, role, text) match case-insensitively;
a process's command line case-sensitively. ``screen: changed`` sees any change, a blinking caret's too:
give it a ``region`` without the caret, or wait for a widget instead.
"""

from __future__ import annotations

import re

from mcpworld.core.errors import TaskFileError

TOOL = "wait_for"
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
SCREEN = ("changed", "still")
# AT-SPI's state names as pyatspi.stateToString writes them (the a11y dump's st:* attributes)
STATES = frozenset(
    {
        "active",
        "armed",
        "busy",
        "checked",
        "collapsed",
        "defunct",
        "editable",
        "enabled",
        "expandable",
        "expanded",
        "focusable",
        "focused",
        "horizontal",
        "iconified",
        "modal",
        "multi line",
        "multiselectable",
        "opaque",
        "pressed",
        "resizable",
        "selectable",
        "selected",
        "sensitive",
        "showing",
        "single line",
        "stale",
        "transient",
        "vertical",
        "visible",
        "manages descendants",
        "indeterminate",
        "required",
        "truncated",
        "animated",
        "invalid entry",
        "supports autocompletion",
        "selectable text",
        "is default",
        "visited",
        "checkable",
        "has popup",
        "read only",
    }
)
KEYS: dict[str, type | tuple[type, ...]] = {
    "window": str,
    "process": str,
    "gone": bool,
    "file": str,
    "changed": bool,
    "contains": str,
    "widget": str,
    "role": str,
    "state": (str, list),
    "text": str,
    "region": list,
    "screen": str,
    "timeout": (int, float),
}
REGEXES = ("window", "process", "widget", "role", "text")
GOES = ("window", "process", "widget", "role", "text")  # what 'gone' can wait to disappear
WAITS_FOR = ("window", "process", "file", "widget", "role", "text", "screen")


def states(args: dict[str, object]) -> list[str]:
    """The ``state:`` of a widget wait as a list ('focused' or [focused, showing])."""
    value = args.get("state", [])
    if isinstance(value, str):
        return [value]
    return [str(s) for s in value] if isinstance(value, list) else []


def check_wait(args: dict[str, object], where: str) -> None:
    """A ``wait_for`` step's arguments, or one TaskFileError naming the file, the key and the fix."""
    unknown = sorted(set(args) - set(KEYS))
    if unknown:
        raise TaskFileError(f"{where}: wait_for has unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    for key, value in args.items():
        kind = KEYS[key]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TaskFileError(
                f"{where}: wait_for {key}={value!r} has the wrong type "
                "(window/process/file/contains/widget/role/text/screen: text, gone/changed: true or "
                "false, state: a state or a list of them, region: [x1, y1, x2, y2], timeout: seconds)"
            )
    if not set(WAITS_FOR) & set(args):
        raise TaskFileError(
            f"{where}: wait_for {args!r} waits for nothing; give 'window: REGEX', 'process: REGEX', "
            "'file: PATH', 'widget: REGEX' / 'role: REGEX', 'text: REGEX' and/or 'screen: changed'"
        )
    if "gone" in args and not set(GOES) & set(args):
        raise TaskFileError(
            f"{where}: wait_for 'gone' needs 'window', 'process', 'widget'/'role' or 'text' (what should disappear)"
        )
    for key in ("changed", "contains"):
        if key in args and "file" not in args:
            raise TaskFileError(f"{where}: wait_for {key!r} needs 'file' (the file to watch)")
    if "state" in args:
        if "widget" not in args and "role" not in args:
            raise TaskFileError(f"{where}: wait_for 'state' needs 'widget' or 'role' (the accessible that has it)")
        bad = [s for s in states(args) if s not in STATES]
        if bad or not states(args):
            raise TaskFileError(
                f"{where}: wait_for state={args['state']!r}: {', '.join(map(repr, bad)) or 'empty'} "
                f"is not an AT-SPI state; known: {', '.join(sorted(STATES))}"
            )
    if "screen" in args and args["screen"] not in SCREEN:
        raise TaskFileError(
            f"{where}: wait_for screen={args['screen']!r} must be 'changed' (since the last computer "
            "action, then still) or 'still'"
        )
    if "region" in args:
        region = args["region"]
        assert isinstance(region, list)
        if "text" not in args and "screen" not in args:
            raise TaskFileError(f"{where}: wait_for 'region' needs 'text' or 'screen' (what to look for in it)")
        if (
            len(region) != 4
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in region)
            or not 0 <= region[0] < region[2]
            or not 0 <= region[1] < region[3]
        ):
            raise TaskFileError(
                f"{where}: wait_for region={region!r} must be [x1, y1, x2, y2] in screen pixels with x1 < x2 and y1 < y2"
            )
    for key in REGEXES:
        try:
            re.compile(str(args.get(key, "")))
        except re.error as exc:
            raise TaskFileError(f"{where}: wait_for {key}={args[key]!r} is not a regular expression: {exc}") from None
    timeout = args.get("timeout", DEFAULT_TIMEOUT_S)
    assert isinstance(timeout, (int, float))
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise TaskFileError(f"{where}: wait_for timeout={timeout!r} must be between 0 and {MAX_TIMEOUT_S:g} seconds")
