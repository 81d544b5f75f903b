"""OSWorld/WAA task JSON, grading a home directory from the CLI and over HTTP (same verdicts)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from mcpworld.core.errors import TaskFileError
from mcpworld.evaluation.server import make_server
from mcpworld.tasks.load import find_task_files, load_task_file
from mcpworld.tasks.select import discover

TOKEN = "home-token-for-the-test"
TASK = {
    "id": "0b17a146-demo",
    "snapshot": "libreoffice_writer",
    "instruction": "Write the number of lines of /home/user/data.txt into /home/user/count.txt",
    "config": [{"type": "execute", "parameters": {"command": ["bash", "-c", "echo setup"]}}],
    "related_apps": ["os"],
    "evaluator": {
        "func": ["exact_match", "check_include_exclude"],
        "result": [
            {"type": "vm_command_line", "command": "cat /home/user/count.txt"},
            {"type": "content_from_vm_file", "path": "/home/user/count.txt", "file_type": "txt"},
        ],
        "expected": [
            {"type": "rule", "rules": {"expected": "3"}},
            {"type": "rule", "rules": {"include": ["3"], "exclude": ["4"]}},
        ],
    },
}


def write_task(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{data['id']}.json"
    path.write_text(json.dumps(data))
    return path


def cli(task: Path, home: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpworld.evaluation", str(task), "--home", str(home), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def served(tmp_path):
    """The --home service, and a client that carries its token."""
    home = tmp_path / "home"
    home.mkdir()
    server = make_server(home, TOKEN)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    with httpx.Client(
        base_url=f"http://127.0.0.1:{server.server_address[1]}", headers={"Authorization": f"Bearer {TOKEN}"}
    ) as http:
        yield home, http
    server.shutdown()
    server.server_close()


def test_osworld_json_maps_onto_the_task_model(tmp_path):
    data = dict(
        TASK,
        config=[
            {"type": "download", "parameters": {"files": [{"url": "files/data.txt", "path": "/home/user/data.txt"}]}},
            {"type": "launch", "parameters": {"command": ["xterm"]}},
            {"type": "sleep", "parameters": {"seconds": 0.1}},
        ],
    )
    path = write_task(tmp_path / "suite", data)
    task = load_task_file(path)
    assert (task.id, task.app, task.format, task.skip_reason) == ("0b17a146-demo", "os", "osworld", None)
    assert task.setup[0].raw == {"copy": {"src": str(tmp_path / "suite" / "files" / "data.txt"), "dest": "/home/user/data.txt"}}
    assert task.setup[1].raw == {"type": "launch", "parameters": {"command": ["xterm"]}}


@pytest.mark.parametrize(
    "change, reason",
    [
        ({"config": [{"type": "teleport", "parameters": {}}]}, "its setup step 'teleport' is one mcpworld does not have"),
        ({"evaluator": dict(TASK["evaluator"], postconfig=[{"type": "teleport"}])}, "its postconfig step 'teleport'"),
        (
            {"config": [{"type": "googledrive", "parameters": {"settings_file": "s.json", "operation": ["delete"]}}]},
            "needs a Google Drive account",
        ),
        (
            {
                "evaluator": {
                    "func": "compare_pdfs",
                    "result": {"type": "googledrive_file", "path": ["x.pdf"]},
                    "expected": {"type": "cloud_file", "path": "https://h/x.pdf"},
                }
            },
            "needs a Google Drive account",
        ),
        # Windows Agent Arena: Windows' own programs, its Windows steps, Windows paths and shells
        ({"related_apps": ["file_explorer"]}, "needs Windows: it works file_explorer"),
        (
            {"config": [{"type": "create_folder", "parameters": {"path": "C:\\Users\\Docker\\x"}}]},
            "needs Windows: its setup step 'create_folder'",
        ),
        (
            {
                "config": [
                    {
                        "type": "download",
                        "parameters": {
                            "files": [{"url": "https://h/a.xlsx", "path": "C:\\Users\\Docker\\AppData\\Local\\a.xlsx"}]
                        },
                    }
                ]
            },  # no Linux twin
            "needs Windows: its setup names a Windows path or shell ('C:\\\\Users\\\\Docker",
        ),
        (
            {
                "evaluator": dict(
                    TASK["evaluator"],
                    postconfig=[
                        {"type": "launch", "parameters": {"command": ["powershell", "-Command", "Stop-Process", "-Name", "vlc"]}}
                    ],
                )
            },
            "needs Windows: its evaluator names a Windows path or shell ('powershell')",
        ),
        (
            {
                "evaluator": dict(
                    TASK["evaluator"],
                    postconfig=[
                        {
                            "type": "execute",
                            "parameters": {
                                "command": ["python", "-c", "import pyautogui; pyautogui.locateCenterOnScreen('ok.png')"]
                            },
                        }
                    ],
                )
            },
            "pyautogui.locateCenterOnScreen(), which mcpworld does not replay",
        ),
        # what OSWorld's Ubuntu VM runs and our desktop does not: GNOME Shell's settings, systemd
        (
            {
                "config": [
                    {
                        "type": "execute",
                        "parameters": {
                            "command": "gsettings set org.gnome.shell favorite-apps \"['thunderbird.desktop']\"",
                            "shell": True,
                        },
                    }
                ]
            },
            "needs GNOME Shell (it reads or sets the org.gnome.shell settings), which mcpworld's desktop does not run",
        ),
        (
            {"evaluator": {"func": "is_utc_0", "result": {"type": "vm_command_line", "command": "timedatectl status"}}},
            "needs systemd as the init system",
        ),
    ],
)
def test_tasks_this_machine_cannot_run_load_with_a_skip_reason(tmp_path, change, reason):
    task = load_task_file(write_task(tmp_path, dict(TASK, **change)))
    assert reason in task.skip_reason


def test_gnome_desktop_settings_that_dconf_keeps_are_runnable(tmp_path):
    """org.gnome.desktop.* schemas are installed and dconf keeps them: only GNOME Shell's are missing."""
    task = load_task_file(
        write_task(
            tmp_path,
            dict(
                TASK,
                config=[
                    {
                        "type": "execute",
                        "parameters": {"command": ["gsettings", "set", "org.gnome.desktop.screensaver", "lock-enabled", "false"]},
                    }
                ],
            ),
        )
    )
    assert task.skip_reason is None


