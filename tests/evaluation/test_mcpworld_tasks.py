"""MCPWorld (PC-Canary) task folders: config.json loading and the handler.py runtime."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.core.errors import EvalError
from mcpworld.core.task_parts import KeyStep
from mcpworld.evaluation.handler import HandlerProcess, run_handler
from mcpworld.tasks.load import load_task_file
from mcpworld.tasks.select import discover
from tests.helpers.pccanary import CONFIG, HANDLER


@pytest.fixture
def canary(tmp_path):
    """A PC-Canary-shaped tree: tests/tasks/<app>/<task>/ and tests/context_data/<app>/."""
    task_dir = tmp_path / "tests" / "tasks" / "notes" / "task07_append"
    task_dir.mkdir(parents=True)
    (task_dir / "config.json").write_text(json.dumps(CONFIG))
    (task_dir / "handler.py").write_text(HANDLER)
    vault = tmp_path / "tests" / "context_data" / "notes" / "vault"
    vault.mkdir(parents=True)
    (vault / "Agenda.md").write_text("## Agenda\n")
    return task_dir


def test_config_json_maps_onto_the_task_model(canary):
    task = load_task_file(canary / "config.json")
    assert (task.id, task.app, task.format, task.skip_reason) == ("notes/task07_append", "notes", "mcpworld", None)
    assert task.instruction == "Append '- review budget' to Agenda.md in the vault."
    assert task.context[0].dest == "~/workspace/.mcpworld/notes/vault"
    assert task.context[0].src.name == "vault"
    assert task.key_steps == [KeyStep("found the note", handler_index=1), KeyStep("appended the text", handler_index=2)]
    assert task.handler == canary / "handler.py" and task.timeout_s == 300
    assert task.mcp_servers == [{"command": "uvx", "args": ["mcp-obsidian"], "name": "mcp-obsidian"}]
    assert [t.id for t in discover(canary.parents[2])] == ["notes/task07_append"]


def test_missing_app_or_context_loads_with_a_skip_reason(canary):
    data = dict(CONFIG, application_info={"name": "notes", "executable_path": "/opt/nowhere/notes.sh"})
    (canary / "config.json").write_text(json.dumps(data))
    assert (
        load_task_file(canary / "config.json").skip_reason
        == "its application notes is not installed here (the task starts /opt/nowhere/notes.sh)"
    )
    data = dict(CONFIG, context_data=[{"from": "tests/context_data/other", "to": "/workspace/x"}])
    (canary / "config.json").write_text(json.dumps(data))
    assert "context data" in load_task_file(canary / "config.json").skip_reason


def test_missing_handler_is_a_skip_naming_the_file_and_the_fix(canary):
    """A data-only copy of the suite (no task code) still loads: each task says what it lacks."""
    (canary / "handler.py").unlink()
    reason = load_task_file(canary / "config.json").skip_reason
    assert "handler.py is not in" in reason and "tasks.root at a PC-Canary checkout" in reason


def grade(task_file: Path, home: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "mcpworld.evaluation", str(task_file), "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_handler_judges_the_home_with_key_steps(canary, tmp_path):
    home = tmp_path / "home"
    vault = home / "workspace" / ".mcpworld" / "notes" / "vault"
    vault.mkdir(parents=True)
    missing = grade(canary / "config.json", home)
    assert missing["score"] == 0.0 and "Agenda.md not found" in missing["metrics"][0]["reason"]
    assert missing["key_steps"]["completed"] == 0
    (vault / "Agenda.md").write_text("## Agenda\n")
    untouched = grade(canary / "config.json", home)
    assert untouched["score"] == 0.0 and untouched["key_steps"]["completed"] == 1
    assert untouched["key_steps"]["progress"] == 0.5
    (vault / "Agenda.md").write_text("## Agenda\n- review budget\n")
    done = grade(canary / "config.json", home)
    assert done["score"] == 1.0 and done["success"] is True
    assert done["key_steps"]["ratio"] == 1.0
    assert [s["name"] for s in done["key_steps"]["timeline"]] == ["found the note", "appended the text"]


def test_message_only_handler_gets_the_completion_message(tmp_path):
    handler = tmp_path / "handler.py"
    handler.write_text(
        "def message_handler(message, logger, p):\n"
        "    if message.get('event_type') == 'evaluate_on_completion':\n"
        "        return {'status': 'success', 'reason': p['why']}\n"
    )
    verdict = run_handler(handler, {"why": "checked"}, tmp_path)
    assert verdict.score == 1.0 and "checked" in verdict.reason


def test_live_messages_record_key_steps_and_app_events(tmp_path):
    handler = tmp_path / "handler.py"
    handler.write_text(
        "def message_handler(message, logger, p):\n"
        "    if 'step' in message.get('payload', {}):\n"
        "        return [{'status': 'key_step', 'index': message['payload']['step']},\n"
        "                {'status': 'app_event', 'name': 'seen', 'payload': {}}]\n"
        "    return None\n"
    )
    proc = HandlerProcess(handler, {}, tmp_path, timeout_s=20)
    try:
        for step in (2, 1, 2):
            proc.send({"type": "send", "payload": {"step": step}})
        verdict = proc.complete()
    finally:
        proc.close()
    assert verdict.key_steps == [2, 1] and len(verdict.app_events) == 3
    assert verdict.score == 0.0 and "no success or error verdict" in verdict.reason


@pytest.mark.parametrize(
    "body, reason",
    [
        ("def message_handler(m, l, p):\n    raise ValueError('bad state')\n", "raised ValueError: bad state"),
        ("import time\ndef message_handler(m, l, p):\n    time.sleep(30)\n", "did not answer within 1s"),
        ("x = 1\n", "neither message_handler"),
        ("raise SystemExit(3)\n", "could not be loaded: SystemExit: 3"),
        ("import os\ndef message_handler(m, l, p):\n    os._exit(4)\n", "process exited"),
        ("def message_handler(m, l, p:\n    pass\n", "could not be loaded: SyntaxError"),
    ],
)
def test_a_handler_that_cannot_judge_is_an_eval_error_not_a_failure(tmp_path, body, reason):
    handler = tmp_path / "handler.py"
    handler.write_text(body)
    proc = HandlerProcess(handler, {}, tmp_path, timeout_s=1)
    try:
        with pytest.raises(EvalError, match=reason):
            proc.complete()
    finally:
        proc.close()


def test_a_handler_that_says_no_is_a_failure_with_its_reason(tmp_path):
    handler = tmp_path / "handler.py"
    handler.write_text(
        "print('chatty handler')\n"
        "def message_handler(m, l, p):\n"
        "    print('still chatty')\n"
        "    return {'status': 'error', 'type': 'wrong', 'message': 'theme is Light'}\n"
    )
    verdict = run_handler(handler, {}, tmp_path)
    assert verdict.score == 0.0 and "theme is Light" in verdict.reason
