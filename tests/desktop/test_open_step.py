"""OSWorld's and WAA's ``open`` step on a real desktop: the task's catalog app (libreoffice_calc,
spelled "libreoffice-calc" by WAA) opens the file through its command, with WAA's Windows path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.tasks.load import load_task_file

pytestmark = pytest.mark.desktop


def test_a_waa_open_step_opens_the_sheet_in_calc(tmp_path: Path) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    calc = next(p for p in programs() if p.app == "libreoffice_calc")
    if calc.missing_reason():
        pytest.skip(calc.missing_reason())
    sheet = tmp_path / "Fill_Blank.xlsx"
    book = openpyxl.Workbook()
    book.active["A1"] = "x"
    book.save(sheet)
    sheet.chmod(0o644)
    tmp_path.chmod(0o755)
    path = tmp_path / "suite" / "fill-WOS.json"
    path.parent.mkdir()
    path.write_text(
        json.dumps(
            {
                "id": "fill-WOS",
                "snapshot": "libreoffice_calc",
                "instruction": "x",
                "related_apps": ["libreoffice-calc"],
                "config": [
                    {
                        "type": "upload_file",
                        "parameters": {
                            "files": [{"local_path": str(sheet), "path": "C:\\Users\\Docker\\Downloads\\Fill_Blank.xlsx"}]
                        },
                    },
                    {"type": "open", "parameters": {"path": "C:\\Users\\Docker\\Downloads\\Fill_Blank.xlsx"}},
                ],
                "evaluator": {
                    "func": "exact_match",
                    "result": {"type": "vm_command_line", "command": "true"},
                    "expected": {"type": "rule", "rules": {"expected": ""}},
                },
            }
        )
    )
    task = load_task_file(path)
    assert task.skip_reason is None and task.app == "libreoffice_calc"
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp_path / "ep")
        assert (env.home / "Downloads" / "Fill_Blank.xlsx").is_file()
        assert env._windows().wait("Fill_Blank.xlsx", 60) is not None  # the document's own window
        env.end_episode()
