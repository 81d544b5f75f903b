"""Fixed waits in oracle solutions: each one over 0.5 s states why on its line, and docs/certify.md
lists those that remain (mcpworld/tasks/fixed_waits.py). Reads the files' raw text; no desktop."""

from __future__ import annotations

from pathlib import Path

from mcpworld.core.paths import DATA
from mcpworld.tasks.fixed_waits import LIMIT_S, doc_list, fixed_waits, fixed_waits_in, solution_files, unexplained

ROOT = DATA.parent.parent
DOC = ROOT / "docs" / "certify.md"


def test_every_fixed_wait_over_half_a_second_says_why() -> None:
    bad = unexplained(fixed_waits())
    assert not bad, "\n".join(
        f"{w.where(ROOT)}: a fixed wait of {w.seconds:g} s without a reason. Wait for what the next step needs "
        "instead (wait_for: a window, process, file, widget, text on the screen, or {screen: changed}: "
        f"mcpworld/core/waits.py), or, where nothing shows it, keep it at most {LIMIT_S:g} s or end its line with "
        "'# why: …'"
        for w in bad
    )


def test_the_docs_list_of_fixed_waits_is_the_files_own() -> None:
    listed = doc_list(fixed_waits(), ROOT)
    assert listed in DOC.read_text(encoding="utf-8"), (
        "docs/certify.md's list of fixed waits differs from the solution files': "
        "python -m mcpworld.tasks.fixed_waits --doc docs/certify.md"
    )


def test_the_scan_covers_the_builtin_tasks_and_the_suites_solutions() -> None:
    files = {p.relative_to(DATA).parts[0:2] for p in solution_files()}
    assert ("tasks", "libreoffice_calc") in files and ("solutions", "pccanary") in files
    assert ("solutions", "osworld") in files


def test_a_wait_is_found_in_each_form_with_its_reason(tmp_path: Path) -> None:
    yaml = tmp_path / "a.yaml"
    yaml.write_text(
        "solution:\n"
        "  - computer: {action: wait, duration: 2}  # why: the splash has no window\n"
        "  - computer: {action: key, text: a}  # not a wait: {action: wait, duration: 9}\n"
        "  - computer:\n      action: wait\n      duration: 1.5\n"
        "  - {tool: computer, args: {action: wait}}\n"
        "  - computer: {action: waiting, duration: 3}\n"
    )
    found = [(w.line, w.seconds, w.why) for w in fixed_waits_in(yaml)]
    assert found == [(2, 2.0, "the splash has no window"), (5, 1.5, ""), (7, 1.0, "")]
    js = tmp_path / "solution.json"
    js.write_text('[{"tool": "computer", "args": {"action": "wait", "duration": 0.25}}]\n')
    assert [(w.line, w.seconds) for w in fixed_waits_in(js)] == [(1, 0.25)]
    assert [w.line for w in unexplained(fixed_waits([yaml, js]))] == [5, 7]
