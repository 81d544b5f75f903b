"""Every parameter of OSWorld's setup commands (stdout, stderr, until, shell), a sudo that only asks
for what the desktop has, the programs a task's graders run, and WAA's Windows home paths."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from mcpworld.core.errors import InfraError
from mcpworld.core.shell_words import programs
from mcpworld.core.steps import sudo_command, sudo_needs
from mcpworld.core.sudo import sudo_items, without_satisfied
from mcpworld.core.task import Task
from mcpworld.core.task_parts import EvaluatorSpec
from mcpworld.env.local.home import HomeEnvironment
from mcpworld.evaluation.standalone import grade
from mcpworld.tasks.load import load_task_file
from mcpworld.tasks.osworld import load_osworld
from mcpworld.tasks.programs_needed import missing_command, needed_commands, why_missing
from mcpworld.tasks.windows_paths import linux_path, map_text

SHAPES = Path(__file__).parents[1] / "data" / "suite_shapes"


def task(*setup: dict, postconfig: list | None = None, **evaluator) -> Task:
    return Task(
        id="t/x",
        app="os",
        instruction="x",
        dir=Path("."),
        source=Path("task.json"),
        setup=list(setup),
        evaluator=EvaluatorSpec({"func": "exact_match", **({"postconfig": postconfig} if postconfig else {}), **evaluator}),
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


# ---------------------------------------------------------------- stdout / stderr / until / shell


def test_a_postconfig_commands_stdout_reaches_the_cache_file_getter(home):
    task = load_task_file(SHAPES / "osworld" / "thunderbird" / "stdout-listing.json")
    assert task.skip_reason is None
    (home / "emails.bak").mkdir()
    (home / "emails.bak" / "A Test E-mail.eml").write_text("x")
    (home / "emails.bak" / "Welcome to Outlook.eml").write_text("x")
    verdict = grade(task, home)
    assert verdict["score"] == 1.0, verdict
    # what the listing kept in the task's cache held (not the copy's path, gone after the episode)
    assert verdict["actual"][0].endswith("emails.bak:\nA Test E-mail.eml\nWelcome to Outlook.eml\n")


def test_a_failing_captured_command_is_the_agents_failure_not_the_machines(home):
    # nothing backed up: `ls -R` exits 2, as on OSWorld's VM the listing is empty and the check fails
    verdict = grade(load_task_file(SHAPES / "osworld" / "thunderbird" / "stdout-listing.json"), home)
    assert verdict["status"] == "failure" and verdict["score"] == 0.0


def test_stderr_is_kept_and_until_runs_the_command_again_until_its_output_says_so(home):
    env = HomeEnvironment(home)
    try:
        count = "n=$(cat ~/tries 2>/dev/null || echo 0); echo $((n+1)) > ~/tries; echo warn >&2; [ $n -ge 2 ] && echo ready"
        env.run_steps(
            [
                {
                    "type": "execute",
                    "parameters": {"command": count, "shell": "true", "stderr": "err.txt", "until": {"stdout": "ready"}},
                }
            ]
        )
        assert (home / "tries").read_text().strip() == "3"  # two tries printed nothing, the third "ready"
        assert (env.cache_dir / "err.txt").read_text() == "warn\n"
        env.run_steps([{"type": "execute", "parameters": {"command": ["bash", "-c", "exit 3"], "until": {"returncode": 3}}}])
        with pytest.raises(InfraError, match="never gave what its until asks"):
            env.run_steps(
                [{"type": "execute", "parameters": {"command": "false", "shell": True, "timeout": 1, "until": {"returncode": 0}}}]
            )
    finally:
        env.close()


def test_argv_commands_with_stdout_map_the_vms_home_and_keep_their_words(home):
    (home / "a file.txt").write_text("hello")
    env = HomeEnvironment(home)
    try:
        env.run_steps([{"type": "execute", "parameters": {"command": ["cat", "/home/user/a file.txt"], "stdout": "out.txt"}}])
        assert (env.cache_dir / "out.txt").read_text() == "hello"
        with pytest.raises(Exception, match="must be a file name in the task's cache"):
            env.run_steps([{"type": "execute", "parameters": {"command": ["true"], "stdout": "../escape"}}])
    finally:
        env.close()


# ---------------------------------------------------------------- sudo that needs no root


def test_sudo_items_are_read_by_what_they_ask_root_to_do():
    line = (
        "echo password | sudo -S apt-get update -y && echo password | sudo -S apt-get install unzip -y "
        "&& unzip ~/x.zip -d ~/ && sudo -S DEBIAN_FRONTEND=noninteractive pip install pysrt; sudo su - charles; "
        "sudo mkdir ~/todo; sudo mkdir -p ~/Desktop/a\\ b; sudo mkdir /opt/x; sudo mkdir ~/../x"
    )
    kinds = [(i.kind, i.packages) for i in sudo_items(line)]
    assert kinds == [
        ("noop", ()),
        ("apt", ("unzip",)),
        ("pip", ("pysrt",)),
        ("noop", ()),
        ("home", ()),
        ("home", ()),
        ("root", ()),
        ("root", ()),
    ]
    rewritten = without_satisfied(line, lambda item: item.kind != "pip")
    assert rewritten == (
        "true && true && unzip ~/x.zip -d ~/ && sudo -S DEBIAN_FRONTEND=noninteractive pip install "
        "pysrt; true; mkdir ~/todo; mkdir -p ~/Desktop/a\\ b; sudo mkdir /opt/x; sudo mkdir ~/../x"
    )
    assert [i.kind for i in sudo_items("echo pseudocode > sudoku.txt; apt-get install sudo")] == []


def test_an_install_of_what_this_machine_has_is_not_refused_and_one_it_lacks_names_the_install():
    have = {
        "type": "execute",
        "parameters": {
            "command": "echo {CLIENT_PASSWORD} | sudo -S apt update -y && echo {CLIENT_PASSWORD} | sudo -S apt install bash -y",
            "shell": True,
        },
    }
    assert sudo_command([have]) is None  # bash is installed wherever these tests run
    lack = {
        "type": "command",
        "parameters": {"command": "echo {CLIENT_PASSWORD} | sudo -S apt-get install mcpworld-no-such-package", "shell": "true"},
    }
    command, why = sudo_needs([have, lack]) or ("", "")
    assert "mcpworld-no-such-package" in command
    assert "`apt-get install -y mcpworld-no-such-package`" in why and "env=local never grants" in why
    assert (
        sudo_needs([{"execute": {"command": "echo {CLIENT_PASSWORD} | sudo -S mkdir ~/Desktop/x", "shell": True}}]) is None
    )  # a folder in the home: the account makes it
    _, why = sudo_needs([{"execute": {"command": "echo {CLIENT_PASSWORD} | sudo -S mkdir /srv/x", "shell": True}}]) or ("", "")
    assert "would be root on this host" in why


def test_a_satisfied_sudo_runs_as_true_on_the_desktop_and_the_rest_as_written(home, monkeypatch):
    # a sudo that records its calls, in a folder the desktop's PATH keeps (one every account can enter)
    fake = Path(tempfile.mkdtemp(prefix="mcpworld-fake-sudo-"))
    fake.chmod(0o777)
    calls = fake / "calls"
    (fake / "sudo").write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexit 1\n')
    (fake / "sudo").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    env = HomeEnvironment(home)
    try:
        env.run_steps(
            [
                {
                    "type": "execute",
                    "parameters": {
                        "command": "echo {CLIENT_PASSWORD} | sudo -S apt-get update -y && echo {CLIENT_PASSWORD} | sudo -S "
                        "apt-get install bash -y && echo set up > /home/user/done.txt",
                        "shell": True,
                    },
                }
            ]
        )
        assert (home / "done.txt").read_text() == "set up\n"
        env.run_steps([{"type": "execute", "parameters": {"command": ["sudo", "apt-get", "install", "-y", "bash"]}}])
        assert not calls.exists()  # no sudo ran: both only asked for what is here
        with pytest.raises(InfraError):  # one that needs root for real runs as written, and fails here
            env.run_steps([{"type": "execute", "parameters": {"command": "sudo mkdir /home/user/x", "shell": True}}])
        assert calls.read_text() == "mkdir " + str(home / "x") + "\n"
        # a folder in the home: made by the account itself, no sudo asked
        (home / "Desktop").mkdir(exist_ok=True)
        env.run_steps(
            [
                {
                    "type": "execute",
                    "parameters": {"command": "echo {CLIENT_PASSWORD} | sudo -S mkdir ~/Desktop/todo_list_Jan_1", "shell": True},
                }
            ]
        )
        assert (home / "Desktop" / "todo_list_Jan_1").is_dir()
        assert calls.read_text().count("\n") == 1
    finally:
        env.close()
        shutil.rmtree(fake)


# ---------------------------------------------------------------- programs the task's own commands run


def test_the_programs_of_setup_and_grader_commands_are_found_where_bash_would_run_them():
    line = (
        "pulseaudio --start\npactl list sinks | grep '^[[:space:]]Volume:' | head -n 1; "
        'X=$(timeout 10 gsettings get a b 2>/dev/null | bc -l); [ -n "$X" ] && echo ok'
    )
    assert programs(line) == ["pulseaudio", "pactl", "grep", "head", "gsettings", "bc"]
    assert programs(["/bin/bash", "-c", "ps aux | grep '[s]office'"], False) == ["/bin/bash", "ps", "grep"]
    assert programs(["code", "--list-extensions", "|", "grep", "x"], False) == ["code"]
    t = task(
        {"launch": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}},
        {"execute": {"command": ["python", "-c", "import pyautogui; pyautogui.click(1, 1)"]}},
        {"execute": {"command": "echo {CLIENT_PASSWORD} | sudo -S apt install jq -y && jq . f", "shell": True}},
        result={"type": "vm_command_line", "command": "pactl list sinks"},
    )
    assert needed_commands(t) == [("setup", "jq"), ("grader (vm_command_line)", "pactl")]


def test_a_grader_program_missing_here_skips_the_task_with_its_install_command(tmp_path, monkeypatch):
    import mcpworld.tasks.programs_needed as needed

    for name in ("grep", "bash"):
        (tmp_path / name).symlink_to(f"/bin/{name}")
    monkeypatch.setattr(needed, "desktop_path", lambda: str(tmp_path))
    t = task(result={"type": "vm_command_line", "command": "pulseaudio --start\npactl list sinks | grep Volume", "shell": True})
    why = missing_command(t, ())
    assert why and "pulseaudio" in why and "`apt-get install -y pulseaudio`" in why and "grader" in why
    assert missing_command(t, (), "docker") is None  # the image has programs of its own
    assert why_missing("grep", (), str(tmp_path)) is None
    assert why_missing("./check_password.sh", (), str(tmp_path)) is None  # a file the task downloads
    assert "apt-file search bin/frobnicate" in (why_missing("frobnicate", (), str(tmp_path)) or "")


# ---------------------------------------------------------------- WAA's Windows home


def test_waa_home_paths_are_the_linux_homes_where_linux_has_the_same_folder():
    assert linux_path(r"C:\Users\Docker\Downloads\a b.xlsx") == "/home/user/Downloads/a b.xlsx"
    assert linux_path("C:/Users/Docker/Desktop/x.pdf") == "/home/user/Desktop/x.pdf"
    assert linux_path(r"C:\Users\Docker\AppData\Roaming\Code\User\settings.json") == "/home/user/.config/Code/User/settings.json"
    assert (
        linux_path(r"C:\Users\Docker\AppData\Roaming\LibreOffice\4\user\registrymodifications.xcu")
        == "/home/user/.config/libreoffice/4/user/registrymodifications.xcu"
    )
    assert linux_path(r"C:\Users\Docker\AppData\Local\Temp\x") is None  # no faithful equivalent
    assert linux_path(r"C:\Program Files\VideoLAN\vlc.exe") is None
    assert map_text(r"save it under 'C:\Users\Docker\Downloads'?") == "save it under '/home/user/Downloads'?"


def test_a_waa_calc_task_runs_on_linux_with_its_paths_in_the_home():
    task = load_task_file(SHAPES / "waa" / "libreoffice_calc" / "fill-blanks-WOS.json")
    assert task.skip_reason is None and task.app == "libreoffice_calc"
    assert task.setup[0].raw == {
        "download": {"url": "https://example.org/task_files/calc/Fill_Blank.xlsx", "dest": "/home/user/Downloads/Fill_Blank.xlsx"}
    }
    assert task.setup[1].raw["parameters"]["path"] == "/home/user/Downloads/Fill_Blank.xlsx"
    assert task.evaluator.spec["result"]["path"] == "/home/user/Downloads/Fill_Blank.xlsx"
    assert "/home/user/Downloads/Fill_Blank.xlsx" in task.instruction  # the desktop has /home/user
    # on Windows itself (env=vm) the paths stay as written, and a Linux desktop cannot run it as is
    on_windows = load_osworld(SHAPES / "waa" / "libreoffice_calc" / "fill-blanks-WOS.json", windows_home=False)
    assert on_windows.skip_reason and on_windows.skip_reason.startswith("needs Windows")


def test_a_waa_task_that_runs_a_windows_command_still_needs_windows():
    task = load_task_file(SHAPES / "waa" / "chrome" / "kill-chrome-WOS.json")
    assert task.skip_reason == "needs Windows: its postconfig runs taskkill, a Windows command"
