"""PC-Canary task folders as their authors run them: paths of their machine resolved, every config key
honoured or named, the handler given what PC-Canary's evaluator gives it (tests/data/pccanary_fixture)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.core.errors import EvalError, TaskFileError
from mcpworld.evaluation.handler import HandlerProcess, run_handler
from mcpworld.tasks import mcpworld_format
from mcpworld.tasks.load import load_task_file
from mcpworld.tasks.mcpworld_format import author_path, server_name
from mcpworld.tasks.select import discover
from mcpworld.tasks.settings import LoaderSettings, PcCanarySettings

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "pccanary_fixture"  # a miniature PC-Canary checkout
NOTES = FIXTURE / "tests" / "tasks" / "notes"


@pytest.mark.parametrize(
    "written, here",
    [
        ("/workspace/PC-Canary/apps/notes/notes.sh", str(FIXTURE / "apps/notes/notes.sh")),
        ("/home/agent/agent-demo/PC-Canary/tests/tasks/x/pre_process.py", str(FIXTURE / "tests/tasks/x/pre_process.py")),
        ("PC-Canary/apps/tdesktop/telegram-mcp", str(FIXTURE / "apps/tdesktop/telegram-mcp")),
        ("apps/notes/notes.sh", str(FIXTURE / "apps/notes/notes.sh")),  # relative: PC-Canary runs from its root
        ("/workspace/.mcpworld/vscode/C-Plus-Plus", "/home/user/workspace/.mcpworld/vscode/C-Plus-Plus"),
        ("/home/agent/.local/share/Anki2/sam/collection.anki2", "/home/user/.local/share/Anki2/sam/collection.anki2"),
        ("/usr/bin/freetube", "/usr/bin/freetube"),
        ("obsidian://open?vault=vault", "obsidian://open?vault=vault"),
        ("-r", "-r"),
        ("apps/zulip_user_data_dir", "apps/zulip_user_data_dir"),  # relative and not in the checkout: left alone
    ],
)
def test_paths_of_the_authors_machine_resolve_here(written, here):
    assert author_path(written, FIXTURE) == here


@pytest.mark.parametrize(
    "entry, name",
    [  # the real configs' unnamed server shapes
        ({"command": "uvx", "args": ["mcp-obsidian"]}, "mcp-obsidian"),
        ({"command": "mcp-proxy", "args": ["http://127.0.0.1:6010/sse"]}, "mcp-proxy"),
        (
            {"command": "python3", "args": ["/home/agent/.local/share/FreeCAD/Mod/freecad_mcp/src/freecad_bridge.py"]},
            "freecad_bridge",
        ),
        ({"command": "node", "args": ["/home/agent/obs-mcp/build/index.js"]}, "obs-mcp"),
        ({"command": "uv", "args": ["--directory", "PC-Canary/apps/tdesktop/telegram-mcp", "run", "main.py"]}, "telegram-mcp"),
        (
            {"command": "/home/agent/anki-mcp-server/.venv/bin/python", "args": ["/home/agent/anki-mcp-server/run_server.py"]},
            "anki-mcp-server",
        ),
        ({"command": "npx", "args": ["-y", "/root/mcpworld-testbed/zulip-mcp"]}, "zulip-mcp"),
        ({"command": "uv", "args": ["run", "zotero-mcp"], "cwd": "/home/agent/zotero-mcp"}, "zotero-mcp"),
    ],
)
def test_unnamed_servers_get_a_name_from_their_command(entry, name):
    assert server_name(entry) == name


def test_a_statinspector_task_loads_with_every_key_honoured_or_named():
    task = load_task_file(NOTES / "task01_append")
    assert (task.id, task.app, task.format, task.skip_reason) == ("notes/task01_append", "notes", "mcpworld", None)
    pre, launch = (step.raw for step in task.setup)
    # pre_process: started in the background first, as PC-Canary's evaluator does, its path in the checkout
    assert pre["execute"]["shell"] and pre["execute"]["command"].startswith("setsid -f python3 ")
    assert str(NOTES / "task01_append" / "pre_process.py") in pre["execute"]["command"]
    # executable_path in the authors' checkout, cwd and args in their /workspace: mapped
    assert launch["launch"]["command"] == (
        f"cd /home/user/workspace/.mcpworld/notes/vault && exec {FIXTURE}/apps/notes/notes.sh "
        "/home/user/workspace/.mcpworld/notes/vault/Agenda.md"
    )
    assert [s["name"] for s in task.mcp_servers] == ["mcp-obsidian", "notes-mcp", "mcp-proxy"]
    assert task.mcp_servers[1]["args"] == ["/home/user/notes-mcp/build/index.js"]
    # notes_running is the launch's own readiness check; the rest is named
    assert task.notes == [
        "precondition vault_initialized=true is not checked here (PC-Canary does not check it either)",
        "success_conditions ['text_appended'] kept: PC-Canary's evaluator reads it and acts on it nowhere, "
        "the handler's success update decides",
    ]
    setup = task.handler_setup.as_runner()
    assert setup["config"]["sql_path"] == "/home/user/.local/share/notes/index.txt"
    assert setup["evaluate_on_completion"] is True and setup["live_hooks"] is False
    assert [Path(h).name for h in setup["hooks"]] == ["vault.py", "hooker.py"]  # dependency first, as upstream
    assert task.context[0].dest == "~/workspace/.mcpworld/notes/vault"


def test_a_hook_event_task_names_what_it_cannot_have(tmp_path):
    task = load_task_file(NOTES / "task02_save")
    assert task.skip_reason is None
    assert [step.raw for step in task.setup] == [
        {
            "launch": {
                "command": [str(FIXTURE / "apps/notes/notes.sh"), "/home/user/workspace/.mcpworld/notes/vault/Agenda.md"],
                "window": ".",
                "timeout": 60,
            }
        }
    ]
    assert task.handler_setup.js_hooks and task.handler_setup.evaluator_type == "HookManager"
    assert any("user_logged_in=true" in n for n in task.notes)
    assert not any(n.startswith("its hooks") for n in task.notes)  # Frida runs HookManager hooks
    ipc = json.loads((NOTES / "task02_save" / "config.json").read_text())
    ipc["evaluation_setup"]["evaluator_type"] = "IpcInjector"  # an Electron app's IPC hook: no probe of ours
    electron = tmp_path / "tests" / "tasks" / "joplin" / "task02_save"
    shutil.copytree(NOTES / "task02_save", electron)
    (electron / "config.json").write_text(json.dumps(ipc))
    assert any(
        n.startswith("its hooks hooker.js (IpcInjector) do not run here: no probe of this harness runs them in joplin yet")
        for n in load_task_file(electron).notes
    )
    assert task.mcp_servers[0]["name"] == "notes_bridge"


def test_pccanary_root_resolves_paths_against_another_checkout(tmp_path):
    elsewhere = tmp_path / "PC-Canary"
    shutil.copytree(FIXTURE, elsewhere)
    (elsewhere / "apps" / "notes" / "notes.sh").rename(elsewhere / "apps" / "notes" / "notes-built.sh")
    config = json.loads((NOTES / "task02_save" / "config.json").read_text())
    config["application_info"]["executable_path"] = "apps/notes/notes-built.sh"
    task_dir = tmp_path / "copied" / "task02_save"  # a task folder outside any checkout
    shutil.copytree(NOTES / "task02_save", task_dir)
    (task_dir / "config.json").write_text(json.dumps(config))
    assert "not installed here" in load_task_file(task_dir).skip_reason
    task = load_task_file(task_dir, settings=LoaderSettings(pccanary=PcCanarySettings(root=elsewhere)))
    assert task.skip_reason is None and task.setup[0].raw["launch"]["command"][0] == str(elsewhere / "apps/notes/notes-built.sh")
    with pytest.raises(TaskFileError, match=r"pccanary\.root=/nowhere: no such folder"):
        PcCanarySettings(root=Path("/nowhere"))


def test_the_authors_own_build_runs_as_debians_program_when_this_desktop_has_it(tmp_path, monkeypatch):
    task_dir = tmp_path / "tests" / "tasks" / "gimp" / "task01_createimage"
    task_dir.mkdir(parents=True)
    (task_dir / "handler.py").write_text("def message_handler(m, l, p):\n    return None\n")
    (task_dir / "hooker.js").write_text("send({event: 'ready'});\n")
    (task_dir / "config.json").write_text(
        json.dumps(
            {
                "task_id": "01",
                "task_name": "create_image",
                "instruction_template": "Create a new image",
                "application_info": {"name": "gimp", "executable_path": "/usr/local/bin/gimp", "args": []},
                "evaluation_setup": {
                    "scripts": [{"role": "hook", "path": "hooker.js"}, {"role": "handler", "path": "handler.py"}],
                    "timeout": 60,
                    "evaluator_type": "HookManager",
                    "evaluate_on_completion": False,
                },
                "preconditions": {"gimp_running": True},
                "total_key_steps": 1,
            }
        )
    )
    task = load_task_file(task_dir)
    assert task.setup[0].raw["launch"]["command"] == ["gimp"]  # mcpworld/conf/app/gimp.yaml's program (its shim, its profile)
    assert "window" not in task.setup[0].raw["launch"]  # ready when its own main window takes input, not a splash
    assert task.notes[0] == "runs this desktop's gimp for the authors' own build /usr/local/bin/gimp"
    assert not any("gimp_running" in n for n in task.notes)
    data = json.loads((task_dir / "config.json").read_text())
    data["application_info"]["executable_path"] = "/usr/local/bin/FreeCAD"
    data["application_info"]["executable_path"] = "/usr/local/bin/Frobnicator"
    other = task_dir.parent.parent / "Frobnicator" / "task01_new_doc"
    shutil.copytree(task_dir, other)
    (other / "config.json").write_text(json.dumps(data))
    monkeypatch.setitem(mcpworld_format.DEBIAN_PROGRAMS, "frobnicator", ("frobnicate", "frobnicator-qt"))
    assert load_task_file(other).skip_reason == (  # no app config of ours and not on PATH
        "its application Frobnicator is not installed here (the task starts /usr/local/bin/Frobnicator; "
        "Debian has it: apt-get install frobnicator-qt)"
    )


def test_the_fixture_checkout_is_discovered_as_a_suite():
    assert [t.id for t in discover(FIXTURE)] == [
        "notes/task01_append",
        "notes/task02_save",
        "vscode/task01_updateColorTheme",
        "vscode/task02_darkTheme",
    ]


def grade(task_file: Path, home: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpworld.evaluation", str(task_file), "--home", str(home)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_statinspector_hooks_and_evaluator_config_reach_the_handler(tmp_path):
    """inspector_on_start/on_completion of the Python hook (with its dependency), register_handlers
    given evaluator.config with sql_path in the episode home."""
    home = tmp_path / "home"
    vault = home / "workspace" / ".mcpworld" / "notes" / "vault"
    vault.mkdir(parents=True)
    (vault / "Agenda.md").write_text("## Agenda\n- review budget\n")
    no_index = grade(NOTES / "task01_append", home)  # the index pre_process writes is missing
    assert no_index.returncode != 0 or json.loads(no_index.stdout)["status"] == "eval_error"
    assert "index not found at " + str(home / ".local/share/notes/index.txt") in no_index.stdout + no_index.stderr
    (home / ".local/share/notes").mkdir(parents=True)
    (home / ".local/share/notes/index.txt").write_text("Agenda.md\n")
    # the line was there before the agent started (inspector_on_start saw it): not appended by the agent
    unchanged = grade(NOTES / "task01_append", home)
    result = json.loads(unchanged.stdout)
    assert result["score"] == 0.0 and result["key_steps"]["completed"] == 1


def test_a_hook_event_task_without_its_hooks_is_an_eval_error_and_its_events_still_judge(tmp_path):
    task = load_task_file(NOTES / "task02_save")
    with pytest.raises(EvalError, match="judges from the events of its app hooks"):
        run_handler(task.handler, task.params, tmp_path, setup=task.handler_setup.as_runner())
    # the hook's events (as the Frida probe delivers them) decide: a no is a failure, a yes a success
    for text, score in (("## Agenda\n", 0.0), ("## Agenda\ncall Anna\n", 1.0)):
        proc = HandlerProcess(task.handler, task.params, tmp_path, setup=dict(task.handler_setup.as_runner(), probed=True))
        try:
            steps = proc.send({"type": "send", "payload": {"event": "file_saved", "path": "/x/Agenda.md", "text": text}})
            verdict = proc.complete()  # HookManager: the completion goes to the handler itself
        finally:
            proc.close()
        assert steps == ([1] if score == 0.0 else [1, 2])
        assert verdict.score == score and (score == 1.0 or "saved without the line" in verdict.reason)


def test_no_made_up_completion_reaches_a_handler_that_expects_its_hooks_answer(tmp_path):
    """PC-Canary's VS Code handlers judge the completion event's data, which their hooker.js adds: a
    bare completion would make them say no for the agent's work unseen."""
    handler = tmp_path / "handler.py"
    handler.write_text(
        "def message_handler(m, l, p):\n"
        "    if m.get('event_type') == 'evaluate_on_completion':\n"
        "        ok = m.get('data') == 'Default Light+'\n"
        "        return {'status': 'success' if ok else 'error', 'message': 'theme'}\n"
    )
    setup = {"evaluate_on_completion": True, "live_hooks": True, "config": {}}
    with pytest.raises(EvalError, match="no probe of this harness runs for this app yet"):
        run_handler(handler, {}, tmp_path, setup=setup)
    assert run_handler(handler, {}, tmp_path, setup=dict(setup, live_hooks=False)).score == 0.0  # no hooks: it judges


