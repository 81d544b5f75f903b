"""env=docker and the answers (issue 41) and the suites' paths (issue 37), without an engine: the
container mounts the work folder and the files the tasks hand, never a task root; inside, the
suites' paths are the episode's home."""

from __future__ import annotations

from types import SimpleNamespace

from mcpworld.core.task import Task
from mcpworld.env import DesktopSettings
from mcpworld.env.docker.environment import volumes
from mcpworld.env.docker.service import make_suite_paths


def test_the_container_gets_the_handed_files_and_no_task_root(tmp_path):
    root = tmp_path / "suite"
    task_dir = root / "tests/tasks/notes/t1"
    task_dir.mkdir(parents=True)
    for name in ("config.json", "handler.py", "pre_process.py"):
        (task_dir / name).write_text("x")
    task = Task(
        id="notes/t1",
        app="notes",
        instruction="x",
        dir=task_dir,
        source=task_dir / "config.json",
        setup=[{"execute": {"command": f"setsid -f {task_dir}/pre_process.py >/dev/null", "shell": True}}],
    )
    cfg = SimpleNamespace(
        env=None,
        resolution=SimpleNamespace(width=800, height=600),
        agent=SimpleNamespace(settle=None),
        tasks=SimpleNamespace(root=str(root), solutions=str(tmp_path / "solutions")),
        pccanary=SimpleNamespace(root=None),
        toolathlon=SimpleNamespace(root=None),
    )
    settings = DesktopSettings.of(cfg).for_run([task], tmp_path / "outputs")
    assert settings.handed == (task_dir / "pre_process.py",)
    assert set(settings.hidden) == {tmp_path / "solutions", tmp_path / "outputs"} and settings.task_roots == (root,)
    work = tmp_path / "work"
    mounts = volumes(work, settings.handed)
    assert mounts == {
        str(work): {"bind": str(work), "mode": "rw"},
        str(task_dir / "pre_process.py"): {"bind": str(task_dir / "pre_process.py"), "mode": "ro"},
    }


def test_inside_the_container_the_suites_paths_are_the_episodes_home(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root, home = tmp_path / "root", tmp_path / "work/home"
    (root / "home/user").mkdir(parents=True)
    (root / "home/user/.bashrc").write_text("the image's")
    home.mkdir(parents=True)
    make_suite_paths(home, root)
    for name in ("home/user", "home/agent"):
        assert (root / name).is_symlink() and (root / name).resolve() == home
    assert str((root / "workspace").readlink()) == "/home/user/workspace"
    assert str((root / "FreeCAD").readlink()) == "/home/user/FreeCAD"


def test_the_images_build_context_holds_no_built_in_task_nor_solution(tmp_path):
    from mcpworld.core.paths import DATA
    from mcpworld.env.docker.image import build_context

    data = build_context(tmp_path) / "mcpworld" / "data"
    assert (DATA / "tasks").is_dir() and (DATA / "solutions").is_dir()
    assert not (data / "tasks").exists() and not (data / "solutions").exists()
    assert (data / "scripts").is_dir() and (data / "docker" / "desktop.Dockerfile").is_file()  # what the image runs
    assert (tmp_path / "mcpworld" / "env" / "docker" / "service.py").is_file()
