"""The accessibility_tree getter on a live display: Debian's pyatspi reading a real GTK app."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcpworld.core.errors import InfraError
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.env.local.home import HomeEnvironment
from mcpworld.evaluation.spec import evaluate_spec

pytestmark = pytest.mark.desktop

# The state of a live app, checked the OSWorld way: a11y XML + XPath/CSS rules.
SPEC = {
    "func": "check_accessibility_tree",
    "result": {"type": "accessibility_tree"},
    "expected": {
        "type": "rule",
        "rules": [
            {"selectors": ['application[name="mousepad"] frame[st|active=true]']},
            {"xpath": '//text[@st:focused="true"]', "text": "typed through XTest", "exact": True},
        ],
    },
}


def test_live_tree_of_mousepad_grades_what_was_typed(tmp_path: Path) -> None:
    if not Path("/usr/lib/python3/dist-packages/pyatspi").is_dir():
        pytest.fail("python3-pyatspi is not installed: make setup installs it")
    task = Task(
        id="t/a11y",
        app="mousepad",
        instruction="type",
        dir=tmp_path,
        source=tmp_path / "task.json",
        setup=[{"launch": {"command": ["mousepad"], "window": "Mousepad"}}],
    )
    with LocalEnvironment(1000, 800) as env:
        env.reset(task, tmp_path / "ep")
        before, _ = evaluate_spec(env, SPEC, None)
        env.act({"kind": "type", "text": "typed through XTest"})
        env.settle(None)
        tree = env.accessibility_tree()
        after, outcomes = evaluate_spec(env, SPEC, None)
        env.end_episode()
    assert before == 0.0
    assert after == 1.0, outcomes
    assert 'name="mousepad"' in tree and "cp:screencoord" in tree


def test_standalone_grading_of_a_home_directory_says_it_needs_a_desktop(tmp_path: Path) -> None:
    with HomeEnvironment(tmp_path) as env, pytest.raises(InfraError, match="needs a live desktop"):
        evaluate_spec(env, SPEC, None)


def test_an_interpreter_without_pyatspi_names_the_packages(tmp_path: Path, shared_dir: Path, monkeypatch) -> None:
    import mcpworld.env.a11y_dump as dump

    # a bare venv of Debian's python: the desktop account can run it, and it has no pyatspi
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(shared_dir / "venv")], check=True)
    python = str(shared_dir / "venv" / "bin" / "python")
    original = dump.dump_command
    monkeypatch.setattr(dump, "dump_command", lambda **limits: original(python=python, **limits))
    task = Task(id="t/a11y", app="mousepad", instruction="x", dir=tmp_path, source=tmp_path / "task.json")
    with LocalEnvironment(640, 480) as env:
        env.reset(task, tmp_path / "ep")
        with pytest.raises(InfraError, match="apt-get install -y python3-pyatspi"):
            env.accessibility_tree()
