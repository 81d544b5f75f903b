"""env=docker for real: the desktop image (Debian base imported here, layers cached), the oracle
suite of two apps run inside containers through ``python -m mcpworld`` with their noVNC pages
answering while the episodes run, the do-nothing baseline scoring 0, the desktop account's limits
inside, failures of the container blamed on the environment, and nothing of ours left behind."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

from mcpworld.core.errors import InfraError
from mcpworld.core.task import ContextEntry, Task
from mcpworld.env.docker.environment import OWNER_LABEL, DockerEnvironment, owner_label, reap_containers

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.docker, pytest.mark.slow]
SUITE = "task=[mousepad/*,xterm/*]"  # two apps, seven tasks


def ours(client, pid: int) -> list:
    """Containers a run with process ``pid`` made (whatever their state)."""
    return [
        c
        for c in client.containers.list(all=True, sparse=True, filters={"label": OWNER_LABEL})
        if c.attrs["Labels"][OWNER_LABEL].split()[1] == str(pid)
    ]


def run_suite(tmp_path: Path, client, *overrides: str) -> tuple[list[dict], dict[str, int], int]:
    """Run the suite at concurrency=2; fetch each printed noVNC page while the run goes on. Returns
    the results, each viewer page's HTTP status, and the most containers seen at once."""
    out = open(tmp_path / "stdout.txt", "w")  # noqa: SIM115 - kept open beyond this block
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpworld",
            "env=docker",
            "provider=oracle",
            SUITE,
            "concurrency=2",
            *overrides,
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=ROOT,
        stdout=out,
        stderr=subprocess.PIPE,
        text=True,
    )
    pages: dict[str, int] = {}
    most = 0
    lines = []
    for line in proc.stderr:
        lines.append(line)
        found = re.search(r"watch at (http://127\.0\.0\.1:(\d+)/vnc\.html\S*)", line)
        if found and found.group(2) not in pages:
            page = httpx.get(found.group(1).split("?")[0], timeout=10)
            pages[found.group(2)] = page.status_code if "noVNC" in page.text else -1
            most = max(most, len([c for c in ours(client, proc.pid) if c.attrs["State"] == "running"]))
    assert proc.wait(timeout=600) == 0, "".join(lines)[-3000:]
    results = [json.loads(p.read_text()) for p in sorted((tmp_path / "run").rglob("result.json"))]
    assert ours(client, proc.pid) == [], "the run left containers behind"
    return results, pages, most


def test_the_oracle_suite_of_two_apps_succeeds_in_containers_watched_over_novnc(tmp_path, client, image):
    results, pages, most = run_suite(tmp_path, client)
    assert len(results) == 7 and {r["task_id"].split("/")[0] for r in results} == {"mousepad", "xterm"}
    assert all(r["status"] == "success" and r["score"] == 1.0 for r in results), results
    # each episode had a fresh container of its own, its viewer answering while it ran; beside the two
    # in use, per desktop up to one started ahead (env.pool=1) and the last episode's being removed
    assert len(pages) == 7 and set(pages.values()) == {200}, pages
    assert 2 <= most <= 6
    trace = (tmp_path / "run" / "episodes" / "xterm" / "count_errors" / "0" / "trace.jsonl").read_text()
    assert '"type": "desktop_viewer"' in trace
    logs = tmp_path / "run" / "episodes" / "mousepad" / "append_line" / "0" / "logs"
    assert json.loads((logs / "desktop.json").read_text())["user"] == "mcpworld-d0"  # copied out of the container


def test_doing_nothing_in_containers_scores_zero_also_on_desktops_staged_ahead(tmp_path, client, image):
    # env.stage: each of the two workers sets up its next episode in a second container while one runs
    results, _, _ = run_suite(tmp_path, client, "agent.max_steps=0", "env.stage=true")
    assert len(results) == 7 and all(r["status"] == "failure" and r["score"] == 0.0 for r in results), results
    staged = [r for r in results if r["staged"]]
    assert len(staged) == 5, [r["staged"] for r in results]  # all but each worker's first
    assert all(r["setup_s"] < 0.5 and r["staged"]["stage_s"] > 0 for r in staged)


