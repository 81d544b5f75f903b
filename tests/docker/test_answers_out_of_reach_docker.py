"""The agent cannot read the answers on env=docker (issue 41, docs/isolation.md "What a desktop can
see"): the same probe as tests/security/test_answers_out_of_reach.py, run through a container
desktop's shell (as the agent's bash tool runs it), as the desktop account and as root through its
sudo. The task's suite folder, another task, a solution, a ground-truth workspace and the run's
outputs exist on the host, world-readable, so that only the container stands in the way; the probe
fails if any byte of them comes back. Its positive controls: a secret planted in the episode's home
is found by every probe, and what the task legitimately hands in (a context file, the setup script it
runs) is there. Also: the container binds nothing of the host but its work folder and the handed
file (not the checkout, not the package's built-in tasks and solutions, which the image holds no copy
of either).

And a Toolathlon task's own preprocess (``python -m tasks.finalpool.<task>.preprocess.main``, which
imports from its checkout) on env=docker: it runs on the host's side with its folder in view, as the
desktop's uid, writing into the episode's workspace, before the agent's first step; nothing of it is
left running, and the container never sees the checkout."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from mcpworld.core.paths import BUILTIN_TASKS, DATA, PROJECT
from mcpworld.core.task import ContextEntry, Task
from mcpworld.env import DesktopSettings
from mcpworld.env.docker.environment import DockerEnvironment
from mcpworld.tasks.settings import ToolathlonSettings
from mcpworld.tasks.toolathlon import load_toolathlon
from tests.fakes.answer_files import plant_answers, readable

pytestmark = [pytest.mark.docker, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SECRET = "ANSWER-d0c4e1"
SUDO = "echo password | sudo -S -p '' "  # OSWorld's password: root inside the container


@pytest.fixture
def suite():
    """A suite checkout (its task hands a setup script and a context file), solutions and outputs,
    readable by every account (in /var/tmp, not pytest's 0700 tmp)."""
    base, files = plant_answers(SECRET)
    (base / "suite/tasks/a" / HANDED).write_text("echo set up > ~/handed.txt\n")
    (base / "suite/tasks/a/files").mkdir()
    (base / "suite/tasks/a/files/notes.txt").write_text("context ok\n")
    readable(base)
    yield base, files
    shutil.rmtree(base, ignore_errors=True)


def _settings(tasks: list[Task], base: Path, toolathlon_root: Path | None = None) -> DesktopSettings:
    """What the run gives the backend (``DesktopSettings.of(cfg).for_run``), for a run of ``tasks``."""
    cfg = SimpleNamespace(
        env=None,
        resolution=SimpleNamespace(width=800, height=600),
        agent=SimpleNamespace(settle=None),
        tasks=SimpleNamespace(root=str(base / "suite"), solutions=str(base / "solutions")),
        pccanary=SimpleNamespace(root=None),
        toolathlon=SimpleNamespace(root=toolathlon_root),
    )
    return DesktopSettings.of(cfg).for_run(tasks, base / "outputs")


def _task(base: Path) -> Task:
    folder = base / "suite/tasks/a"
    return Task(
        id="a/task",
        app="xterm",
        instruction="x",
        dir=folder,
        source=folder / "task.yaml",
        context=[ContextEntry(folder / "files/notes.txt", "~/notes.txt")],
        setup=[{"execute": {"command": f"bash {folder}/pre_process.sh", "shell": True}}],
    )


HANDED = "pre_process.sh"  # the one file of the task's folder the container has (listed beside the task file)


def _probe(env: DockerEnvironment, paths: dict[str, Path], root: bool = False) -> dict[str, str]:
    """What the agent's shell read from each path (cat, a recursive grep of its folder, a listing of
    it), as the desktop account or as root (sudo); the handed file's name in a listing is not a leak."""
    found = {}
    for what, path in paths.items():
        line = f"cat {path}; grep -rs {SECRET} {path.parent}; ls -A {path.parent}"
        command = f"{SUDO}bash -c {shlex.quote(line)}" if root else line
        done = env.shell(f"{{ {command}; }} 2>/dev/null")
        read = [out for out in done.stdout.splitlines() if out.strip() and out != HANDED]
        if read:
            found[what] = "\n".join(read)[:200]
    return found


def _probe_as_server(env: DockerEnvironment, paths: dict[str, Path]) -> dict[str, str]:
    """The probe as an MCP server of this desktop would run it (``env.confined``: how mcp/servers.py
    starts a stdio server as the desktop's account), on the host's side of the container."""
    found = {}
    for what, path in paths.items():
        line = f"cat {path}; grep -rs {SECRET} {path.parent}; ls -A {path.parent}"
        done = subprocess.run(
            env.confined(["bash", "-c", f"{{ {line}; }} 2>/dev/null"]), capture_output=True, text=True, timeout=60
        )
        read = [out for out in done.stdout.splitlines() if out.strip() and out != HANDED]
        if read:
            found[what] = "\n".join(read)[:200]
    return found


def _search_everywhere(env: DockerEnvironment) -> str:
    """Root's search of the container's whole file tree for the secret (the kernel's trees left out)."""
    line = f"find / \\( -path /proc -o -path /sys \\) -prune -o -type f -print0 | xargs -0 grep -lsI {SECRET}"
    done = env.shell(f"{SUDO}bash -c {shlex.quote(line)}; true", timeout=240)
    return done.stdout.strip()


def _answer_files(env: DockerEnvironment) -> str:
    """Task files and oracle solutions anywhere in the container (the package's data/tasks and
    data/solutions, wherever a copy of them might lie), found by root."""
    done = env.shell(
        SUDO + "find / \\( -path /proc -o -path /sys \\) -prune -o \\( -name task.yaml -o -name config.json "
        "-path '*tasks*' -o -path '*/data/solutions' -o -path '*/data/tasks' \\) -print 2>/dev/null; true",
        timeout=120,
    )
    return done.stdout.strip()


def test_a_container_desktop_reads_none_of_the_answers(suite, client, image, tmp_path):
    base, files = suite
    task = _task(base)
    settings = _settings([task], base)
    assert settings.handed == (base / "suite/tasks/a/pre_process.sh",)
    builtin = BUILTIN_TASKS / "xterm" / "count_errors" / "task.yaml"
    solution = next(p for p in (DATA / "solutions").rglob("*.yaml"))
    with (
        DockerEnvironment(
            800, 600, image=image, client=client, read_only=settings.handed, pool=0, hidden=settings.hidden
        ) as other,
        DockerEnvironment(
            800,
            600,
            image=image,
            client=client,
            read_only=settings.handed,
            pool=0,
            hidden=(*settings.task_roots, *settings.hidden),
        ) as env,
    ):
        other.reset(task, tmp_path / "other")
        (other.home / "notes.txt").write_text(f"{SECRET} other desktop\n")
        env.reset(task, tmp_path / "episode")
        # the positive controls: what the task hands in is there; a secret in the home is found by every probe
        assert env.shell("cat ~/notes.txt /home/user/handed.txt").stdout == "context ok\nset up\n"
        assert env.shell(f"cat {base}/suite/tasks/a/pre_process.sh").stdout.startswith("echo set up")
        planted = env.home / "planted" / "x.txt"
        planted.parent.mkdir()
        planted.write_text(f"{SECRET} planted\n")
        assert set(_probe(env, {"planted": planted})) == {"planted"}
        assert set(_probe(env, {"planted": planted}, root=True)) == {"planted"}
        assert _search_everywhere(env).splitlines() == [str(planted)]
        shutil.rmtree(planted.parent)

        image_copy = Path("/opt/mcpworld/mcpworld/data")  # where the image holds the package
        probe = {
            **files,
            "built-in task": builtin,
            "built-in solution": solution,
            "the image's built-in task": image_copy / builtin.relative_to(DATA),
            "the image's built-in solution": image_copy / solution.relative_to(DATA),
            "another desktop's home": other.home / "notes.txt",
            "the harness's temp space": Path(tempfile.mkdtemp(dir="/tmp")) / "x",
        }
        probe["the harness's temp space"].write_text(f"{SECRET}\n")
        readable(probe["the harness's temp space"].parent)
        try:
            assert _probe(env, probe) == {}
            assert _probe(env, probe, root=True) == {}
            assert _search_everywhere(env) == ""
            # the MCP servers this desktop's episodes start run on the host, as its account: in a mount
            # namespace of its own, they see its home (the positive control) and nothing of the answers
            served = _probe_as_server(env, {**probe, "planted": env.home / "notes.txt"})
            assert set(served) == {"planted"}, served
        finally:
            shutil.rmtree(probe["the harness's temp space"].parent, ignore_errors=True)
        assert _answer_files(env) == ""  # no copy of the package's built-in tasks or solutions either
        # of the host, the container binds its work folder and the handed file, nothing else
        binds = {m["Source"] for m in client.containers.get(env.container.name).attrs["Mounts"]}
        assert binds == {str(env.workroot), str(base / "suite/tasks/a/pre_process.sh")}
        gone = env.shell(f"{SUDO}ls -d {PROJECT} {PROJECT}/.git {DATA}/tasks {base}/suite/tasks/b /work 2>&1; true").stdout
        assert gone.count("No such file or directory") == 5, gone


def _toolathlon_checkout(base: Path) -> Path:
    """A Toolathlon checkout in miniature: a task whose preprocess imports from the checkout's utils/
    and writes into the agent's workspace; its ground truth holds the secret."""
    root = base / "toolathlon"
    folder = root / "tasks/finalpool/probe-task"
    (root / "utils").mkdir(parents=True)
    (root / "utils/__init__.py").write_text("")
    (root / "utils/made.py").write_text("WHAT = 'made by preprocess'\n")
    for sub in ("docs", "preprocess", "evaluation", "groundtruth_workspace", "initial_workspace"):
        (folder / sub).mkdir(parents=True)
    (folder / "task_config.json").write_text(json.dumps({"needed_mcp_servers": [], "needed_local_tools": []}))
    (folder / "docs/task.md").write_text("Do the thing.\n")
    (folder / "initial_workspace/in.txt").write_text("given\n")
    (folder / "groundtruth_workspace/answer.txt").write_text(f"{SECRET} ground truth\n")
    (folder / "evaluation/main.py").write_text("raise SystemExit(0)\n")
    (folder / "preprocess/main.py").write_text(
        "import argparse, os, pathlib, time\n"
        "from utils.made import WHAT\n"
        "p = argparse.ArgumentParser(); p.add_argument('--agent_workspace'); p.add_argument('--launch_time')\n"
        "a = p.parse_args()\n"
        "w = pathlib.Path(a.agent_workspace)\n"
        "(w / 'made.txt').write_text(f'{WHAT} {os.getuid()} {(w / \"in.txt\").read_text().strip()}\\n')\n"
        "if os.fork() == 0:  # a straggler that outlives the script: it must not outlive the step\n"
        "    os.setsid(); time.sleep(600)\n"
    )
    readable(base)
    return folder


def test_a_toolathlon_preprocess_runs_with_its_folder_and_the_agent_never_sees_it(suite, client, image, tmp_path):
    base, _ = suite
    folder = _toolathlon_checkout(base)
    task = load_toolathlon(folder / "task_config.json", settings=ToolathlonSettings(python="/usr/bin/python3"))
    assert any(s["execute"].get("preprocess") for s in (step.raw for step in task.setup))
    settings = _settings([task], base, toolathlon_root=base / "toolathlon")
    assert settings.handed == ()  # nothing of the checkout goes into the container
    with DockerEnvironment(800, 600, image=image, client=client, read_only=settings.handed, pool=0) as env:
        env.reset(task, tmp_path / "episode")
        made = env.shell("cat ~/workspace/made.txt; stat -c %U ~/workspace/made.txt").stdout.split("\n")
        assert made[:2] == [f"made by preprocess {env.user.uid} given", env.user.name], made
        stragglers = [p for p in psutil.process_iter(["cmdline"]) if "preprocess.main" in " ".join(p.info["cmdline"] or [])]
        assert stragglers == []
        ground_truth = folder / "groundtruth_workspace/answer.txt"
        assert _probe(env, {"ground truth": ground_truth, "preprocess": folder / "preprocess/main.py"}) == {}
        assert _probe(env, {"ground truth": ground_truth}, root=True) == {}
        binds = {m["Source"] for m in client.containers.get(env.container.name).attrs["Mounts"]}
        assert binds == {str(env.workroot)}


def test_the_cli_runs_a_toolathlon_task_with_a_preprocess_in_a_container(suite, client, image, tmp_path):
    """The whole path, ``python -m mcpworld env=docker``: the fixture checkout's relative-grader, whose
    preprocess imports the checkout's utils/ and writes prepared.txt; the oracle reads it through the
    filesystem MCP server, writes the answer, and the grader passes."""
    base, _ = suite
    checkout = base / "toolathlon"
    shutil.copytree(ROOT / "tests/data/toolathlon_fixture", checkout)
    (checkout / "tasks/finalpool/relative-grader/solution.json").write_text(
        json.dumps(
            {
                "mcp": [
                    {"tool": "filesystem-read_text_file", "args": {"path": "{workspace}/prepared.txt"}},
                    {"tool": "filesystem-write_file", "args": {"path": "{workspace}/answer.txt", "content": "Forty Two"}},
                    {"tool": "local-claim_done", "args": {}},
                ]
            }
        )
    )
    readable(base)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld",
            "env=docker",
            "modality=mcp",
            "provider=oracle",
            f"tasks.root={checkout}",
            "task=[toolathlon/relative-grader]",
            "tracking=none",
            "toolathlon.python=/usr/bin/python3",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(p.read_text()) for p in (tmp_path / "run").rglob("result.json")]
    assert [(r["status"], r["score"]) for r in results] == [("success", 1.0)], results
    trace = next((tmp_path / "run").rglob("trace.jsonl")).read_text()
    # prepared.txt was there for the agent: the launch time as the preprocess normalized it (utils' normalize_str)
    assert re.search(r"\d{4}-\d\d-\d\d\d\d:\d\d:\d\d[a-z]+day", trace), trace[-2000:]
