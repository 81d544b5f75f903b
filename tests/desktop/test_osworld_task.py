"""An OSWorld task file run on a real desktop: its setup, its pyautogui postconfig, its evaluator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.evaluation.verdict import judge
from mcpworld.tasks.load import load_task_file

pytestmark = pytest.mark.desktop

TASK = {
    "id": "save-before-grading",
    "snapshot": "os",
    "instruction": "Add a line to /home/user/notes.txt.",
    "related_apps": ["mousepad"],
    "config": [
        {"type": "execute", "parameters": {"command": ["bash", "-c", "printf 'draft\\n' > /home/user/notes.txt"]}},
        {"type": "launch", "parameters": {"command": ["mousepad", "/home/user/notes.txt"]}},
        {"type": "activate_window", "parameters": {"window_name": "notes.txt"}},
    ],
    "evaluator": {
        # OSWorld's "save the document before grading" idiom, replayed as input actions
        "postconfig": [
            {
                "type": "execute",
                "parameters": {
                    "command": [
                        "python",
                        "-c",
                        "import pyautogui; import time; pyautogui.hotkey('ctrl', 'End'); "
                        "pyautogui.typewrite('saved by postconfig'); pyautogui.hotkey('ctrl', 's'); time.sleep(1);",
                    ]
                },
            }
        ],
        "func": "check_include_exclude",
        "result": {"type": "vm_command_line", "command": "cat /home/user/notes.txt", "shell": True},
        "expected": {"type": "rule", "rules": {"include": ["draft\nsaved by postconfig"], "exclude": []}},
    },
}


def test_postconfig_pyautogui_script_saves_the_document_before_grading(tmp_path: Path) -> None:
    path = tmp_path / "suite" / "save-before-grading.json"
    path.parent.mkdir()
    path.write_text(json.dumps(TASK))
    task = load_task_file(path)
    assert task.skip_reason is None
    with LocalEnvironment(1000, 800) as env:
        env.reset(task, tmp_path / "ep")
        assert env.read_file("~/notes.txt") == b"draft\n"
        verdict = judge(task, env, "DONE")
        env.end_episode()
    assert verdict.score == 1.0, verdict.metrics
