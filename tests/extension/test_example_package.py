"""The worked example of docs/ARCHITECTURE.md ("Extending from your own package"): a separate package
(tests/extension/example_pkg) installed with pip declares a provider, a metric and an env backend as
entry points, and a job run through ``python -m mcpworld`` uses them by name; the same parts named as
``package.module:Name`` run too. Its app comes from a conf folder on ``hydra.searchpath``. The example
env backend has no display, so this runs in the fast tier."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = Path(__file__).parent / "example_pkg"

TASK = """\
app: notes
instruction: Write a greeting into ~/greeting.txt with the shell, then say you are done.
evaluator:
  func: {func}
  result: {{type: vm_command_line, command: "cat ~/greeting.txt"}}
"""


def wheel_of(project: Path, out: Path) -> Path:
    """A wheel of the example project, its entry points read from its pyproject.toml: what ``pip wheel``
    makes, without a build backend (this venv's setuptools cannot make wheels without the wheel package)."""
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    name, version = meta["name"].replace("-", "_"), meta["version"]
    info = f"{name}-{version}.dist-info"
    files = {str(p.relative_to(project)): p.read_bytes() for p in sorted(project.glob("mcpworld_example/*.py"))}
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {version}\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    groups = meta["entry-points"]
    files[f"{info}/entry_points.txt"] = "\n".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in names.items()) for group, names in groups.items()
    ).encode()
    record = [f"{path},sha256={_digest(data)},{len(data)}" for path, data in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = out / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package installed as a user would (pip, into a folder of its own on PYTHONPATH)."""
    target = tmp_path_factory.mktemp("site")
    wheel = wheel_of(EXAMPLE, tmp_path_factory.mktemp("dist"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
    )
    assert (target / "mcpworld_example_extension-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


def research_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A research group's repository: its own app config (conf/app/notes.yaml) and two tasks, one judged
    by the example metric's entry-point name and one by its package.module:function."""
    (tmp_path / "conf" / "app").mkdir(parents=True)
    (tmp_path / "conf" / "app" / "notes.yaml").write_text(
        "name: notes\napps: [notes]\nprogram:\n  binary: 'true'\n  names: [notes]\n"
    )
    for name, func in (("by_name", "example_greets"), ("by_reference", "mcpworld_example.metrics:greets")):
        (tmp_path / "tasks" / name).mkdir(parents=True)
        (tmp_path / "tasks" / name / "task.yaml").write_text(TASK.format(func=func))
    return tmp_path / "conf", tmp_path / "tasks"


def run(site: Path, tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpworld", *overrides, f"hydra.run.dir={tmp_path}/run", f"hydra.sweep.dir={tmp_path}/sweep"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT)])),
    )


@pytest.mark.parametrize("provider", ["example_scripted", "mcpworld_example.provider:ScriptedProvider"])
def test_a_job_runs_with_a_provider_a_metric_and_a_backend_of_an_installed_package(
    site: Path, tmp_path: Path, provider: str
) -> None:
    conf, tasks = research_repo(tmp_path)
    proc = run(
        site,
        tmp_path,
        f"hydra.searchpath=[file://{conf}]",
        "app=notes",
        f"tasks.root={tasks}",
        f"provider.kind={provider}",
        "env.backend=example_folder",
        "modality=cli",
        "tracking=none",
        "telemetry.gpu.source=none",
        "telemetry.idle_s=0",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = {p.parts[-3]: json.loads(p.read_text()) for p in (tmp_path / "run").glob("episodes/*/*/result.json")}
    assert {r["task_id"]: (r["status"], r["score"]) for r in results.values()} == {
        "by_name": ("success", 1.0),
        "by_reference": ("success", 1.0),
    }, proc.stderr[-3000:]
    apps = {p.read_text() for p in (tmp_path / "run").glob("episodes/*/*/example_apps.txt")}
    assert apps == {"notes"}  # the app config on the search path reached the desktop
