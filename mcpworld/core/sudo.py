"""What a suite's ``sudo`` in a setup command asks for, and when a desktop without root has it anyway.

OSWorld's steps run ``echo {CLIENT_PASSWORD} | sudo -S apt-get install -y jq`` on a VM where the
account may be root. A desktop on this host never grants root (env=local), but most of these items
only make sure a program is there: when the desktop has every package already, the item is
satisfied and runs as ``true``; the rest of the line runs as written. An item is satisfied when it is

- ``apt``/``apt-get update``: it refreshes package lists only;
- ``apt``/``apt-get install P…``: every P is installed (dpkg says so);
- ``pip``/``pip3``/``python3 -m pip install P…``: the desktop's python3 has every P;
- ``su [-] USER`` with no command: a login shell on the exhausted pipe, which exits at once.

``sudo mkdir [-p] ~/…`` (folders in the home only) runs as the desktop's account without sudo: the
folder is the account's rather than root's, which changes nothing a task in the home does with it
(renaming or moving an entry needs write access to the folder it is in, the account's own).
Anything else (``sudo mkdir /opt/x``, ``sudo su - charles -c …``) needs root, and env=local skips the task.
"""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

from mcpworld.core.shell_words import ASSIGNMENT, WRAPPERS, items, tokens, unquote

SUDO_OPTIONS_WITH_VALUE = WRAPPERS["sudo"][0]
PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9+._-]*")  # a name, before =version, :arch, [extras], >=…
APT = ("apt", "apt-get")
PIP = ("pip", "pip3")


@dataclass(frozen=True)
class SudoItem:
    """One top-level item of a command line that runs sudo: what it asks root to do."""

    text: str  # the item as written (``echo password | sudo -S apt-get install -y jq``)
    start: int
    end: int
    kind: str  # "noop", "apt", "pip", "home" (runs as the account) or "root" (needs root for real)
    packages: tuple[str, ...] = ()
    unprivileged: str = ""  # for "home": the command sudo runs, as written, to run without it

    @property
    def given(self) -> bool:
        """Satisfied on any desktop, with nothing to check (a list refresh, an empty login, a folder
        in the home that the account makes itself)."""
        return self.kind in ("noop", "home")

    def check_script(self) -> str | None:
        """A bash script that exits 0 where this item is satisfied; None when nothing needs checking."""
        if self.kind == "apt":
            names = " ".join(shlex.quote(p) for p in self.packages)
            return (
                f"for p in {names}; do dpkg-query -W -f='${{db:Status-Status}}' \"$p\" 2>/dev/null "
                "| grep -qx installed || exit 1; done"
            )
        if self.kind == "pip":
            names = " ".join(shlex.quote(p) for p in self.packages)
            return (
                f"python3 -c 'import importlib.metadata as m, sys; [m.distribution(n) for n in sys.argv[1:]]' {names} 2>/dev/null"
            )
        return None

    def install_hint(self) -> str:
        """How to make this item satisfied on the machine that runs the desktop."""
        names = " ".join(self.packages)
        if self.kind == "apt":
            return f"install it on this machine (`apt-get install -y {names}`) and the step needs no root"
        if self.kind == "pip":
            return f"install it for Debian's python3 on this machine (`apt-get install -y python3-{names}`)"
        return "env=docker grants it inside the container"


def sudo_items(command: str) -> list[SudoItem]:
    """The items of a shell command line that call sudo, each classified."""
    found = []
    for start, end in items(command):
        text = command[start:end]
        for element in _pipeline(text):
            words = [unquote(w) for w in element]
            while words and ASSIGNMENT.match(words[0]):
                words = words[1:]
            if words and words[0] == "sudo":
                after = _after_sudo(words[1:])
                kind, packages = classify(after)
                written = " ".join(element[len(element) - len(after) :]) if kind == "home" else ""
                found.append(SudoItem(text, start, end, kind, packages, written))
                break
    return found


def _pipeline(text: str) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for token in tokens(text):
        if token.kind == "op":
            out.append([])
        elif token.kind == "word":
            out[-1].append(token.text)
    return [e for e in out if e]


def _after_sudo(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) and words[i].startswith("-"):
        i += 1 if words[i] == "--" else 2 if words[i] in SUDO_OPTIONS_WITH_VALUE else 1
        if words[i - 1] == "--":
            break
    words = words[i:]
    while words and ASSIGNMENT.match(words[0]):  # sudo DEBIAN_FRONTEND=noninteractive apt-get …
        words = words[1:]
    return words


def classify(argv: list[str]) -> tuple[str, tuple[str, ...]]:
    """(kind, packages) of the command sudo runs."""
    if not argv:
        return "root", ()
    program = argv[0].rsplit("/", 1)[-1]
    rest = argv[1:]
    if program in ("python", "python3") and rest[:2] == ["-m", "pip"]:
        program, rest = "pip", rest[2:]
    args = [a for a in rest if not a.startswith("-")]
    if program in APT and args[:1] == ["update"] and len(args) == 1:
        return "noop", ()
    if program in APT + PIP and args[:1] == ["install"]:
        flags_with_files = {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-t", "--target"}
        names = [PACKAGE.match(a) for a in args[1:]]
        if not args[1:] or set(rest) & flags_with_files or not all(names) or any("/" in a for a in args[1:]):
            return "root", ()
        return ("apt" if program in APT else "pip"), tuple(m.group(0) for m in names if m)
    if (
        program == "mkdir"
        and args
        and all(a in ("-p", "--parents", "-v") for a in rest if a.startswith("-"))
        and all(a.startswith(("~/", "$HOME/")) and ".." not in a.split("/") for a in args)
    ):
        return "home", ()
    if (
        program == "su"
        and all(a in ("-", "-l", "--login") or not a.startswith("-") for a in rest)
        and len([a for a in rest if not a.startswith("-")]) <= 1
    ):
        return "noop", ()
    return "root", ()


Satisfied = Callable[[SudoItem], bool]


def unmet(command: str, satisfied: Satisfied) -> list[SudoItem]:
    """The sudo items of ``command`` that still need root where ``satisfied`` looks."""
    return [item for item in sudo_items(command) if item.kind == "root" or not satisfied(item)]


def without_satisfied(command: str, satisfied: Satisfied) -> str:
    """``command`` with each satisfied sudo item replaced by ``true``, or by its command without sudo
    (a folder made in the home); the rest as written."""
    out, last = [], 0
    for item in sudo_items(command):
        if item.kind != "root" and satisfied(item):
            out += [command[last : item.start], item.unprivileged or "true"]
            last = item.end
    return "".join(out) + command[last:]


@functools.lru_cache(maxsize=256)
def _passes_here(script: str) -> bool:
    path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # Debian's python3, as the desktop's
    try:
        return (
            subprocess.run(
                ["bash", "-c", script], env={"PATH": path, "LANG": "C.UTF-8"}, timeout=60, capture_output=True
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def satisfied_here(item: SudoItem) -> bool:
    """Whether this host (the machine an env=local desktop runs on) has what ``item`` asks for."""
    script = item.check_script()
    return item.given if script is None else _passes_here(script)