def test_evaluate_on_completion_false_sends_no_completion(tmp_path):
    handler = tmp_path / "handler.py"
    handler.write_text(
        "def message_handler(m, l, p):\n"
        "    if m.get('event_type') == 'evaluate_on_completion':\n"
        "        return {'status': 'success', 'reason': 'completion seen'}\n"
    )
    assert run_handler(handler, {}, tmp_path, setup={"evaluate_on_completion": True, "config": {}}).score == 1.0
    unjudged = run_handler(handler, {}, tmp_path, setup={"evaluate_on_completion": False, "config": {}})
    assert unjudged.score == 0.0 and "no success or error verdict" in unjudged.reason


def test_standalone_grading_takes_the_suites_roots(tmp_path):
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld.evaluation",
            str(NOTES / "task02_save"),
            "--home",
            str(tmp_path),
            "--pccanary-root",
            "/nowhere",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "pccanary.root=/nowhere: no such folder" in bad.stderr
    toolathlon_task = next((FIXTURE.parent / "toolathlon_fixture" / "tasks").glob("*/*/task_config.json"))
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld.evaluation",
            str(toolathlon_task),
            "--home",
            str(tmp_path),
            "--toolathlon-root",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and f"toolathlon.root={tmp_path}: not a Toolathlon checkout" in bad.stderr
    graded = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld.evaluation",
            str(NOTES / "task02_save"),
            "--home",
            str(tmp_path),
            "--pccanary-root",
            str(FIXTURE),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert graded.returncode == 0 and json.loads(graded.stdout)["status"] == "eval_error"