def test_python_escapes_are_not_windows_paths(tmp_path):
    code = "try:\n    run()\nexcept Exception as e:\n    print(e)"
    task = load_task_file(
        write_task(tmp_path, dict(TASK, config=[{"type": "execute", "parameters": {"command": ["python", "-c", code]}}]))
    )
    assert task.skip_reason is None


def test_suite_tasks_sharing_an_id_are_told_apart_by_folder_and_file(tmp_path, caplog):
    """WAA's two pairs: different tasks, one domain folder, one id, different file names."""
    other = dict(TASK, instruction="another task")
    write_task(tmp_path / "vs_code", TASK)
    (tmp_path / "vs_code" / "0b17a146-demo-2.json").write_text(json.dumps(other))
    write_task(tmp_path / "os", dict(TASK, id="unique"))
    tasks = {t.id: t for t in discover(tmp_path)}
    assert sorted(tasks) == ["unique", "vs_code/0b17a146-demo", "vs_code/0b17a146-demo-2"]
    assert tasks["vs_code/0b17a146-demo-2"].instruction == "another task"
    assert "task id 0b17a146-demo is used by 2 task files" in caplog.text


def test_a_json_task_missing_a_key_names_file_and_key(tmp_path):
    data = {k: v for k, v in TASK.items() if k != "evaluator"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(dict(data, evaluator=None)))
    with pytest.raises(TaskFileError, match=r"bad\.json.*'evaluator'"):
        load_task_file(path)


def test_discover_finds_json_tasks_and_ignores_context_json(tmp_path):
    write_task(tmp_path / "os", TASK)
    (tmp_path / "os" / "settings.json").write_text('{"theme": "dark"}')
    assert [p.name for p in find_task_files(tmp_path)] == ["0b17a146-demo.json"]
    assert [t.id for t in discover(tmp_path)] == ["0b17a146-demo"]


def test_cli_grades_a_home_directory(tmp_path):
    path = write_task(tmp_path / "suite", TASK)
    home = tmp_path / "home"
    home.mkdir()
    untouched = cli(path, home)
    assert untouched.returncode == 0
    assert json.loads(untouched.stdout)["score"] == 0.0
    (home / "count.txt").write_text("3\n")
    done = json.loads(cli(path, home).stdout)
    assert done["score"] == 1.0 and done["success"] is True
    assert [m["name"] for m in done["metrics"]] == ["exact_match", "check_include_exclude"]


def test_cli_bad_task_file_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = cli(bad, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "bad.json" in proc.stderr and "not valid JSON" in proc.stderr


def test_service_and_cli_give_the_same_verdict(tmp_path, served):
    home, http = served
    path = write_task(tmp_path / "suite", TASK)
    for content in (None, "4\n", "3\n"):
        if content is not None:
            (home / "count.txt").write_text(content)
        over_http = http.post("/evaluate", json=TASK).json()
        from_cli = json.loads(cli(path, home).stdout)
        assert over_http["score"] == from_cli["score"]
        assert over_http["metrics"] == from_cli["metrics"]
    assert over_http["success"] is True and over_http["actual"][0].strip() == "3"


def test_service_rejects_bad_requests_with_a_reason(served):
    _, http = served
    bad_json = http.post("/evaluate", content=b"{oops", headers={"Content-Type": "application/json"})
    assert bad_json.status_code == 400 and "not valid JSON" in bad_json.json()["error"]
    no_eval = http.post("/evaluate", json={"id": "x", "instruction": "y"})
    assert no_eval.status_code == 400 and "evaluator" in no_eval.json()["error"]
    no_metric = {"func": "no_such_metric", "result": {"type": "rule", "rules": {}}}
    unknown = http.post("/evaluate", json=dict(TASK, evaluator=no_metric))
    assert unknown.status_code == 400 and "no_such_metric" in unknown.json()["error"]
    assert http.post("/other", json=TASK).status_code == 404


def test_infeasible_task_over_http(served):
    _, http = served
    task = dict(TASK, evaluator={"func": "infeasible"})
    assert http.post("/evaluate", json=dict(task, final_action="FAIL")).json()["score"] == 1.0
    assert http.post("/evaluate", json=task).json()["score"] == 0.0


def test_home_user_in_commands_and_instructions_maps_to_the_home(tmp_path):
    from mcpworld.env.local.home import HomeEnvironment

    env = HomeEnvironment(tmp_path)
    try:
        assert (
            env.map_paths("cat /home/user/a.txt /home/username /home/user") == f"cat {tmp_path}/a.txt /home/username {tmp_path}"
        )
    finally:
        env.close()
    task = load_task_file(write_task(tmp_path / "s", TASK))
    # the suite's own text (desktops give /home/user); only a desktop without it reads ~ (env.files=open)
    assert task.instruction == "Write the number of lines of /home/user/data.txt into /home/user/count.txt"
    from mcpworld.tasks.instructions import shown

    assert shown(task.instruction, suite_paths=False) == "Write the number of lines of ~/data.txt into ~/count.txt"
