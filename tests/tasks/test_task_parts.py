"""A task's typed parts (core/task_parts.py): parsed once at load, one error naming the file, the key,
the value and the fix; what the harness reads of an evaluator spec read in one place."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpworld.core.errors import TaskFileError
from mcpworld.core.steps import parse_steps
from mcpworld.core.task_parts import EvaluatorSpec, EventPattern, KeyStep, OracleStep, Solution, parse_evaluator, parse_key_steps
from mcpworld.tasks.native import load_task

TASK = """\
app: mousepad
instruction: Write done.
evaluator:
  func: exact_match
  result: {type: content_from_vm_file, path: ~/out.txt}
  expected: {type: rule, rules: {expected: done}}
"""


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True)
    path = folder / "task.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_task_files_key_steps_are_typed_at_load(tmp_path):
    path = write(
        tmp_path / "t",
        TASK
        + "key_steps:\n"
        + "  - {name: read, event: {type: tool_call, match: {tool: '^bash$'}}}\n"
        + "  - {name: saved, check: {template: file_says, with: {path: ~/out.txt}}}\n",
    )
    read, saved = load_task(path).key_steps
    assert read == KeyStep("read", event=EventPattern("tool_call", {"tool": "^bash$"}))
    assert saved.check == {"template": "file_says", "with": {"path": "~/out.txt"}}  # as written: templates expand it later
    assert read.event is not None and read.event.matches({"type": "tool_call", "tool": "bash"})
    assert not read.event.matches({"type": "tool_call", "tool": "bashful"})
    assert not read.event.matches({"type": "llm_call", "tool": "bash"})


@pytest.mark.parametrize(
    "key_steps, says",
    [
        (
            "  - {name: x, event: {type: a}, handler_index: 2}",
            "key_steps[0] (x) needs exactly one of 'event', 'check' or 'handler_index', got ['event', 'handler_index']",
        ),
        ("  - {name: x, handler_index: true}", "key_steps[0] (x): handler_index must be an integer from 1"),
        ("  - {name: x, event: {type: a, match: [tool]}}", "key_steps[0] (x): event.match must map event fields to regexes"),
    ],
)
def test_a_bad_key_step_is_one_error_naming_the_file_and_the_step(tmp_path, key_steps, says):
    path = write(tmp_path / "t", TASK + "key_steps:\n" + key_steps + "\n")
    with pytest.raises(TaskFileError) as err:
        load_task(path)
    assert str(err.value).startswith(f"{path}: ") and says in str(err.value)


def test_key_steps_must_be_a_list():
    with pytest.raises(TaskFileError, match=r"t.yaml: key_steps = \{'name': 'x'\}: must be a list"):
        parse_key_steps({"name": "x"}, "t.yaml")


def test_an_evaluator_is_parsed_once_with_its_postconfig_and_getters_read_in_one_place():
    spec = parse_evaluator(
        {
            "func": ["a", "b"],
            "result": [{"type": "x"}, {"type": "y"}],
            "expected": [None, {"type": "rule"}],
            "postconfig": [{"sleep": 1}],
        },
        "t.json",
    )
    assert spec is not None and not spec.infeasible
    assert spec.getters() == [{"type": "x"}, {"type": "y"}, {"type": "rule"}]
    assert spec.postconfig == [{"sleep": 1}]
    spec.postconfig[0] = {"sleep": 2}  # a loader pointing a step at a local copy changes the spec itself
    assert spec.spec["postconfig"] == [{"sleep": 2}]
    assert parse_evaluator({}, "t.json") is None and parse_evaluator(None, "t.json") is None
    assert EvaluatorSpec({"func": "infeasible"}).infeasible and EvaluatorSpec({"infeasible": True, "func": "x"}).infeasible


@pytest.mark.parametrize(
    "evaluator, says",
    [
        ("exact_match", "t.json: evaluator = 'exact_match': must be a mapping"),
        ({"func": "x", "postconfig": {"sleep": 1}}, "t.json: evaluator.postconfig = {'sleep': 1}: must be a list of setup steps"),
        ({"func": "x", "postconfig": ["sleep"]}, "t.json: evaluator.postconfig = ['sleep']: must be a list of setup steps"),
    ],
)
def test_a_bad_evaluator_is_one_error_naming_the_file_key_value_and_fix(evaluator, says):
    with pytest.raises(TaskFileError) as err:
        parse_evaluator(evaluator, "t.json")
    assert says in str(err.value)


def test_setup_steps_are_typed_at_load_with_the_step_as_written(tmp_path):
    path = write(
        tmp_path / "t", TASK + "setup:\n  - launch: [mousepad, ~/notes.txt]\n  - {type: sleep, parameters: {seconds: 1}}\n"
    )
    launch, sleep = load_task(path).setup
    assert (launch.kind, dict(launch.params)) == ("launch", {"command": ["mousepad", "~/notes.txt"]})
    assert launch.raw == {"launch": ["mousepad", "~/notes.txt"]}  # what a suite's step passes on unchanged
    assert (sleep.kind, dict(sleep.params), sleep.raw) == (
        "sleep",
        {"seconds": 1},
        {"type": "sleep", "parameters": {"seconds": 1}},
    )


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("  - launch: [mousepad]\n  - [open, x]\n", r"task.yaml: setup\[1\]: a step must be a mapping"),
        ("  - {launch: [a], open: b}\n", r"task.yaml: setup\[0\]: step .* must have exactly one key"),
        ("  - {copy: {src: a}}\n", r"task.yaml: setup\[0\]: step 'copy' needs 'dest'"),
    ],
)
def test_a_bad_setup_step_is_one_error_naming_the_file_and_the_step(tmp_path, setup, message):
    path = write(tmp_path / "t", TASK + "setup:\n" + setup)
    with pytest.raises(TaskFileError, match=message):
        load_task(path)


def test_a_changed_setup_step_is_a_new_step_in_the_shape_the_task_wrote():
    short, long = parse_steps([{"execute": {"command": "x"}}, {"type": "execute", "parameters": {"command": "y"}}], "t")
    assert short.with_params(env={"K": "v"}).raw == {"execute": {"command": "x", "env": {"K": "v"}}}
    assert long.with_params(env={}).raw == {"type": "execute", "parameters": {"command": "y", "env": {}}}
    assert short.raw == {"execute": {"command": "x"}}  # unchanged
    copy = short.replaced("copy", {"src": "/a", "dest": "~/b"})
    assert (copy.kind, copy.raw) == ("copy", {"copy": {"src": "/a", "dest": "~/b"}})


def test_a_solution_is_typed_at_load_each_step_with_its_spoil(tmp_path):
    solution = (
        "solution:\n  - computer: {action: type, text: '42'}\n    spoil: {text: '41'}\n"
        "  - {tool: done, args: {status: DONE}, spoil: omit}\n"
    )
    task = load_task(write(tmp_path / "t", TASK + solution))
    typed, done = task.solution.get("gui")
    assert typed == OracleStep("computer", {"action": "type", "text": "42"}, {"text": "41"})
    assert typed.spoiled() == OracleStep("computer", {"action": "type", "text": "41"}) and done.spoiled() is None
    assert "gui" in task.solution and "cli" not in task.solution and task.solution.get("cli") == ()


def test_a_solution_changes_into_a_new_one():
    step = OracleStep("bash", {"command": "ls {workspace}"}, {"command": "ls {workspace}/x"})
    filled = step.rewritten(lambda args: {k: str(v).replace("{workspace}", "/w") for k, v in args.items()})
    assert filled == OracleStep("bash", {"command": "ls /w"}, {"command": "ls /w/x"}) and step.args["command"] == "ls {workspace}"
    own = Solution({"gui": (step,), "cli": (step,)})
    assert own.merged(Solution({"cli": ()})).modalities == {"gui": (step,), "cli": ()}
    assert own.with_steps("all", own.get("gui")).get("all") == (step,) and "all" not in own
