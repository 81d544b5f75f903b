"""One task selection for a run and a prefetch (mcpworld/tasks/select.py find_tasks, its settings read from
the config by TaskSettings.of), and the registry of task file formats the loaders fill."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.cli import prefetch as prefetch_cli
from mcpworld.core.errors import TaskFileError
from mcpworld.core.task import Task
from mcpworld.tasks.formats import FORMATS
from mcpworld.tasks.load import load_task_file
from mcpworld.tasks.settings import PcCanarySettings, TaskSelection, TaskSettings, ToolathlonSettings
from tests.helpers.config import make

DATA = Path(__file__).resolve().parents[1] / "data"
PCCANARY = DATA / "pccanary_fixture"  # a miniature PC-Canary checkout
TOOLATHLON = DATA / "toolathlon_fixture"  # a miniature Toolathlon checkout


def prefetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *overrides: str) -> dict[str, Task]:
    """The tasks ``python -m mcpworld.cli.prefetch OVERRIDES`` chose and loaded, by id."""
    seen: list[Task] = []
    monkeypatch.setattr(prefetch_cli, "remote_urls", lambda task: seen.append(task) or [])
    assert prefetch_cli.prefetch([f"files.cache_dir={tmp_path / 'cache'}", *overrides]) == 0
    return {t.id: t for t in seen}


def run_prefetch(*overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpworld.cli.prefetch", *overrides], capture_output=True, text=True, timeout=120
    )


def test_prefetch_honours_pccanary_root(tmp_path, monkeypatch):
    suite = tmp_path / "suite" / "notes"  # a PC-Canary task folder outside any checkout
    shutil.copytree(
        PCCANARY / "tests" / "tasks" / "notes" / "task02_save",
        suite / "task02_save",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    alone = prefetched(tmp_path, monkeypatch, f"tasks.root={tmp_path / 'suite'}")["notes/task02_save"]
    assert alone.handler_setup.root != str(PCCANARY) and "not installed here" in alone.skip_reason
    # pccanary.root: the authors' paths (its app script, its context data) resolve in that checkout
    task = prefetched(tmp_path, monkeypatch, f"tasks.root={tmp_path / 'suite'}", f"pccanary.root={PCCANARY}")["notes/task02_save"]
    assert task.handler_setup.root == str(PCCANARY) and task.skip_reason is None
    assert task.setup[0].raw["launch"]["command"][0] == str(PCCANARY / "apps" / "notes" / "notes.sh")
    assert task.context[0].src == PCCANARY / "tests" / "context_data" / "notes" / "vault"


def test_prefetch_honours_toolathlon_root_and_settings(tmp_path, monkeypatch):
    checkout = tmp_path / "checkout"
    shutil.copytree(TOOLATHLON, checkout, ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / "tasks" / "utils").mkdir()  # a utils/ nearer the tasks than the checkout's own
    finalpool = checkout / "tasks" / "finalpool"
    found = prefetched(tmp_path, monkeypatch, f"tasks.root={finalpool}", f"toolathlon.python={sys.executable}")
    assert found["toolathlon/relative-grader"].grader.module == "finalpool.relative-grader.evaluation.main"
    found = prefetched(
        tmp_path,
        monkeypatch,
        f"tasks.root={finalpool}",
        f"toolathlon.root={checkout}",
        f"toolathlon.python={sys.executable}",
        "toolathlon.lang=cn",
    )
    task = found["toolathlon/relative-grader_cn"]  # toolathlon.lang=cn: the _cn variants
    assert task.grader.root == checkout.resolve() and task.grader.python == sys.executable
    assert task.grader.module == "tasks.finalpool.relative-grader.evaluation.main_cn"


def test_the_prefetch_command_stops_on_a_bad_suite_root_naming_the_key(tmp_path):
    done = run_prefetch(
        f"tasks.root={TOOLATHLON / 'tasks' / 'finalpool'}", f"toolathlon.root={tmp_path}", f"files.cache_dir={tmp_path / 'cache'}"
    )
    assert done.returncode == 2 and f"toolathlon.root={tmp_path}: not a Toolathlon checkout" in done.stderr
    done = run_prefetch(f"tasks.root={PCCANARY}", "pccanary.root=/nowhere", f"files.cache_dir={tmp_path / 'cache'}")
    assert done.returncode == 2 and "pccanary.root=/nowhere: no such folder" in done.stderr, done.stderr


def test_task_settings_are_read_from_the_config_once(tmp_path):
    cfg = make(
        f"tasks.root={tmp_path}",
        "task=[notes/*,vscode/task01_updateColorTheme]",
        "app=mousepad",
        "tasks.exclude_tags=[slow]",
        f"toolathlon.root={TOOLATHLON}",
        "toolathlon.lang=cn",
        "toolathlon.claim_done=false",
        f"pccanary.root={PCCANARY}",
    )
    settings = TaskSettings.of(cfg)
    assert settings.selection == TaskSelection(
        root=tmp_path.resolve(),
        apps=("mousepad",),
        patterns=("notes/*", "vscode/task01_updateColorTheme"),
        exclude_tags=("slow",),
    )
    assert settings.loaders.toolathlon == ToolathlonSettings(root=TOOLATHLON, lang="cn", claim_done=False)
    assert settings.loaders.pccanary == PcCanarySettings(root=PCCANARY)


def test_a_file_of_no_known_format_is_one_error_naming_every_format(tmp_path):
    assert set(FORMATS) == {"native", "osworld", "mcpworld", "toolathlon"}
    for name, text in (("notes.json", json.dumps({"title": "not a task"})), ("task.txt", "hello")):
        (tmp_path / name).write_text(text)
        with pytest.raises(TaskFileError, match="not a task file of a known format") as caught:
            load_task_file(tmp_path / name)
        assert all(f"{fmt} (" in str(caught.value) for fmt in FORMATS)


def test_a_file_two_formats_claim_is_refused(tmp_path):
    path = tmp_path / "task_config.json"
    path.write_text(
        json.dumps({"id": "x", "instruction": "do", "evaluator": {"func": "infeasible"}, "needed_mcp_servers": ["filesystem"]})
    )
    with pytest.raises(TaskFileError, match=r"more than one format \(osworld, toolathlon\)"):
        load_task_file(path)
