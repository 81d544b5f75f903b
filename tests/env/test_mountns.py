"""The desktop's file view (env/local/mountns.py), without a desktop: the order its mounts are made in, the
script that makes them, the files a task hands, and the one line without root."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.core.task import Task
from mcpworld.env import handed_files
from mcpworld.env.local import mountns
from mcpworld.env.local.mountns import FileView, desktop_view


def test_operations_go_shallowest_first_so_a_kept_folder_shows_through_a_hidden_one(tmp_path):
    (tmp_path / "checkout/.venv").mkdir(parents=True)
    (tmp_path / "checkout/pkg/data/tasks").mkdir(parents=True)
    view = FileView(
        hide=(tmp_path / "checkout", tmp_path / "checkout/pkg/data/tasks", tmp_path / "gone"),
        keep=(tmp_path / "checkout/.venv", tmp_path / "checkout/pkg"),
        binds=(("/home/user", tmp_path),),
        links=(("/workspace", "/home/user/workspace"),),
    )
    ops = [(kind, path.removeprefix(str(tmp_path))) for kind, path, _ in view.operations()]
    assert (
        ops.index(("hide", "/checkout"))
        < ops.index(("keep", "/checkout/.venv"))
        < ops.index(("keep", "/checkout/pkg"))
        < ops.index(("hide", "/checkout/pkg/data/tasks"))
    )
    assert ("hide", "/gone") not in ops  # nothing to hide where nothing is
    script = mountns.setup_script(view, "/R", ["usr", "home", "workspace"])
    assert 'mount --rbind /usr "$R"/usr' in script and 'mount --rbind /home "$R"/home' in script
    assert "--rbind /workspace" not in script  # the host's own /workspace (if any) is replaced by the view
    assert "pivot_root . .old" in script and 'ln -sfn /home/user/workspace "$R"/workspace' in script


def test_the_desktops_view_hides_the_benchmark_and_keeps_what_it_runs(tmp_path):
    from mcpworld.core import paths

    view = desktop_view(tmp_path / "home", [tmp_path], hidden=[tmp_path / "suite"])
    assert {paths.BUILTIN_TASKS, paths.DATA / "solutions", Path("/home"), tmp_path / "suite"} <= set(view.hide)
    assert Path("/tmp") in view.fresh
    assert {tmp_path, paths.PACKAGE, paths.APPS, mountns.X_SOCKETS} <= set(view.keep)
    assert dict(view.binds) == {"/home/user": tmp_path / "home", "/home/agent": tmp_path / "home"}
    assert dict(view.links) == {"/workspace": "/home/user/workspace", "/FreeCAD": "/home/user/FreeCAD"}


def test_a_task_hands_the_files_its_setup_runs_from_its_folder_and_nothing_else(tmp_path):
    folder = tmp_path / "suite" / "tests" / "tasks" / "notes" / "t1"
    folder.mkdir(parents=True)
    for name in ("pre_process.py", "handler.py", "config.json"):
        (folder / name).write_text("x")
    outside = tmp_path / "elsewhere.sh"
    outside.write_text("x")
    task = Task(
        id="notes/t1",
        app="notes",
        instruction="x",
        dir=folder,
        source=folder / "config.json",
        setup=[
            {"execute": {"command": f"setsid -f {folder}/pre_process.py --x=1 >/dev/null", "shell": True}},
            {"execute": {"command": f"cd {folder} && {outside}", "shell": True}},
        ],
    )
    assert handed_files([task], [tmp_path / "suite"]) == (folder / "pre_process.py",)
    assert json.dumps([step.raw for step in task.setup])  # (unchanged)


def test_without_root_the_view_is_refused_with_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert mountns.problem() == "the harness is not root"
    with pytest.raises(UserError) as caught:
        mountns.require()
    assert "\n" not in str(caught.value) and "env.files=open" in str(caught.value)


@pytest.mark.skipif(mountns.problem() is not None, reason="needs root and util-linux")
def test_a_killed_runs_namespaces_are_swept(tmp_path, monkeypatch):
    ns = mountns.MountNamespace.create(FileView(hide=(tmp_path,)))
    monkeypatch.setattr(mountns, "owner_alive", lambda name: name != ns.name)  # (as if its process were gone)
    assert ns.name in mountns.sweep()
    assert not ns.pin.exists() and not ns.root.exists()
