"""tasks.solutions: oracle solutions of ours attached by id to a suite's unchanged task files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpworld.core.errors import TaskFileError, UserError
from mcpworld.tasks.select import discover
from mcpworld.tasks.solutions import attach_solutions, load_solutions, read_overlay

ROOT = Path(__file__).resolve().parents[2]
# OSWorld's task ids (domain/id), committed; the real suite, where it sits beside this checkout, checks the list
OSWORLD_IDS = ROOT / "tests" / "data" / "osworld_task_ids.txt"
SUITE = ROOT.parent / "shared" / "reference" / "suites" / "osworld" / "evaluation_examples" / "examples"
TASK = {
    "id": "0b17a146-demo",
    "snapshot": "os",
    "instruction": "Make ~/x.txt",
    "config": [],
    "evaluator": {
        "func": "exact_match",
        "result": {"type": "vm_command_line", "command": "cat ~/x.txt"},
        "expected": {"type": "rule", "rules": {"expected": "x\n"}},
    },
}


def suite(tmp_path: Path) -> Path:
    (tmp_path / "suite" / "os").mkdir(parents=True)
    (tmp_path / "suite" / "os" / "0b17a146-demo.json").write_text(json.dumps(TASK))
    return tmp_path / "suite"


def overlay(tmp_path: Path, name: str, text: str) -> Path:
    folder = tmp_path / "solutions"
    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder


def test_a_solution_file_attaches_by_id(tmp_path):
    tasks = discover(suite(tmp_path))
    folder = overlay(
        tmp_path,
        "os/0b17a146-demo.yaml",
        "solution:\n  cli:\n    - bash: {command: 'echo x > ~/x.txt'}\n"
        "  gui:\n    - {tool: computer, args: {action: key, text: Return}}\n",
    )
    assert attach_solutions(tasks, folder) == 1
    assert tasks[0].solution.as_written() == {
        "cli": [{"tool": "bash", "args": {"command": "echo x > ~/x.txt"}}],
        "gui": [{"tool": "computer", "args": {"action": "key", "text": "Return"}}],
    }


def test_an_id_key_names_tasks_whose_id_is_no_file_name(tmp_path):
    folder = overlay(tmp_path, "a.yaml", "id: vs_code/982d-2-WOS\nsolution: [{computer: {action: wait}}]\n")
    assert load_solutions(folder)["vs_code/982d-2-WOS"][1].as_written() == {
        "gui": [{"tool": "computer", "args": {"action": "wait"}}]
    }


def test_an_offline_declaration_reaches_the_task(tmp_path):
    tasks = discover(suite(tmp_path))
    folder = overlay(tmp_path, "os/0b17a146-demo.yaml", "offline: the answer is a setting\nsolution: [{bash: {command: x}}]\n")
    attach_solutions(tasks, folder)
    assert tasks[0].offline == "the answer is a setting"


def test_an_unsolved_declaration_says_why_the_task_has_no_solution(tmp_path):
    tasks = discover(suite(tmp_path))
    folder = overlay(tmp_path, "os/0b17a146-demo.yaml", "unsolved: it installs a package from the web\n")
    attach_solutions(tasks, folder)
    assert tasks[0].unsolved == "it installs a package from the web" and tasks[0].solution.as_written() == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("solution: [{bash: {command: x}}]\noffline: true\n", "'offline' must be a sentence"),
        ("solution: [{bash: {command: x}}]\nunsolved: no network\n", "or instead 'unsolved:'"),
        ("unsolved: [no, network]\n", "'unsolved' must be a sentence"),
        ("steps: []\n", "needs 'solution:'"),
        ("solution: {cli: [{bash: {command: x}}]}\nauthor: me\n", "unknown key.*author"),
        ("solution: {cli: {bash: x}}\n", "must be a list of tool calls"),
        ("solution: [{bash: {}, computer: {}}]\n", "must be {tool: NAME"),
        ("solution: [\n", "not valid YAML"),
    ],
)
def test_a_bad_solution_file_is_one_error_naming_it(tmp_path, text, message):
    folder = overlay(tmp_path, "os/t.yaml", text)
    with pytest.raises(TaskFileError, match=message) as err:
        load_solutions(folder)
    assert "t.yaml" in str(err.value)


def test_two_files_for_one_task_name_both(tmp_path):
    overlay(tmp_path, "a/t.yaml", "solution: []\n")
    folder = overlay(tmp_path, "b/x.yaml", "id: t\nsolution: []\n")
    with pytest.raises(TaskFileError, match="already has a solution file"):
        load_solutions(folder)


def test_a_missing_folder_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match=r"tasks\.solutions=.*is not a folder"):
        load_solutions(tmp_path / "nope")


def test_shipped_overlays_are_valid_and_match_their_task_files():
    """Every solution we ship names a task file the CI proves it on, across four domains."""
    every = load_solutions(ROOT / "mcpworld" / "data" / "solutions" / "osworld")
    overlays = {task_id: found for task_id, found in every.items() if found[1]}
    tasks = {t.id: t for t in discover(ROOT / "tests" / "data" / "osworld")}
    assert len(overlays) >= 58 and set(overlays) == set(tasks)
    # the others say why no solution can be written here, and name a real task of the suite
    for task_id, (path, _) in every.items():
        if task_id not in overlays:
            assert read_overlay(path).unsolved, path
            assert f"{path.parent.name}/{task_id}" in osworld_ids(), path
    assert len({t.source.parent.name for t in tasks.values()}) >= 4
    for task_id, (path, solution) in overlays.items():
        assert path.parent.name == tasks[task_id].source.parent.name, path
        assert solution.get("cli"), path


def osworld_ids() -> set[str]:
    return {line for line in OSWORLD_IDS.read_text().splitlines() if line and not line.startswith("#")}


def test_the_committed_osworld_ids_are_the_suites_task_files():
    if not SUITE.is_dir():
        pytest.skip(f"the real OSWorld suite is not at {SUITE} (the committed {OSWORLD_IDS.name} stands in for it)")
    assert osworld_ids() == {f"{p.parent.name}/{p.stem}" for p in SUITE.glob("*/*.json")}
