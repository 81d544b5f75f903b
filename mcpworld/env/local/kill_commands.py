"""A setup step that stops programs (``pkill chrome``, ``killall vlc``) is done when they are gone.

``pkill``/``killall`` only send the signal: OSWorld's postconfig ``pkill chrome`` then
``google-chrome`` relies on the VM's browser having exited by the time the next one starts (else the
new one hands its window to the dying one, by Chromium's one-browser-per-profile rule, and none
appears). On a busy machine that is not so, so the step waits until no process of the desktop
matches what the command named, as ``pkill`` matches it: the process name (at most 15 characters)
against the pattern as a regex, the whole command line with ``-f``; ``killall``: the name exactly.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

NOT_ENDING = {"0", "STOP", "CONT", "TSTP"}
PKILL_OPTIONS_WITH_VALUE = {
    "-g",
    "-G",
    "-P",
    "-s",
    "-t",
    "-u",
    "-U",
    "--signal",
    "--pgroup",
    "--group",
    "--parent",
    "--session",
    "--terminal",
    "--euid",
    "--uid",
    "--ns",
    "--nslist",
}


@dataclass(frozen=True)
class Target:
    """What a kill command names: a name pattern, matched as pkill or killall matches it."""

    pattern: str
    full: bool = False  # pkill -f: the whole command line
    exact: bool = False  # killall, pkill -x: the whole name

    def matches(self, proc: psutil.Process) -> bool:
        try:
            text = " ".join(proc.cmdline()) if self.full else proc.name()[:15]
        except (psutil.Error, OSError):
            return False
        if self.exact:
            return text == (self.pattern if self.full else self.pattern[:15])
        try:
            return re.search(self.pattern, text) is not None
        except re.error:
            return self.pattern in text


def kill_target(argv: list[str]) -> Target | None:
    """The processes ``argv`` (a pkill or killall command) ends, or None for any other command (or a
    signal that does not end a program: 0, STOP, CONT)."""
    program, args = Path(argv[0]).name if argv else "", argv[1:]
    if program not in ("pkill", "killall"):
        return None
    flags: set[str] = set()
    names: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in PKILL_OPTIONS_WITH_VALUE:
            skip = True
        elif arg.startswith("--signal=") or re.fullmatch(r"-(\d+|[A-Z]+)", arg):  # -9, -TERM, --signal=KILL
            if arg.split("=")[-1].lstrip("-").upper().removeprefix("SIG") in NOT_ENDING:
                return None
        elif arg.startswith("--"):
            flags.add(arg[2:])
        elif arg.startswith("-") and len(arg) > 1:
            flags.update(arg[1:])
        else:
            names.append(arg)
    if len(names) != 1:
        return None
    full = program == "pkill" and bool(flags & {"f", "full"})
    return Target(names[0], full=full, exact=program == "killall" or bool(flags & {"x", "exact"}))


def await_gone(target: Target, pids: Callable[[], Iterable[int]], timeout_s: float) -> bool:
    """Until no process among ``pids()`` matches ``target`` (True) or ``timeout_s`` passed (False)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if not any(_matches(target, pid) for pid in pids()):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def _matches(target: Target, pid: int) -> bool:
    try:
        return target.matches(psutil.Process(pid))
    except psutil.Error:  # gone meanwhile
        return False
