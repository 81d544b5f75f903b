"""Key steps from events and from end-state checks; their metrics and validation."""

from __future__ import annotations

import pytest

from mcpworld.core.errors import TaskFileError, UserError
from mcpworld.core.result import EpisodeResult
from mcpworld.core.task_parts import KeyStep, parse_key_steps
from mcpworld.evaluation.keysteps import LiveChecks, evaluate_key_steps, validate_key_steps

EVENTS = [
    {"type": "llm_call", "t": 0.1},
    {"type": "tool_call", "t": 0.5, "tool": "bash", "args": '{"command": "cat ~/a.txt"}', "ok": True},
    {"type": "tool_call", "t": 0.9, "tool": "computer", "args": '{"action": "key", "text": "ctrl+s"}', "ok": True},
]


def check_file_says(text: str) -> dict:
    return {
        "func": "exact_match",
        "result": {"type": "content_from_vm_file", "path": "~/out.txt"},
        "expected": {"type": "rule", "rules": {"expected": text}},
    }


STEPS = parse_key_steps(
    [
        {"name": "read the input", "event": {"type": "tool_call", "match": {"tool": "^bash$", "args": r"a\.txt"}}},
        {"name": "saved", "event": {"type": "tool_call", "match": {"args": "ctrl\\+s"}}},
        {"name": "never happens", "event": {"type": "tool_call", "match": {"tool": "mcp-.*"}}},
        {"name": "output written", "check": check_file_says("done")},
    ],
    "tasks/a/task.yaml",
)


def test_event_and_check_steps_give_ratio_progress_and_timeline(env):
    env.write("out.txt", "done")
    ks = evaluate_key_steps(STEPS, EVENTS, env, "DONE")
    assert (ks["total"], ks["completed"], ks["ratio"], ks["progress"]) == (4, 3, 0.75, 1.0)
    assert [(s["name"], s["t"], s["via"]) for s in ks["timeline"]] == [
        ("read the input", 0.5, "event"),
        ("saved", 0.9, "event"),
        ("output written", None, "check"),
    ]


def test_progress_is_the_highest_completed_step(env):
    ks = evaluate_key_steps(STEPS, EVENTS[:2], env, "DONE")  # only the first step happened
    assert (ks["completed"], ks["ratio"], ks["progress"]) == (1, 0.25, 0.25)


def test_nothing_done_scores_zero(env):
    ks = evaluate_key_steps(STEPS, [], env, "DONE")
    assert (ks["completed"], ks["ratio"], ks["progress"], ks["timeline"]) == (0, 0.0, 0.0, [])


def test_key_step_metrics_reach_the_result_numbers(env):
    r = EpisodeResult(task_id="t", app="a", key_steps=evaluate_key_steps(STEPS, EVENTS, env, "DONE"))
    numbers = r.numbers()
    assert numbers["keysteps.completed"] == 2.0 and numbers["keysteps.ratio"] == 0.5
    assert "keysteps.ratio" not in EpisodeResult(task_id="t", app="a").numbers()


@pytest.mark.parametrize(
    "steps, message",
    [
        ([{"event": {"type": "tool_call"}}], "needs a 'name'"),
        ([{"name": "x"}], "exactly one of 'event', 'check' or 'handler_index'"),
        ([{"name": "x", "event": {"type": "a"}, "check": check_file_says("y")}], "exactly one"),
        ([{"name": "x", "event": {"match": {}}}], "needs a 'type'"),
        ([{"name": "x", "event": {"type": "tool_call", "match": {"args": "("}}}], "match.args is not a valid regex"),
        ([{"name": "x", "handler_index": 0}], "handler_index must be an integer from 1"),
        ([{"name": "x", "check": "exact_match"}], "'check' must be an evaluator spec"),
        ({"name": "x"}, "must be a list of steps"),
    ],
)
def test_bad_key_steps_name_the_file_and_step(steps, message):
    """Parsed once at load: one error naming the file, the step and the fix."""
    with pytest.raises(TaskFileError, match=message) as err:
        parse_key_steps(steps, "tasks/a/task.yaml")
    assert "tasks/a/task.yaml: key_steps" in str(err.value)


def test_a_check_naming_an_unknown_metric_is_refused_once_templates_are_expanded():
    steps = parse_key_steps(
        [{"name": "x", "check": {"func": "no_such_metric", "result": {"type": "rule", "rules": {}}}}], "t.yaml"
    )
    assert steps == [KeyStep("x", check={"func": "no_such_metric", "result": {"type": "rule", "rules": {}}})]
    with pytest.raises(UserError, match="no_such_metric") as err:
        validate_key_steps(steps, "tasks/a/task.yaml")
    assert "tasks/a/task.yaml: key_steps[0] (x).check" in str(err.value)


def test_live_checks_pass_after_a_change_in_the_home_dated_by_the_change(env):
    """A check key step is tried while the agent works, only after the home changed, and keeps the
    time of that change even when the final state no longer passes (reached is reached)."""
    import time

    from mcpworld.probes.files import HomeChanges

    traced = []

    def emit(kind, **data):
        traced.append({"type": kind, "t": 99.0, **data})

    start = time.time()
    changes = HomeChanges(env.home)
    try:
        live = LiveChecks(env, STEPS, emit, changes.take, start)
        live()  # nothing changed yet: nothing tried
        assert traced == []
        env.write("out.txt", "draft")
        time.sleep(0.5)
        live()  # changed, but the check does not pass yet
        assert traced == [] and changes.take() is None  # the change was taken
        env.write("out.txt", "done")
        time.sleep(0.5)
        live()
        live()  # passed once: never traced twice
    finally:
        changes.close()
    (event,) = traced
    assert (event["index"], event["via"], event["name"]) == (3, "check", "output written")
    assert 0.0 < event["changed_t"] < time.time() - start
    env.write("out.txt", "undone")  # the final state no longer passes: the step was still reached, then
    ks = evaluate_key_steps(STEPS, traced, env, "DONE")
    assert [(s["name"], s["t"]) for s in ks["timeline"]] == [("output written", event["changed_t"])]
