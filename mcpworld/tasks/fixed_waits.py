"""The fixed waits (``computer: {action: wait, duration: N}``) left in the oracle solutions, read from the
files' raw text so each is found with its line and the reason written on it (``# why: …``).

A solution waits for the app's state (``wait_for``, core/waits.py); a fixed wait over ``LIMIT_S``
stays only with a stated reason. tests/tasks/test_fixed_waits.py fails on one without, and on a
docs/certify.md whose list (between the markers below) is not the files' own:

    python -m mcpworld.tasks.fixed_waits             # the list, and the seconds in all
    python -m mcpworld.tasks.fixed_waits --doc docs/certify.md   # rewrite the doc's list
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from mcpworld.core.paths import BUILTIN_TASKS, DATA

LIMIT_S = 0.5  # a fixed wait longer than this needs a reason on its line
DEFAULT_S = 1.0  # the computer tool's wait without a duration
SOLUTIONS = DATA / "solutions"
BEGIN = "<!-- fixed-waits: begin (python -m mcpworld.tasks.fixed_waits --doc docs/certify.md) -->"
END = "<!-- fixed-waits: end -->"
_WAIT = re.compile(r"""["']?action["']?\s*:\s*["']?wait["']?(?![\w_])""")
_DURATION = re.compile(r"""["']?duration["']?\s*:\s*([0-9]*\.?[0-9]+)""")
_WHY = re.compile(r"#\s*why:\s*(.+?)\s*$")


@dataclass(frozen=True)
class FixedWait:
    path: Path
    line: int  # 1-based
    seconds: float
    why: str  # the stated reason, "" when none

    def where(self, root: Path) -> str:
        try:
            shown = self.path.relative_to(root)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}"


def solution_files(tasks: Path = BUILTIN_TASKS, solutions: Path = SOLUTIONS) -> list[Path]:
    """Every file that holds an oracle solution: the built-in tasks' task.yaml and solution.json, and
    the suites' solution files."""
    files = [
        *tasks.rglob("task.yaml"),
        *tasks.rglob("solution.json"),
        *solutions.rglob("*.yaml"),
        *solutions.rglob("*.yml"),
        *solutions.rglob("*.json"),
    ]
    return sorted(p for p in files if p.is_file())


def fixed_waits_in(path: Path) -> list[FixedWait]:
    """The fixed waits of one file: a ``wait`` action on a line (its duration on that line or, in a
    block mapping, one of the next three)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for i, line in enumerate(lines):
        code = line if path.suffix == ".json" else line.split("#", 1)[0]
        if not _WAIT.search(code):
            continue
        seconds = DEFAULT_S
        duration = _DURATION.search(code)
        if duration is None and "{" not in code:  # a block mapping: its keys on the lines below, as indented
            indent = len(line) - len(line.lstrip())
            for near in lines[i + 1 : i + 4]:
                if len(near) - len(near.lstrip()) != indent or near.lstrip().startswith("-"):
                    break
                duration = _DURATION.search(near.split("#", 1)[0])
                if duration:
                    break
        if duration is not None:
            seconds = float(duration.group(1))
        why = _WHY.search(line)
        found.append(FixedWait(path, i + 1, seconds, why.group(1) if why else ""))
    return found


def fixed_waits(files: list[Path] | None = None) -> list[FixedWait]:
    return [wait for path in (solution_files() if files is None else files) for wait in fixed_waits_in(path)]


def unexplained(waits: list[FixedWait]) -> list[FixedWait]:
    return [w for w in waits if w.seconds > LIMIT_S and not w.why]


def doc_list(waits: list[FixedWait], root: Path) -> str:
    """The doc's list: one line per fixed wait, with its seconds and reason, and the total."""
    total = sum(w.seconds for w in waits)
    head = f"{len(waits)} fixed wait(s), {total:g} s in all" + (":" if waits else ".")
    rows = [f"- `{w.where(root)}`: {w.seconds:g} s, {w.why or '(no reason: at most ' + f'{LIMIT_S:g} s)'}" for w in waits]
    return "\n".join([BEGIN, head, *(["", *rows] if rows else []), END])


def with_doc_list(doc: str, listed: str) -> str:
    if BEGIN not in doc or END not in doc:
        raise ValueError(f"the doc has no fixed-waits markers ({BEGIN} … {END})")
    before, rest = doc.split(BEGIN, 1)
    _, after = rest.split(END, 1)
    return before + listed + after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.tasks.fixed_waits", description=__doc__.split("\n")[0])
    parser.add_argument("--doc", type=Path, help="rewrite the list between the fixed-waits markers of this file")
    args = parser.parse_args(argv)
    root = DATA.parent.parent
    waits = fixed_waits()
    listed = doc_list(waits, root)
    if args.doc:
        args.doc.write_text(with_doc_list(args.doc.read_text(encoding="utf-8"), listed), encoding="utf-8")
    else:
        print(listed)
    for wait in unexplained(waits):
        print(f"{wait.where(root)}: a fixed wait of {wait.seconds:g} s with no '# why:'", file=sys.stderr)
    return 1 if unexplained(waits) else 0


if __name__ == "__main__":
    sys.exit(main())
