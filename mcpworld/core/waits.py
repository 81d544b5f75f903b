"""The ``wait_for`` vocabulary of oracle solutions: a replay step that waits for the desktop's state
(a window, a saved file) instead of sleeping a fixed time, so a solution holds on a busy machine.
Loaders check the steps with it; agent/tools/wait_for.py runs them (for the oracle only).

    - wait_for: {window: "^Confirm File Format$"}             # a window (title or class, regex) appears
    - wait_for: {window: "^Confirm File Format$", gone: true} # … and is gone again (a process too)
    - wait_for: {file: ~/budget.xlsx, changed: true}         # written since the episode began (and since
                                                             #   the last wait_for that saw it written)
    - wait_for: {file: ~/notes.txt, contains: "TODO"}        # holds this text
    - wait_for: {process: "shellIntegration-bash"}           # a process of this desktop (command line, regex)
    - wait_for: {..., timeout: 60}                           # seconds (default 30)

Conditions in one step must all hold at once.
"""

from __future__ import annotations

import re

from mcpworld.core.errors import TaskFileError

TOOL = "wait_for"
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
KEYS: dict[str, type | tuple[type, ...]] = {
    "window": str, "process": str, "gone": bool,
    "file": str, "changed": bool, "contains": str, "timeout": (int, float)}


def check_wait(args: dict[str, object], where: str) -> None:
    """A ``wait_for`` step's arguments, or one TaskFileError naming the file, the key and the fix."""
    unknown = sorted(set(args) - set(KEYS))
    if unknown:
        raise TaskFileError(f"{where}: wait_for has unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    for key, value in args.items():
        kind = KEYS[key]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TaskFileError(f"{where}: wait_for {key}={value!r} has the wrong type "
                                f"(window/process/file/contains: text, gone/changed: true or false, timeout: seconds)")
    if not {"window", "process", "file"} & set(args):
        raise TaskFileError(f"{where}: wait_for {args!r} waits for nothing; give 'window: REGEX', 'process: REGEX' "
                            "and/or 'file: PATH'")
    if "gone" in args and "window" not in args and "process" not in args:
        raise TaskFileError(f"{where}: wait_for 'gone' needs 'window' or 'process' (what should disappear)")
    for key in ("changed", "contains"):
        if key in args and "file" not in args:
            raise TaskFileError(f"{where}: wait_for {key!r} needs 'file' (the file to watch)")
    for key in ("window", "process"):
        try:
            re.compile(str(args.get(key, "")))
        except re.error as exc:
            raise TaskFileError(f"{where}: wait_for {key}={args[key]!r} is not a regular expression: {exc}") from None
    timeout = args.get("timeout", DEFAULT_TIMEOUT_S)
    assert isinstance(timeout, (int, float))
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise TaskFileError(f"{where}: wait_for timeout={timeout!r} must be between 0 and {MAX_TIMEOUT_S:g} seconds")
