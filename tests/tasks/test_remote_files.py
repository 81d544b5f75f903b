"""Files a suite's task names by URL: fetched before the episode, steps and gold paths pointed at the
local copies, and a file that cannot be had skips the task with the URL, the cause and the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mcpworld.config.schema import FilesConfig
from mcpworld.core.downloads import FileCache
from mcpworld.core.errors import TaskFileError
from mcpworld.run.job import fetch_task_files
from mcpworld.tasks.load import load_task_file
from mcpworld.tasks.remote_files import localize, remote_urls
from tests.fakes.file_server import FileServer


def osworld_task(folder: Path, base: str, task_id: str = "0a2e43bf-remote") -> Path:
    """The shape of OSWorld's Office tasks: the document downloaded in setup, the gold by cloud_file."""
    data = {
        "id": task_id,
        "snapshot": "libreoffice_calc",
        "related_apps": ["libreoffice_calc"],
        "instruction": "Fill in the totals.",
        "config": [
            {
                "type": "download",
                "parameters": {
                    "files": [{"url": f"{base}/libreoffice_calc/{task_id}/Budget.xlsx", "path": "/home/user/Budget.xlsx"}]
                },
            },
            {"type": "open", "parameters": {"path": "/home/user/Budget.xlsx"}},
        ],
        "evaluator": {
            "func": "compare_table",
            "postconfig": [
                {
                    "type": "download",
                    "parameters": {
                        "files": [{"url": f"{base}/libreoffice_calc/{task_id}/helper.txt", "path": "/home/user/helper.txt"}]
                    },
                }
            ],
            "result": {"type": "vm_file", "path": "/home/user/Budget.xlsx", "dest": "Budget.xlsx"},
            "expected": {
                "type": "cloud_file",
                "path": f"{base}/libreoffice_calc/{task_id}/Budget_gold.xlsx",
                "dest": "Budget_gold.xlsx",
            },
        },
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{task_id}.json"
    path.write_text(json.dumps(data))
    return path


FILES = {
    "/libreoffice_calc/0a2e43bf-remote/Budget.xlsx": b"budget",
    "/libreoffice_calc/0a2e43bf-remote/helper.txt": b"helper",
    "/libreoffice_calc/0a2e43bf-remote/Budget_gold.xlsx": b"gold",
}


@pytest.fixture
def host():
    with FileServer(FILES) as server:
        yield server


def test_a_url_download_loads_as_a_download_step(tmp_path):
    task = load_task_file(osworld_task(tmp_path, "https://huggingface.co/x/resolve/main"))
    assert task.skip_reason is None
    assert task.setup[0].raw == {
        "download": {
            "url": "https://huggingface.co/x/resolve/main/libreoffice_calc/0a2e43bf-remote/Budget.xlsx",
            "dest": "/home/user/Budget.xlsx",
        }
    }
    assert len(remote_urls(task)) == 3


def test_a_download_without_a_path_is_a_task_file_error(tmp_path):
    path = osworld_task(tmp_path, "https://h")
    data = json.loads(path.read_text())
    data["config"][0]["parameters"]["files"][0].pop("path")
    path.write_text(json.dumps(data))
    with pytest.raises(TaskFileError, match=r"needs 'url' .* and 'path'"):
        load_task_file(path)


def test_localize_points_steps_and_gold_files_at_the_cache(tmp_path, host):
    task = load_task_file(osworld_task(tmp_path / "suite", host.url))
    assert localize(task, FileCache(root=tmp_path / "cache")) is None
    src = Path(task.setup[0].raw["copy"]["src"])
    assert src.read_bytes() == b"budget" and task.setup[0].raw["copy"]["dest"] == "/home/user/Budget.xlsx"
    post = task.evaluator.postconfig[0]["copy"]
    assert Path(post["src"]).read_bytes() == b"helper"
    assert Path(task.evaluator.spec["expected"]["path"]).read_bytes() == b"gold"
    assert remote_urls(task) == []


def test_a_file_that_cannot_be_had_skips_the_task_naming_url_and_fix(tmp_path, host):
    del host.files["/libreoffice_calc/0a2e43bf-remote/Budget_gold.xlsx"]
    tasks = [load_task_file(osworld_task(tmp_path / "suite", host.url))]
    files = OmegaConf.structured(FilesConfig(cache_dir=str(tmp_path / "cache"), retries=1))
    fetch_task_files(tasks, files)
    reason = tasks[0].skip_reason
    assert "Budget_gold.xlsx" in reason and "HTTP 404" in reason
    assert "mcpworld.cli.prefetch" in reason and "files.mirror" in reason


def test_a_run_honours_the_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    for path, body in FILES.items():
        (mirror / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (mirror / path.lstrip("/")).write_bytes(body)
    # an unreachable host: only the mirror can serve these
    tasks = [load_task_file(osworld_task(tmp_path / "suite", "https://huggingface.co/d/resolve/main"))]
    files = OmegaConf.structured(FilesConfig(cache_dir=str(tmp_path / "cache"), mirror=str(mirror), retries=1))
    fetch_task_files(tasks, files)
    assert tasks[0].skip_reason is None
    assert Path(tasks[0].setup[0].raw["copy"]["src"]) == mirror / "libreoffice_calc/0a2e43bf-remote/Budget.xlsx"


def prefetch(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld.cli.prefetch",
            f"tasks.root={tmp_path / 'suite'}",
            f"files.cache_dir={tmp_path / 'cache'}",
            "files.retries=1",
            *overrides,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_prefetch_fills_the_cache_and_reports_failures(tmp_path, host):
    osworld_task(tmp_path / "suite", host.url)
    osworld_task(tmp_path / "suite", host.url, task_id="0b-missing")  # its three files do not exist
    done = prefetch(tmp_path)
    assert done.returncode == 1, done.stderr
    assert "2 task(s)" in done.stderr and "name 6 file(s)" in done.stderr
    assert "FAILED" in done.stderr and "0b-missing/Budget.xlsx: HTTP 404" in done.stderr
    assert "3 downloaded, 3 failed; 1 task(s) would be skipped" in done.stderr
    cache = FileCache(root=tmp_path / "cache")
    assert cache.cached(host.url + "/libreoffice_calc/0a2e43bf-remote/Budget_gold.xlsx").read_bytes() == b"gold"
    fetched = host.count("/libreoffice_calc/0a2e43bf-remote/Budget.xlsx")
    again = prefetch(tmp_path, "task=0a2e43bf-remote")
    assert again.returncode == 0, again.stderr
    assert "3 already in the cache" in again.stderr
    assert host.count("/libreoffice_calc/0a2e43bf-remote/Budget.xlsx") == fetched


def test_prefetch_bad_override_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "suite").mkdir()
    done = prefetch(tmp_path, "files.retries=many")
    assert done.returncode == 2 and "files.retries" in done.stderr, done.stderr


def test_rewrite_takes_a_mapping_or_pairs_and_names_a_bad_value():
    from mcpworld.core.errors import UserError
    from mcpworld.tasks.remote_files import rewrite_rules

    assert rewrite_rules({"https://a/": "/m"}) == rewrite_rules([["https://a/", "/m"]]) == {"https://a/": "/m"}
    assert rewrite_rules(None) == {}
    with pytest.raises(UserError, match=r"files\.rewrite: .*pairs"):
        rewrite_rules(["https://a/=/m"])
