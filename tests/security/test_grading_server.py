"""The headline of docs/security.md: a web page open in the researcher's browser could make
``python -m mcpworld.evaluation.server --home`` run a task's ``vm_command_line`` on this machine
(a ``text/plain`` POST needs no preflight). It runs nothing now, and ``--host 0.0.0.0`` without a
token of the researcher's is refused."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

SERVER = [sys.executable, "-m", "mcpworld.evaluation.server"]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MCPWORLD_EVAL_TOKEN"}


def touching(marker: Path) -> dict:
    """A task whose getter runs a command on the graded machine: the command leaves ``marker``."""
    return {
        "id": "rce",
        "instruction": "-",
        "config": [],
        "evaluator": {
            "func": "exact_match",
            "result": {"type": "vm_command_line", "command": f"touch {marker}"},
            "expected": {"type": "rule", "rules": {"expected": ""}},
        },
    }


@pytest.fixture
def served_home(tmp_path: Path) -> Iterator[tuple[str, Path, subprocess.Popen]]:
    """The CLI as docs/suites.md starts it (a free port); its URL and token read from the folder it names."""
    home, folder = tmp_path / "home", tmp_path / "served"
    home.mkdir()
    proc = subprocess.Popen(
        [*SERVER, "--home", str(home), "--port", "0", "--dir", str(folder)],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (folder / "endpoint.json").is_file():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.1)  # endpoint.json is written whole before the line is printed
    yield json.loads((folder / "endpoint.json").read_text())["url"], folder, proc
    proc.terminate()
    proc.wait(timeout=10)


def test_a_cross_site_text_plain_post_runs_nothing(served_home, tmp_path: Path) -> None:
    url, folder, _proc = served_home
    marker = tmp_path / "pwned"
    body = json.dumps(touching(marker))
    # exactly what fetch(url, {method: "POST", mode: "no-cors", body}) sends from https://attacker.example
    browser = {
        "Content-Type": "text/plain;charset=UTF-8",
        "Origin": "https://attacker.example",
        "Sec-Fetch-Site": "cross-site",
        "Sec-Fetch-Mode": "no-cors",
    }
    assert httpx.post(f"{url}/evaluate", content=body, headers=browser).status_code == 403
    assert not marker.exists()
    # the same without the browser's headers (a local process of another user): no token, nothing runs
    assert httpx.post(f"{url}/evaluate", content=body, headers={"Content-Type": "text/plain"}).status_code == 401
    assert httpx.post(f"{url}/evaluate", content=body, headers={"Content-Type": "application/json"}).status_code == 401
    assert not marker.exists()
    token = Path(json.loads((folder / "endpoint.json").read_text())["token_file"]).read_text()
    auth = {"Authorization": f"Bearer {token}"}
    # even with the token, text/plain is not read, and a foreign Origin is refused
    assert httpx.post(f"{url}/evaluate", content=body, headers={**auth, "Content-Type": "text/plain"}).status_code == 415
    assert (
        httpx.post(
            f"{url}/evaluate",
            content=body,
            headers={**auth, "Content-Type": "application/json", "Origin": "https://attacker.example"},
        ).status_code
        == 403
    )
    assert (
        httpx.post(
            f"{url}/evaluate", content=body, headers={**auth, "Content-Type": "application/json", "Host": "attacker.example"}
        ).status_code
        == 403
    )
    assert not marker.exists()
    # the control: the harness's own request (token, JSON) does run the getter, so the marker would show it
    assert httpx.post(f"{url}/evaluate", content=body, headers={**auth, "Content-Type": "application/json"}).status_code == 200
    assert marker.exists()


def test_the_token_is_in_a_0600_file_and_printed_nowhere(served_home) -> None:
    _url, folder, proc = served_home
    about = json.loads((folder / "endpoint.json").read_text())
    token_file = Path(about["token_file"])
    assert token_file.parent == folder.resolve() and stat.S_IMODE(token_file.stat().st_mode) == 0o600
    token = token_file.read_text()
    assert len(token) >= 32 and token not in (folder / "endpoint.json").read_text()
    proc.terminate()
    out, err = proc.communicate(timeout=10)
    assert token not in out + err and f"token and URL in {folder.resolve()}" in out


@pytest.mark.parametrize("mode", [["--home", "HOME"], ["--live"]])
def test_another_address_without_a_chosen_token_is_refused_in_one_line(tmp_path: Path, mode: list[str]) -> None:
    (tmp_path / "home").mkdir()
    args = [str(tmp_path / "home") if a == "HOME" else a for a in mode]
    proc = subprocess.run(
        [*SERVER, *args, "--host", "0.0.0.0", "--dir", str(tmp_path / "served")],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""
    assert "--host 0.0.0.0" in proc.stderr and "MCPWORLD_EVAL_TOKEN" in proc.stderr and "ssh -L" in proc.stderr
    assert not (tmp_path / "served").exists()  # nothing served, no desktop started


def test_another_address_with_a_chosen_token_serves_it(tmp_path: Path) -> None:
    """The safe way the refusal names: the researcher's own token, sent by clients elsewhere."""
    (tmp_path / "home").mkdir()
    token = "a-researchers-own-long-random-token"
    proc = subprocess.Popen(
        [*SERVER, "--home", str(tmp_path / "home"), "--host", "0.0.0.0", "--port", "0", "--dir", str(tmp_path / "served")],
        env=dict(clean_env(), MCPWORLD_EVAL_TOKEN=token),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert line.startswith("serving POST http://0.0.0.0:"), proc.stderr.read() if proc.stderr else line
        port = int(line.split("http://0.0.0.0:")[1].split("/")[0])
        task = {"id": "x", "instruction": "-", "config": [], "evaluator": {"func": "infeasible"}}
        assert httpx.post(f"http://127.0.0.1:{port}/evaluate", json=task).status_code == 401
        ok = httpx.post(f"http://127.0.0.1:{port}/evaluate", json=task, headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)
