"""VS Code as PC-Canary starts it: ``code --user-data-dir=…`` serves that folder's settings, and a
settings.json edited on disk reaches the running editor, as a hook inside VS Code sees it (the
mcpworld.settings-watch extension of the vscode profile; code-server alone re-reads it only at start).
The same for ``code`` as OSWorld starts it, with ~/.config/Code/User/settings.json: one edit after
another, beside settings of extensions that are not installed."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mcpworld.agent.tools.wait_for import WaitForTool
from mcpworld.apps.catalog import programs
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.probes.live import LiveHooks

pytestmark = pytest.mark.desktop

HOOK = """
const report = () => socket.emit("send", {event_type: "font_size",
  value: vscode.workspace.getConfiguration("editor").get("fontSize")});
vscode.workspace.onDidChangeConfiguration((e) => { if (e.affectsConfiguration("editor.fontSize")) report(); });
report();
"""


def code_server_installed() -> bool:
    return any(p.app == "vscode" and p.installed() for p in programs())


@pytest.mark.skipif(not code_server_installed(), reason="code-server is not installed (make apps APPS=vscode)")
async def test_a_user_data_dir_is_served_and_its_settings_edited_on_disk_apply_live(tmp_path: Path) -> None:
    hook = tmp_path / "hooker.js"
    hook.write_text(HOOK)
    events: list[dict] = []
    live = LiveHooks("vscode", [str(hook)], lambda kind, **data: events.append(data))
    first = {"editor.fontSize": 13, "window.title": "SUITE ${rootName}"}
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        data = env.resolve("~/suite/vscode_user_data_dir")
        task = Task(
            id="t/vscode",
            app="vscode",
            instruction="x",
            dir=tmp_path,
            source=tmp_path / "task.yaml",
            setup=[
                {
                    "execute": {
                        "command": f"mkdir -p ~/project {data}/User && echo '{json.dumps(first)}' > {data}/User/settings.json",
                        "shell": True,
                    }
                },
                {
                    "launch": {
                        "command": ["code", "--no-sandbox", f"--user-data-dir={data}", "~/project"],
                        "window": "SUITE project",
                        "timeout": 120,
                    }
                },
            ],
        )
        env.extra_env = live.env()
        try:
            env.reset(task, tmp_path / "ep")  # the title comes from that folder's settings: it is served
            live.start(env.app_pid(), 60)
            wait = WaitForTool(env)
            served = await wait.call({"process": f"code-server --user-data-dir {data} ", "timeout": 5})
            assert served.ok, served.text
            assert (
                not env.resolve("~/.config/Code/User/settings.json").exists()
                or "SUITE" not in env.read_file("~/.config/Code/User/settings.json").decode()
            )
            assert seen(events, 13, within_s=30)
            edited = '{\n  // edited by a script, not in the editor\n  "editor.fontSize": 21,\n  "window.title": "EDITED",\n}\n'
            env.shell(f"cat > {data}/User/settings.json <<'EOF'\n{edited}EOF")
            assert seen(events, 21, within_s=30), events
            assert (await wait.call({"window": "^EDITED$", "timeout": 30})).ok
            assert (data / "User" / "settings.json").read_text() == edited  # applied, never rewritten
        finally:
            live.close()


USER_HOOK = """
const report = () => socket.emit("send", {event_type: "settings", value: {
  fontSize: vscode.workspace.getConfiguration("editor").get("fontSize"),
  theme: vscode.workspace.getConfiguration("workbench").get("colorTheme"),
  semi: vscode.workspace.getConfiguration("prettier").get("semi")}});
vscode.workspace.onDidChangeConfiguration(report);
report();
"""


@pytest.mark.skipif(not code_server_installed(), reason="code-server is not installed (make apps APPS=vscode)")
def test_the_default_user_settings_edited_again_and_again_apply_live(tmp_path: Path) -> None:
    hook = tmp_path / "hooker.js"
    hook.write_text(USER_HOOK)
    events: list[dict] = []
    live = LiveHooks("vscode", [str(hook)], lambda kind, **data: events.append(data))
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        task = Task(
            id="t/vscode",
            app="vscode",
            instruction="x",
            dir=tmp_path,
            source=tmp_path / "task.yaml",
            setup=[
                {"execute": {"command": "mkdir -p ~/project", "shell": True}},
                {"launch": {"command": ["code", "~/project"], "timeout": 120}},
            ],
        )
        env.extra_env = live.env()
        try:
            env.reset(task, tmp_path / "ep")
            live.start(env.app_pid(), 60)
            settings = env.resolve("~/.config/Code/User/settings.json")
            profile = json.loads(settings.read_text())  # the vscode profile's, which the editor started with
            assert latest(events, within_s=30)["fontSize"] == 14
            # each one written by a shell; the first setting to change is one VS Code does not know (no
            # prettier extension here), which VS Code refuses to write: it must not hold the others back
            edits = [
                ({"prettier.semi": False, "editor.fontSize": 17}, {"fontSize": 17, "semi": False}),
                ({"prettier.semi": True, "editor.fontSize": 17}, {"fontSize": 17, "semi": True}),  # only it
                (
                    {"[python]": {"editor.tabSize": 3}, "editor.fontSize": 18, "workbench.colorTheme": "Default Light+"},
                    {"fontSize": 18, "theme": "Default Light+"},
                ),
                ({"workbench.colorTheme": "Default Light+"}, {"fontSize": 14, "theme": "Default Light+"}),
            ]  # removed
            for edit, want in edits:
                text = json.dumps({**profile, **edit}, indent=2) + "\n"
                env.shell(f"cat > ~/.config/Code/User/settings.json <<'EOF'\n{text}EOF")
                deadline = time.monotonic() + 30
                while not want.items() <= latest(events, 0.2).items() and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert want.items() <= latest(events, 0.2).items(), (edit, events[-3:])
                assert settings.read_text() == text  # applied, never rewritten
        finally:
            live.close()


def latest(events: list[dict], within_s: float) -> dict:
    """The settings the hook reported last (waiting up to ``within_s`` for a first report)."""
    deadline = time.monotonic() + within_s
    while not events and time.monotonic() < deadline:
        time.sleep(0.2)
    return events[-1].get("message", {}).get("value", {}) if events else {}


def seen(events: list[dict], size: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if any(e.get("message", {}).get("value") == size for e in events):
            return True
        time.sleep(0.2)
    return False
