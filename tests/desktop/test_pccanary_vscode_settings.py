"""PC-Canary's VS Code settings tasks answered from a shell (issue 37): for each setting the fork's
hooks read (the theme, auto save and the git blame decoration from VS Code's configuration; the font
size and the tab size from a settings file), a cli oracle that only edits a settings.json on disk is
judged by the task's hook and handler, and doing nothing, or the nearly right edit, is not.

The tasks are tests/data/pccanary_vscode_settings, a miniature of the AguLeon fork's VS Code tasks (our
own hooks and handlers, reading what the fork's read, as the fork's read it; context data in the fork's
layout, whose workspace settings name the theme): the solutions are the project's own,
mcpworld/data/solutions/pccanary/vscode, certified against the fork itself in
docs/pccanary_certificate.md."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.apps.catalog import programs

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tests" / "data" / "pccanary_vscode_settings" / "tests" / "tasks" / "vscode"
SOLUTIONS = ROOT / "mcpworld" / "data" / "solutions" / "pccanary"
pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def code_server_installed() -> bool:
    return any(p.app == "vscode" and p.installed() for p in programs())


@pytest.mark.skipif(not code_server_installed(), reason="code-server is not installed (make apps APPS=vscode)")
def test_each_setting_the_hooks_read_is_set_by_a_file_edit(tmp_path: Path) -> None:
    out = tmp_path / "cert"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld.certify",
            f"tasks.root={TASKS}",
            f"tasks.solutions={SOLUTIONS}",
            "modality=cli",
            "tracking=none",
            "--n",
            "1",
            "--concurrency",
            "2",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with (out / "certificate.csv").open(newline="") as f:
        cert = {r["task_id"]: r for r in csv.DictReader(f)}
    # success with the edit, failure doing nothing and with the declared wrong edit
    assert {t: (r["status"], r["spoil"]) for t, r in cert.items()} == {
        f"vscode/{name}": ("certified", "declared")
        for name in (
            "task01_updateColorTheme",
            "task04_updateFontSize",
            "task11_autosave",
            "task14_editTabSize",
            "task22_enableGitBlame",
        )
    }, {t: r["note"] for t, r in cert.items()}

    def events(mode: str, task: str) -> list[dict]:
        trace = out / mode / "episodes" / "vscode" / task / "0" / "trace.jsonl"
        return [e["message"] for e in map(json.loads, trace.read_text().splitlines()) if e["type"] == "app_event"]

    def seen(mode: str, task: str) -> dict:
        (levels,) = [m["data"] for m in events(mode, task) if m["event_type"] == "settings_seen"]
        return levels

    # the running editor took each edited file: the workspace settings (the theme, the tab size) and the
    # user settings of the task's --user-data-dir (the blame decoration, through mcpworld.settings-watch)
    assert seen("oracle", "task01_updateColorTheme") == {"workspace": "Default Light+"}
    assert seen("oracle", "task14_editTabSize") == {"workspace": 2}
    assert seen("oracle", "task22_enableGitBlame") == {"user": True}
    assert seen("noop", "task22_enableGitBlame") == {}
    # the answer that was seen to fail: the theme in the user settings (the task's user-data-dir and
    # ~/.config/Code/User) reaches the editor, and the workspace settings' theme stays in force over it,
    # as desktop VS Code has it
    assert seen("spoiled", "task01_updateColorTheme") == {"user": "Default Light+", "workspace": "Default Dark Modern"}
    (final,) = [m for m in events("spoiled", "task01_updateColorTheme") if m["event_type"] == "evaluate_on_completion"]
    assert final["data"] == "Default Dark Modern"
