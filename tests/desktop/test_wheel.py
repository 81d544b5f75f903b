"""mcpworld used from a researcher's own folder, as a Hydra app is: a wheel built from this checkout,
installed in a fresh venv and run from an empty folder, composes its own configs with one extra
model file on ``hydra.searchpath`` and runs a built-in task with the oracle; its console scripts
answer; and its machine-local state goes to a per-user folder, not into site-packages.

The venv gets the dependencies cheaply: a .pth naming the project venv's site-packages (a plain
path: that folder's own .pth files, the editable install's finder among them, are not run), written
after the wheel is installed so pip sees no mcpworld there. What it imports is the wheel's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.desktop, pytest.mark.slow]

BUILD_INPUTS = ["pyproject.toml", "MANIFEST.in", "README.md", "mcpworld"]


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without what would point the venv at the checkout or at other state."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MCPWORLD_HOME", "VIRTUAL_ENV")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    # the build reads a copy of the checkout's files (tracked, and new ones not ignored): no build/,
    # egg-info or .apps of this checkout can leak into the wheel, and none is left behind in it
    source = tmp / "source"
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z", "--", *BUILD_INPUTS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():  # a tracked file deleted in the work tree is not there
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    dist = tmp / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        env=clean_env(),
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (wheel,) = dist.glob("mcpworld-*.whl")

    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "mcpworld-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def run(venv: Path, cwd: Path, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """A command of the venv (``python`` or a console script), from ``cwd``."""
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=clean_env(**env)
    )


def test_the_wheel_imports_its_own_package_with_its_data_and_a_per_user_home(venv, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    code = (
        "import json, mcpworld; from mcpworld.core import paths as p; "
        "print(json.dumps({'file': mcpworld.__file__, 'installed': p.INSTALLED, 'home': str(p.HOME), "
        "'data': str(p.DATA), 'tasks': sorted(x.name for x in p.BUILTIN_TASKS.iterdir()), "
        "'apps': str(p.APPS)}))"
    )
    out = run(venv, empty, "python", "-c", code, XDG_DATA_HOME=str(tmp_path / "xdg"))
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout)
    assert Path(found["file"]).resolve().is_relative_to(venv.resolve()), found["file"]  # not the checkout's
    assert found["installed"] and Path(found["data"]).resolve().is_relative_to(venv.resolve())
    assert {"xterm", "mousepad", "vscode", "toolathlon"} <= set(found["tasks"])
    assert found["home"] == str(tmp_path / "xdg" / "mcpworld") and found["apps"] == str(tmp_path / "xdg" / "mcpworld" / ".apps")
    data = Path(found["data"])  # what a run reads besides the configs, dot-folders and executable bits kept
    assert (data / "profiles" / "vscode" / ".vscode" / "extensions").is_dir()
    assert os.access(data / "scripts" / "code.sh", os.X_OK) and (data / "docker" / "desktop.Dockerfile").is_file()
    assert (data / "solutions" / "osworld").is_dir()
    told = run(
        venv, empty, "python", "-c", "from mcpworld.core import paths; print(paths.HOME)", MCPWORLD_HOME=str(tmp_path / "mine")
    )
    assert told.stdout.strip() == str(tmp_path / "mine")


def test_the_console_scripts_answer(venv, tmp_path):
    for script in ("mcpworld-report", "mcpworld-eval"):
        out = run(venv, tmp_path, script, "--help")
        assert out.returncode == 0 and "usage:" in out.stdout, (script, out.stderr[-2000:])
    out = run(venv, tmp_path, "mcpworld", "--help")
    assert out.returncode == 0 and "model: " in out.stdout and "oracle" in out.stdout, out.stderr[-2000:]
    out = run(
        venv,
        tmp_path,
        "mcpworld-prefetch",
        "task=[xterm/count_errors]",
        f"files.cache_dir={tmp_path}/cache",
        XDG_DATA_HOME=str(tmp_path / "xdg"),
    )  # nothing named by URL: nothing to fetch
    assert out.returncode == 0 and "prefetch: 1 task(s)" in out.stderr, out.stderr[-2000:]


def test_an_empty_folder_runs_a_builtin_task_with_a_model_file_of_its_own(venv, tmp_path):
    work = tmp_path / "project"  # the researcher's folder: one model file of theirs, nothing else
    (work / "my_conf" / "model").mkdir(parents=True)
    builtin = (ROOT / "mcpworld" / "conf" / "model" / "oracle.yaml").read_text()
    assert "name: oracle" in builtin
    yaml_text = builtin.replace("name: oracle", "name: my_model")
    (work / "my_conf" / "model" / "my_model.yaml").write_text(yaml_text)
    out = run(
        venv,
        work,
        "mcpworld",
        f"hydra.searchpath=[file://{work / 'my_conf'}]",
        "model=my_model",
        "provider=oracle",
        "task=[xterm/count_errors]",
        "tracking=none",
        timeout=600,
        XDG_DATA_HOME=str(tmp_path / "xdg"),
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    (result,) = [json.loads(p.read_text()) for p in (work / "outputs").rglob("result.json")]
    assert result["task_id"] == "xterm/count_errors"
    assert result["status"] == "success" and result["score"] == 1.0, result
    assert result["labels"]["model"] == "my_model" and result["labels"]["provider"] == "oracle", result["labels"]
    (config,) = (work / "outputs").rglob(".hydra/config.yaml")
    assert "name: my_model" in config.read_text()
    assert sorted(p.name for p in work.iterdir()) == ["my_conf", "outputs"]  # nothing else written beside them
