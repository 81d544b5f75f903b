"""What a local desktop cannot do skips the task with the reason: sudo, a program not installed."""

from __future__ import annotations

from pathlib import Path

from mcpworld.apps.programs import Program
from mcpworld.core.steps import sudo_command
from mcpworld.core.task import Task
from mcpworld.core.task_parts import EvaluatorSpec
from mcpworld.run.job import missing_program, refused_sudo


def task(*setup: dict, app: str = "xterm", postconfig: list | None = None) -> Task:
    return Task(
        id="t/x",
        app=app,
        instruction="x",
        dir=Path("."),
        source=Path("task.json"),
        setup=list(setup),
        evaluator=EvaluatorSpec({"func": "exact_match", **({"postconfig": postconfig} if postconfig else {})}),
    )


def test_osworlds_sudo_install_step_is_refused_on_a_local_desktop_only():
    command = "echo {CLIENT_PASSWORD} | sudo -S apt-get install -y mcpworld-no-such-package"
    step = {"type": "execute", "parameters": {"command": command, "shell": True}}
    reason = refused_sudo("local", task(step))
    assert reason and "sudo" in reason and "env=local never grants" in reason
    assert refused_sudo("docker", task(step)) is None
    assert refused_sudo("local", task(postconfig=[{"execute": {"command": ["sudo", "reboot"]}}]))


def test_words_that_merely_contain_sudo_are_not_sudo():
    assert sudo_command([{"execute": {"command": "echo pseudocode > sudoku.txt", "shell": True}}]) is None
    assert sudo_command([{"launch": {"command": ["gedit", "sudo.txt"]}}]) is None
    assert sudo_command([{"execute": {"command": "cd /tmp && sudo rm -rf x", "shell": True}}])


def test_a_task_whose_program_is_missing_names_the_install_command(monkeypatch):
    import mcpworld.run.job as experiment

    ghost = Program(app="ghostapp", binary="ghost-not-installed", names=("ghost",), install="apt-get install -y ghost")
    monkeypatch.setattr(experiment, "programs", lambda: (ghost,))
    assert "apt-get install -y ghost" in missing_program(task(app="ghostapp"), "local")
    assert "apt-get install -y ghost" in missing_program(task({"launch": {"command": "ghost --new"}}), "local")
    assert missing_program(task({"launch": {"command": ["xterm"]}}), "local") is None
    assert missing_program(task(app="ghostapp"), "vm") is None  # the suite's VM has its own programs


def test_with_env_docker_only_apps_our_scripts_install_must_be_here(monkeypatch):
    import mcpworld.run.job as experiment

    ghost = Program(app="ghostapp", binary="ghost-not-installed", names=("ghost",), packages={"apt": ["ghost"]})
    scripted = Program(
        app="scripted",
        binary="/nonexistent/x",
        names=("x",),
        packages={"script": ["scripts/x.sh"]},
        install="make apps APPS=scripted",
    )
    monkeypatch.setattr(experiment, "programs", lambda: (ghost, scripted))
    assert missing_program(task(app="ghostapp"), "docker") is None  # the image holds its Debian package
    assert "make apps APPS=scripted" in missing_program(task(app="scripted"), "docker")  # taken from here


def test_osworlds_client_password_is_filled_as_its_setup_controller_does():
    from mcpworld.core.steps import fill_screen

    assert fill_screen("echo {CLIENT_PASSWORD} | sudo -S true", 800, 600) == "echo password | sudo -S true"
    assert fill_screen(["sh", "-c", "echo {CLIENT_PASSWORD} {SCREEN_WIDTH_HALF}"], 800, 600)[-1] == "echo password 400"
