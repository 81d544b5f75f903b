"""``env=vm`` against a server that speaks OSWorld's VM server API (tests/fakes/osworld_vm.py, held
to the replies of OSWorld's own server in tests/data/vm/), over a real local desktop: real HTTP,
real pyautogui input on the "VM", real apps, the project's real CLI."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from mcpworld.evaluation.client import EvaluationClient
from tests.fakes.scripted_server import free_port
from tests.fakes.vm_reply_shapes import reply_shapes
from tests.helpers.cli import ROOT, results, run_cli

pytestmark = [pytest.mark.desktop]
RECORDED = ROOT / "tests" / "data" / "vm" / "osworld_server_replies.json"
OSWORLD_OS = ROOT / "tests" / "data" / "osworld" / "os"
SOLUTIONS = ROOT / "mcpworld" / "data" / "solutions" / "osworld"
SIZE = ("resolution.width=1280", "resolution.height=800")


def _free_display() -> str:
    n = 150
    while Path(f"/tmp/.X11-unix/X{n}").exists() or Path(f"/tmp/.X{n}-lock").exists():
        n += 1
    return f":{n}"


def start_vm(tmp_path: Path, dialect: str = "osworld", size: tuple[int, int] = (1280, 800)):
    """A fake VM and the reset command that restarts it on a fresh home (as reverting a snapshot does);
    each reset is a line of ``resets.log`` beside the folder (``<time> <folder name>``)."""
    if not (shutil.which("wmctrl") and shutil.which("openbox")):
        pytest.skip("the VM's desktop needs wmctrl and openbox (make setup)")
    tmp_path.mkdir(parents=True, exist_ok=True)
    port, home, display = free_port(), tmp_path / "vm-home", _free_display()
    command = [
        sys.executable,
        str(ROOT / "tests" / "fakes" / "osworld_vm.py"),
        "--port",
        str(port),
        "--home",
        str(home),
        "--display",
        display,
        "--width",
        str(size[0]),
        "--height",
        str(size[1]),
        "--dialect",
        dialect,
    ]
    pidfile = tmp_path / "vm.pid"
    reset = tmp_path / "reset.sh"
    reset.write_text(
        "#!/bin/bash\n"
        f'echo "$(date +%s.%N) {tmp_path.name}" >> {tmp_path.parent}/resets.log\n'
        f'pid=$(cat {pidfile} 2>/dev/null); [ -n "$pid" ] && kill $pid\n'
        f'while [ -n "$pid" ] && kill -0 $pid 2>/dev/null; do sleep 0.1; done\n'
        f"rm -rf {home}\n"
        f"setsid {' '.join(command)} >>{tmp_path}/vm.log 2>&1 </dev/null &\n"
        f"echo $! > {pidfile}\n"
    )
    reset.chmod(0o755)
    subprocess.run([str(reset)], check=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(url + "/screenshot", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, (tmp_path / "vm.log").read_text()[-2000:]
        time.sleep(0.2)
    return url, str(reset), pidfile


@pytest.fixture
def fake_vm(tmp_path):
    url, reset, pidfile = start_vm(tmp_path / "vm")
    yield url, reset
    subprocess.run(["kill", pidfile.read_text().strip()], capture_output=True)


@pytest.fixture
def fake_windows_vm(tmp_path):
    url, reset, pidfile = start_vm(tmp_path / "vm", "waa")
    yield url, reset
    subprocess.run(["kill", pidfile.read_text().strip()], capture_output=True)


def test_the_fake_answers_as_osworlds_own_server(fake_vm):
    url, _ = fake_vm
    assert reply_shapes(url) == json.loads(RECORDED.read_text())


def test_gui_tasks_on_the_vm_get_the_verdicts_they_get_on_our_desktop(tmp_path, fake_vm):
    url, reset = fake_vm
    vm = ("env=vm", f"env.vm.url={url}", f"env.vm.reset_command={reset}", *SIZE, "tracking=none")
    tasks = "task=[mousepad/append_line,mousepad/delete_first_line]"
    verdicts = {}
    local = (*SIZE, "tracking=none")
    for name, extra in (
        ("vm-oracle", vm),
        ("vm-noop", (*vm, "agent.max_steps=0")),
        ("local-oracle", local),
        ("local-noop", (*local, "agent.max_steps=0")),
    ):
        proc = run_cli(tmp_path / name, "provider=oracle", "modality=gui", tasks, *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
        verdicts[name] = {r["task_id"]: r["status"] for r in results(tmp_path / name / "run")}
    assert set(verdicts["vm-oracle"].values()) == {"success"} and len(verdicts["vm-oracle"]) == 2
    assert set(verdicts["vm-noop"].values()) == {"failure"}
    assert verdicts["vm-oracle"] == verdicts["local-oracle"] and verdicts["vm-noop"] == verdicts["local-noop"]
    # actions reached the VM as the suites' harnesses send them: pyautogui code to /execute
    trace = next((tmp_path / "vm-oracle" / "run").rglob("trace.jsonl")).read_text()
    assert '"computer"' in trace


def test_osworld_tasks_run_on_the_vm_and_without_a_reset_say_so(tmp_path, fake_vm):
    url, _ = fake_vm
    gsettings = (
        "task=[3ce045a0-877b-42aa-8d2c-b4a863336ab8,a4d98375-215b-4a4d-aee9-3d4370fccc41,"
        "f9be0997-4b7c-45c5-b05c-4612b44a6118]"
    )  # (the terminal task: its own test, below)
    common = (
        "env=vm",
        f"env.vm.url={url}",
        *SIZE,
        "tracking=none",
        f"tasks.root={OSWORLD_OS}",
        f"tasks.solutions={SOLUTIONS}",
        "provider=oracle",
        "modality=cli",
        gsettings,
    )
    proc = run_cli(tmp_path / "oracle", *common)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rs = results(tmp_path / "oracle" / "run")
    assert len(rs) == 3 and all(r["status"] == "success" for r in rs), [(r["task_id"], r["status"]) for r in rs]
    assert all(any("without env.vm.reset_command" in n for n in r["task_notes"]) for r in rs)


def test_a_vm_of_another_screen_size_is_a_clear_error_before_any_episode(tmp_path, fake_vm):
    url, _ = fake_vm
    proc = run_cli(
        tmp_path,
        "env=vm",
        f"env.vm.url={url}",
        "resolution=square",
        "tracking=none",
        "provider=oracle",
        "task=[mousepad/append_line]",
    )
    assert proc.returncode != 0
    assert "the VM's screen is 1280x800" in proc.stderr and "resolution.width=1280" in proc.stderr
    assert not results(tmp_path / "run")


def test_a_vm_that_does_not_answer_is_the_environments_failure(tmp_path):
    proc = run_cli(
        tmp_path,
        "env=vm",
        f"env.vm.url=http://127.0.0.1:{free_port()}",
        "env.vm.ready_timeout_s=2",
        "tracking=none",
        "provider=oracle",
        "task=[mousepad/append_line]",
    )
    rs = results(tmp_path / "run")  # (an infra_error is tried again, up to the job's retries)
    assert rs and all(r["status"] == "infra_error" and "did not answer /screenshot within 2s" in r["reason"] for r in rs), (
        proc.stderr[-2000:]
    )


WAA = ROOT / "tests" / "data" / "vm"
WAA_FILES = f"files.rewrite=[[https://raw.githubusercontent.com/mcpworld-fixture/winarenafiles/main/,{WAA / 'waa_files'}/]]"


def test_a_windows_task_runs_to_its_verdict_on_a_waa_vm(tmp_path, fake_windows_vm):
    """A WAA-shaped task (Windows paths, a Windows program, WAA's own getter) on a server that speaks
    WAA's dialect: graded 1 with the oracle and 0 doing nothing, where our own desktop skips it."""
    url, reset = fake_windows_vm
    common = (
        "env=vm",
        "env.vm.kind=waa",
        f"env.vm.url={url}",
        f"env.vm.reset_command={reset}",
        *SIZE,
        "tracking=none",
        f"tasks.root={WAA / 'waa'}",
        f"tasks.solutions={WAA / 'waa_solutions'}",
        "provider=oracle",
        "modality=cli",
        WAA_FILES,
    )
    for name, extra, status in (("oracle", (), "success"), ("noop", ("agent.max_steps=0",), "failure")):
        proc = run_cli(tmp_path / name, *common, *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (r,) = results(tmp_path / name / "run")
        assert (r["task_id"], r["status"]) == ("png-names-WOS", status), r["reason"]
    local = run_cli(tmp_path / "local", f"tasks.root={WAA / 'waa'}", "tracking=none", "provider=oracle", WAA_FILES)
    assert "needs Windows" in local.stderr and not results(tmp_path / "local" / "run")


TERMINAL_TASK = "13584542-872b-42d8-b299-866967b5c3ef"  # OSWorld os/: graded by vm_terminal_output


def test_a_terminal_graded_task_reads_the_vms_own_terminal(tmp_path):
    """OSWorld's os/13584542 on a VM (GNOME Terminal opened by ctrl+alt+t, read over AT-SPI by the
    server's /terminal, as on the Ubuntu VM): success with its oracle, failure doing nothing, each
    verdict on the terminal's own text. The VM's screen is OSWorld's (1920x1080): 43 rows must fit."""
    if not shutil.which("gnome-terminal") or subprocess.run(["/usr/bin/python3", "-c", "import pyatspi"]).returncode:
        pytest.skip("the VM's terminal needs gnome-terminal and Debian's python3-pyatspi (make setup)")
    url, reset, pidfile = start_vm(tmp_path / "vm", size=(1920, 1080))
    try:
        common = (
            "env=vm",
            f"env.vm.url={url}",
            f"env.vm.reset_command={reset}",
            "resolution=fhd",
            "tracking=none",
            f"tasks.root={OSWORLD_OS}",
            f"tasks.solutions={SOLUTIONS}",
            "provider=oracle",
            "modality=cli",
            f"task=[{TERMINAL_TASK}]",
        )
        for name, extra, status, shown in (
            ("oracle", (), "success", "43 132"),
            ("noop", ("agent.max_steps=0",), "failure", "24 80"),
        ):
            proc = run_cli(tmp_path / name, *common, *extra)
            assert proc.returncode == 0, proc.stderr[-3000:]
            (r,) = results(tmp_path / name / "run")
            actual = r["metrics"][0]["actual"]
            assert (r["status"], "stty size" in actual, shown in actual) == (status, True, True), (r["reason"], actual)
    finally:
        subprocess.run(["kill", pidfile.read_text().strip()], capture_output=True)


def unicode_task(tmp_path: Path, line: str) -> Path:
    """The built-in mousepad/append_line, asked to add a line of any text (the oracle types it)."""
    root = tmp_path / "tasks"
    shutil.copytree(ROOT / "mcpworld" / "data" / "tasks" / "mousepad" / "append_line", root / "append_unicode")
    task = root / "append_unicode" / "task.yaml"
    task.write_text(task.read_text().replace('line: "- milk"', f"line: {json.dumps(line)}"))
    return root


def test_unicode_typing_arrives_whole_on_the_vm(tmp_path, fake_vm):
    """Text pyautogui.write cannot type (accents, a capital Ü, CJK) reaches the VM's editor whole,
    typed with the VM's own input; the saved file is graded by the task's own evaluator."""
    url, reset = fake_vm
    line = "café Ünïcode 日本 ok ÀÉÎ ß €"
    proc = run_cli(
        tmp_path / "run-unicode",
        "env=vm",
        f"env.vm.url={url}",
        f"env.vm.reset_command={reset}",
        *SIZE,
        "tracking=none",
        "provider=oracle",
        "modality=gui",
        f"tasks.root={unicode_task(tmp_path, line)}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (r,) = results(tmp_path / "run-unicode" / "run")
    assert r["status"] == "success", (r["reason"], r["metrics"])
    assert r["metrics"][0]["actual"].strip() == line


def test_a_pool_of_two_vms_runs_two_episodes_at_once(tmp_path):
    """env.vm.urls=[…] with one reset command naming {url}: concurrency=2 gives each concurrent
    episode its own VM (4 episodes, no infra_error, both VMs used); a third concurrent episode is
    refused before any starts."""
    vms = [start_vm(tmp_path / f"vm{i}") for i in (1, 2)]
    try:
        by_url = tmp_path / "reset-by-url.sh"
        by_url.write_text(
            '#!/bin/bash\ncase "$1" in\n'
            + "".join(f"  {url}) exec {reset};;\n" for url, reset, _ in vms)
            + '  *) echo "no VM at $1" >&2; exit 3;;\nesac\n'
        )
        by_url.chmod(0o755)
        pool = (
            "env=vm",
            f"env.vm.urls=[{vms[0][0]},{vms[1][0]}]",
            f'env.vm.reset_command="{by_url} {{url}}"',
            *SIZE,
            "tracking=none",
            "provider=oracle",
            "modality=gui",
            "task=[mousepad/append_line,mousepad/delete_first_line]",
            "attempts=2",
        )
        (tmp_path / "resets.log").write_text("")
        proc = run_cli(tmp_path / "pool", *pool, "concurrency=2")
        assert proc.returncode == 0, proc.stderr[-3000:]
        rs = results(tmp_path / "pool" / "run")
        assert len(rs) == 4 and {r["status"] for r in rs} == {"success"}, [(r["task_id"], r["status"], r["reason"]) for r in rs]
        resets = (tmp_path / "resets.log").read_text().split()
        assert resets.count("vm1") + resets.count("vm2") == 4 and "vm1" in resets and "vm2" in resets
        spans = [
            (lines[0]["ts"], lines[-1]["ts"])
            for lines in (
                [json.loads(x) for x in t.read_text().splitlines()] for t in (tmp_path / "pool" / "run").rglob("trace.jsonl")
            )
        ]
        assert any(a[0] < b[1] and b[0] < a[1] for a in spans for b in spans if a != b)  # two ran at once

        refused = run_cli(tmp_path / "refused", *pool, "concurrency=3")
        assert refused.returncode == 2
        assert [line for line in refused.stderr.splitlines() if "concurrency=3 but env=vm has 2 VM(s)" in line]
        assert not results(tmp_path / "refused" / "run")
    finally:
        for _, _, pidfile in vms:
            subprocess.run(["kill", pidfile.read_text().strip()], capture_output=True)


def test_live_evaluate_grades_a_vm_that_another_harness_drives(tmp_path, fake_vm):
    """``server --live --env vm``: /evaluate grades the VM as it is now (its size the VM's), through
    the VM's own server; the harness drives the VM itself."""
    url, reset = fake_vm
    task = {
        "id": "live-vm",
        "instruction": "Write the note",
        "config": [],
        "evaluator": {
            "func": "check_include_exclude",
            "result": {"type": "vm_command_line", "command": "cat ~/note.txt", "shell": True},
            "expected": {"type": "rule", "rules": {"include": ["café Ü"], "exclude": []}},
        },
    }
    task_file = tmp_path / "live-vm.json"
    task_file.write_text(json.dumps(task))
    folder = tmp_path / "served"
    env = {k: v for k, v in os.environ.items() if k != "MCPWORLD_EVAL_TOKEN"}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mcpworld.evaluation.server",
            "--live",
            "--env",
            "vm",
            "--vm-url",
            url,
            "--vm-reset-command",
            reset,
            "--task",
            str(task_file),
            "--port",
            "0",
            "--dir",
            str(folder),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        endpoint = folder / "endpoint.json"
        deadline = time.monotonic() + 180
        while not endpoint.is_file() and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.3)
        assert server.poll() is None and endpoint.is_file(), server.communicate(timeout=30)
        about = json.loads(endpoint.read_text())
        client = EvaluationClient(about["url"], Path(about["token_file"]).read_text())
        assert client.evaluate(task)["score"] == 0.0
        httpx.post(
            url + "/setup/upload", data={"file_path": "~/note.txt"}, files={"file_data": ("f", "café Ü\n".encode())}, timeout=30
        )
        assert client.evaluate(task)["score"] == 1.0
    finally:
        server.send_signal(signal.SIGTERM)
        out, err = server.communicate(timeout=60)
    assert server.returncode == 0, err
    assert f"the osworld VM at {url} (1280x800)" in out and f"VM at {url}" in out