@pytest.mark.parametrize(
    "kind, sent",
    [
        ("HookManager", {"type": "send", "payload": {"event": "evaluate_on_completion"}}),  # to the handler itself
        ("StateInspector", "bare"),  # no Python hook here: the completion message itself
    ],
)
def test_the_completion_is_what_pc_canarys_evaluator_of_the_kind_sends(tmp_path, kind, sent):
    handler = tmp_path / "handler.py"
    handler.write_text(
        "import json\ndef message_handler(m, l, p):\n    return {'status': 'success', 'reason': json.dumps(m, sort_keys=True)}\n"
    )
    verdict = run_handler(
        handler,
        {},
        tmp_path,
        setup={"evaluate_on_completion": True, "evaluator_type": kind, "live_hooks": True, "probed": True, "config": {}},
    )
    got = json.loads(verdict.reason.split("success: ", 1)[1])
    assert got == sent if sent != "bare" else got["event_type"] == "evaluate_on_completion"
    ipc = run_handler(
        handler,
        {},
        tmp_path,
        setup={"evaluate_on_completion": True, "evaluator_type": "IpcInjector", "live_hooks": True, "probed": True, "config": {}},
    )
    assert ipc.score == 0.0  # IPC: the hooks in the app answer (through the probe), nothing is made up
