"""``env=vm`` against a server that speaks OSWorld's VM server API (tests/fakes/osworld_vm.py, held
to the replies of OSWorld's own server in tests/data/vm/), over a real local desktop: real HTTP,
real pyautogui input on the "VM", real apps, the project's real CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.desktop.test_cli_e2e import ROOT, results, run_cli
from tests.fakes.scripted_server import free_port
from tests.fakes.vm_reply_shapes import reply_shapes

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


def start_vm(tmp_path: Path, dialect: str = "osworld"):
    """A fake VM and the reset command that restarts it on a fresh home (as reverting a snapshot does)."""
    if not (shutil.which("wmctrl") and shutil.which("openbox")):
        pytest.skip("the VM's desktop needs wmctrl and openbox (make setup)")
    port, home, display = free_port(), tmp_path / "vm-home", _free_display()
    command = [sys.executable, str(ROOT / "tests" / "fakes" / "osworld_vm.py"), "--port", str(port),
               "--home", str(home), "--display", display, "--width", "1280", "--height", "800", "--dialect", dialect]
    pidfile = tmp_path / "vm.pid"
    reset = tmp_path / "reset.sh"
    reset.write_text("#!/bin/bash\n"
                     f"pid=$(cat {pidfile} 2>/dev/null); [ -n \"$pid\" ] && kill $pid\n"
                     f"while [ -n \"$pid\" ] && kill -0 $pid 2>/dev/null; do sleep 0.1; done\n"
                     f"rm -rf {home}\n"
                     f"setsid {' '.join(command)} >>{tmp_path}/vm.log 2>&1 </dev/null &\n"
                     f"echo $! > {pidfile}\n")
    reset.chmod(0o755)
    subprocess.run([str(reset)], check=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
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
    url, reset, pidfile = start_vm(tmp_path)
    yield url, reset
    subprocess.run(["kill", pidfile.read_text().strip()], capture_output=True)


@pytest.fixture
def fake_windows_vm(tmp_path):
    url, reset, pidfile = start_vm(tmp_path, "waa")
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
    for name, extra in (("vm-oracle", vm), ("vm-noop", (*vm, "agent.max_steps=0")),
                        ("local-oracle", local), ("local-noop", (*local, "agent.max_steps=0"))):
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
    gsettings = ("task=[3ce045a0-877b-42aa-8d2c-b4a863336ab8,a4d98375-215b-4a4d-aee9-3d4370fccc41,"
                 "f9be0997-4b7c-45c5-b05c-4612b44a6118]")  # (the terminal task needs our desktop's ctrl+alt+t)
    common = ("env=vm", f"env.vm.url={url}", *SIZE, "tracking=none", f"tasks.root={OSWORLD_OS}",
              f"tasks.solutions={SOLUTIONS}", "provider=oracle", "modality=cli", gsettings)
    proc = run_cli(tmp_path / "oracle", *common)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rs = results(tmp_path / "oracle" / "run")
    assert len(rs) == 3 and all(r["status"] == "success" for r in rs), [(r["task_id"], r["status"]) for r in rs]
    assert all(any("without env.vm.reset_command" in n for n in r["task_notes"]) for r in rs)


def test_a_vm_of_another_screen_size_is_a_clear_error_before_any_episode(tmp_path, fake_vm):
    url, _ = fake_vm
    proc = run_cli(tmp_path, "env=vm", f"env.vm.url={url}", "resolution=square", "tracking=none",
                   "provider=oracle", "task=[mousepad/append_line]")
    assert proc.returncode != 0
    assert "the VM's screen is 1280x800" in proc.stderr and "resolution.width=1280" in proc.stderr
    assert not results(tmp_path / "run")


def test_a_vm_that_does_not_answer_is_the_environments_failure(tmp_path):
    proc = run_cli(tmp_path, "env=vm", f"env.vm.url=http://127.0.0.1:{free_port()}", "env.vm.ready_timeout_s=2",
                   "tracking=none", "provider=oracle", "task=[mousepad/append_line]")
    rs = results(tmp_path / "run")  # (an infra_error is tried again, up to the job's retries)
    assert rs and all(r["status"] == "infra_error" and "did not answer /screenshot within 2s" in r["reason"]
                      for r in rs), proc.stderr[-2000:]


WAA = ROOT / "tests" / "data" / "vm"
WAA_FILES = f"files.rewrite=[[https://raw.githubusercontent.com/mcpworld-fixture/winarenafiles/main/,{WAA / 'waa_files'}/]]"


def test_a_windows_task_runs_to_its_verdict_on_a_waa_vm(tmp_path, fake_windows_vm):
    """A WAA-shaped task (Windows paths, a Windows program, WAA's own getter) on a server that speaks
    WAA's dialect: graded 1 with the oracle and 0 doing nothing, where our own desktop skips it."""
    url, reset = fake_windows_vm
    common = ("env=vm", "env.vm.kind=waa", f"env.vm.url={url}", f"env.vm.reset_command={reset}", *SIZE,
              "tracking=none", f"tasks.root={WAA / 'waa'}", f"tasks.solutions={WAA / 'waa_solutions'}",
              "provider=oracle", "modality=cli", WAA_FILES)
    for name, extra, status in (("oracle", (), "success"), ("noop", ("agent.max_steps=0",), "failure")):
        proc = run_cli(tmp_path / name, *common, *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (r,) = results(tmp_path / name / "run")
        assert (r["task_id"], r["status"]) == ("png-names-WOS", status), r["reason"]
    local = run_cli(tmp_path / "local", f"tasks.root={WAA / 'waa'}", "tracking=none", "provider=oracle", WAA_FILES)
    assert "needs Windows" in local.stderr and not results(tmp_path / "local" / "run")