def test_inside_the_agent_is_the_desktop_account_with_sudo_and_no_harness_secret(tmp_path, client, image, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    task = Task(
        id="t/x",
        app="xterm",
        instruction="-",
        dir=tmp_path,
        source=tmp_path / "task.yaml",
        context=[ContextEntry(notes, "~/notes.txt")],
        setup=[{"launch": {"command": ["xterm"], "window": "xterm"}}],
    )
    env = DockerEnvironment(640, 480, image=image, client=client)
    try:
        env.reset(task, tmp_path / "episode")
        shell = env.shell("id -un; cat ~/notes.txt; env; cat /proc/1/environ; echo password | sudo -S -p '' id -u")
        assert shell.stdout.splitlines()[:2] == ["mcpworld-d0", "hello"]
        assert shell.stdout.splitlines()[-1] == "0"  # sudo inside the container, with OSWorld's password
        assert "sk-must-not-leak" not in shell.stdout and "MCPWORLD_SERVICE" not in shell.stdout
        assert "Permission denied" in shell.stderr  # the service's start-up environment is root's
        assert env.accessibility_tree().startswith("<desktop-frame")  # pyatspi inside, through the service
        env.shell("echo changed > ~/notes.txt")
        assert env.read_file("~/notes.txt") == b"changed\n"  # the host reads the same home
        pid = env.app_pid()
        assert pid and psutil.Process(pid).name() == "xterm"  # numbered as the host sees it (probes attach)
        client.containers.get(env.container.name).kill()  # the desktop dies under the episode
        with pytest.raises(InfraError, match=env.container.name):
            env.act({"kind": "key", "keys": "a"})
        env.reset(task, tmp_path / "next-episode")  # the next episode gets a fresh container all the same
        assert env.read_file("~/notes.txt") == b"hello\n"
    finally:
        env.close()
    assert ours(client, os.getpid()) == []


def test_a_killed_runs_containers_are_removed_and_a_live_runs_kept(client, image):
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = owner_label().split()[0]
    stale = client.containers.run(image, ["sleep", "300"], detach=True, labels={OWNER_LABEL: f"{host} {dead.pid} 1.00"})
    live = client.containers.run(image, ["sleep", "300"], detach=True, labels={OWNER_LABEL: owner_label()})
    elsewhere = client.containers.run(image, ["sleep", "300"], detach=True, labels={OWNER_LABEL: f"another-host {dead.pid} 1.00"})
    try:
        reaped = reap_containers(client)
        assert stale.name in reaped and live.name not in reaped and elsewhere.name not in reaped
        names = {c.name for c in client.containers.list(all=True)}
        assert stale.name not in names and {live.name, elsewhere.name} <= names
    finally:
        for container in (stale, live, elsewhere):
            with contextlib.suppress(Exception):
                container.remove(force=True)


def test_ctrl_c_mid_run_removes_the_runs_containers(tmp_path, client, image):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpworld",
            "env=docker",
            "provider=oracle",
            SUITE,
            "concurrency=2",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for line in proc.stderr:  # an episode is on its desktop
            if "watch at" in line:
                break
        assert len(ours(client, proc.pid)) >= 2  # the two desktops' and those started ahead
        proc.send_signal(signal.SIGINT)
        proc.stderr.read()
        assert proc.wait(timeout=120) == 130
        assert ours(client, proc.pid) == []
    finally:
        proc.kill()


def test_pccanary_tasks_with_their_hooks_run_in_containers(tmp_path, client, image):
    """The fixture checkout under env=docker at concurrency=2: its app script and pre_process from the
    task folder (mounted read-only at its path), a StateInspector hook, a Frida hook the host attaches
    to the app inside a container, and VS Code (code-server and the probe's client taken from this
    machine's .apps into the image) whose extension reports to the episode's sink; the task root given
    relative to the working directory. Each is judged by its own hooks, as under env=local."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld",
            "env=docker",
            "tasks.root=tests/data/pccanary_fixture",
            "tasks.solutions=tests/data/pccanary_solutions",
            "provider=oracle",
            "modality=cli",
            "concurrency=2",
            "tracking=none",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = {r["task_id"]: r for r in (json.loads(p.read_text()) for p in (tmp_path / "run").rglob("result.json"))}
    assert {t: r["status"] for t, r in got.items()} == {
        "notes/task01_append": "success",
        "notes/task02_save": "success",
        "vscode/task01_updateColorTheme": "success",
        "vscode/task02_darkTheme": "failure",
    }, {t: r["reason"] or r["metrics"] for t, r in got.items()}
    assert [s["t"] is not None for s in got["notes/task02_save"]["key_steps"]["timeline"]] == [True, True]
    assert "Default Light+" in got["vscode/task01_updateColorTheme"]["metrics"][0]["reason"]
