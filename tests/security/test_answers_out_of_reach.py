"""The agent cannot read the answers (issue 41, docs/isolation.md "What a desktop can see"): an
agent-like shell on an env=local desktop (env.files=hidden) tries to read its own task file, another
task's, an oracle solution, a ground-truth workspace, the run's outputs and another desktop's home,
each made world-readable so that only the desktop's mount namespace stands in the way, and fails if
any byte comes back. The same probe on an ``open`` desktop reads them (the probe is not blind). The
suites' paths (/home/user, /workspace, /FreeCAD, /home/agent) are the episode's own home there, and
the desktop's X display, its venv and its network still work."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from mcpworld.core.paths import BUILTIN_TASKS, DATA
from mcpworld.core.task import Task
from mcpworld.env.local import mountns
from mcpworld.env.local.environment import LocalEnvironment
from tests.fakes.answer_files import plant_answers

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(mountns.problem() is not None, reason=f"no mount namespace here: {mountns.problem()}"),
]
SECRET = "ANSWER-7f3e"


@pytest.fixture
def suite(tmp_path):
    """A suite checkout, solutions and outputs, readable by every account."""
    base, files = plant_answers(SECRET)
    yield base, files
    shutil.rmtree(base, ignore_errors=True)


def _task(base: Path) -> Task:
    return Task(id="a/task", app="xterm", instruction="x", dir=base / "suite/tasks/a", source=base / "suite/tasks/a/task.yaml")


def _probe(env: LocalEnvironment, paths: dict[str, Path]) -> dict[str, str]:
    """What the desktop's account read from each path (cat, and a recursive grep of its folder)."""
    found = {}
    for what, path in paths.items():
        done = env.shell(f"cat {path} 2>/dev/null; grep -rs {SECRET} {path.parent} 2>/dev/null; ls -A {path.parent} 2>/dev/null")
        if done.stdout.strip():
            found[what] = done.stdout.strip()[:200]
    return found


def test_a_hidden_desktop_reads_none_of_the_answers_and_has_the_suites_paths(suite, tmp_path):
    base, files = suite
    solution = next(p for p in (DATA / "solutions").rglob("*.yaml"))
    builtin = BUILTIN_TASKS / "xterm" / "count_errors" / "task.yaml"
    assert builtin.is_file() and os.stat(builtin).st_mode & 0o004  # readable by all on the host
    hidden = [base / "suite", base / "solutions", base / "outputs"]
    with (
        LocalEnvironment(800, 600, network="isolated", files="hidden", hidden=hidden) as other,
        LocalEnvironment(800, 600, network="isolated", files="hidden", hidden=hidden) as env,
    ):
        other.reset(_task(base), tmp_path / "other")
        (other.home / "notes.txt").write_text(f"{SECRET} other desktop\n")
        other.home.chmod(0o755)  # only the namespace keeps it out now
        (other.home / "notes.txt").chmod(0o644)
        env.reset(_task(base), tmp_path / "episode")
        (env.home / "mine.txt").write_text("mine\n")
        env.user and os.chown(env.home / "mine.txt", env.user.uid, env.user.gid)
        probe = {
            **files,
            "built-in task": builtin,
            "built-in solution": solution,
            "another desktop's home": other.home / "notes.txt",
            "the harness's temp space": Path(tempfile.mkdtemp(dir="/tmp")) / "x",
        }
        probe["the harness's temp space"].write_text(f"{SECRET}\n")
        probe["the harness's temp space"].parent.chmod(0o755)
        probe["the harness's temp space"].chmod(0o644)
        try:
            assert _probe(env, probe) == {}
        finally:
            shutil.rmtree(probe["the harness's temp space"].parent, ignore_errors=True)
        # what it needs is there: its home under the suites' names, X, the venv, the network
        assert env.shell("cat /home/user/mine.txt /home/agent/mine.txt").stdout == "mine\nmine\n"
        assert (
            env.shell(
                "mkdir -p ~/workspace/.mcpworld/vscode && echo hi > /workspace/.mcpworld/vscode/f && "
                "mkdir -p ~/FreeCAD && touch /FreeCAD/doc.FCStd && echo ok"
            ).stdout.strip()
            == "ok"
        )
        assert (env.home / "workspace/.mcpworld/vscode/f").read_text() == "hi\n" and (env.home / "FreeCAD/doc.FCStd").exists()
        assert other.shell("ls /home/user").stdout.split() == ["notes.txt"]  # each desktop its own
        assert env.shell("xdpyinfo >/dev/null && echo x").stdout.strip() == "x"
        venv = shutil.which("python", path=os.path.dirname(os.sys.executable)) or os.sys.executable
        assert env.shell(f"{venv} -c 'import mcpworld.core.paths as p; print(p.PACKAGE.is_dir())'").stdout.strip() == "True"
        assert env.files_effective == "hidden" and env.suite_paths
        assert json.loads((tmp_path / "episode/logs/desktop.json").read_text())["files"] == "hidden"
    # the same probe without the namespace reads them: it is not blind
    with LocalEnvironment(800, 600, files="open") as open_env:
        open_env.reset(_task(base), tmp_path / "open")
        read = _probe(open_env, {"own task": files["own task"], "built-in task": builtin})
        assert set(read) == {"own task", "built-in task"} and SECRET in read["own task"]
        assert not open_env.suite_paths


def test_pooled_desktops_each_see_their_own_home_and_handed_files(suite, tmp_path):
    base, files = suite
    handed = base / "suite/tasks/a/pre_process.py"
    handed.write_text("print('set up')\n")
    handed.chmod(0o644)
    with LocalEnvironment(800, 600, network="isolated", files="hidden", pool=2, hidden=[base / "suite"], handed=[handed]) as env:
        for n in range(2):
            env.reset(_task(base), tmp_path / f"e{n}")
            (env.home / "n.txt").write_text(f"{n}\n")
            assert env.shell("cat /home/user/n.txt").stdout == f"{n}\n"
            assert env.shell(f"python3 {handed}").stdout == "set up\n"  # what the task's setup runs
            # of the task's folder, only the handed file is there
            assert env.shell(f"ls -A {handed.parent}").stdout.split() == ["pre_process.py"]
            assert SECRET not in str(_probe(env, {"own task": files["own task"]}))
            assert env.files_effective == "hidden"


def test_without_root_hidden_fails_with_one_line(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    from mcpworld.core.errors import UserError

    with pytest.raises(UserError, match=r"^env.files=hidden: the harness is not root, .* set env.files=open"):
        LocalEnvironment(800, 600, files="hidden")
