"""The /evaluate service's token, its request shapes and the client other harnesses use (real HTTP;
the desktop is a home directory here, tests/desktop/test_live_evaluate.py grades a live one)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from mcpworld.env.local.home import HomeEnvironment
from mcpworld.evaluation.client import EvaluationClient, EvaluationError, task_body
from mcpworld.evaluation.live import LiveDesktop, write_endpoint
from mcpworld.evaluation.server import make_live_server, make_server
from mcpworld.evaluation.standalone import grade
from mcpworld.tasks.osworld import load_osworld

TOKEN = "s3cret-token-for-the-test"
TASK = {
    "id": "count-lines",
    "instruction": "Write 3 into /home/user/count.txt",
    "config": [],
    "evaluator": {
        "func": "exact_match",
        "result": {"type": "vm_command_line", "command": "cat /home/user/count.txt"},
        "expected": {"type": "rule", "rules": {"expected": "3"}},
    },
}
NATIVE = {
    "app": "mousepad",
    "instruction": "Write 3 into count.txt",
    "id": "native/count",
    "evaluator": {
        "func": "exact_match",
        "result": {"type": "content_from_vm_file", "path": "~/count.txt", "file_type": "txt"},
        "expected": {"type": "rule", "rules": {"expected": "3"}},
    },
}


def _run(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


@pytest.fixture
def live(tmp_path):
    """The live service over a desktop-less environment: what the token and the requests do does
    not depend on the desktop behind it."""
    home = tmp_path / "home"
    home.mkdir()
    env = HomeEnvironment(home)
    server = make_live_server(LiveDesktop(env, tmp_path / "served"), TOKEN)
    yield home, _run(server)
    server.shutdown()
    server.server_close()
    env.close()


def test_live_service_answers_only_its_token(live):
    _, url = live
    assert httpx.post(f"{url}/evaluate", json=TASK).status_code == 401
    wrong = httpx.post(f"{url}/evaluate", json=TASK, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and TOKEN not in wrong.text
    assert httpx.get(f"{url}/health").status_code == 401
    right = httpx.post(f"{url}/evaluate", json=TASK, headers={"Authorization": f"Bearer {TOKEN}"})
    assert right.status_code == 200 and right.json()["score"] == 0.0


def test_live_verdict_is_the_standalone_verdict(live):
    home, url = live
    client = EvaluationClient(url, TOKEN)
    for content in (None, "4\n", "3\n"):
        if content is not None:
            (home / "count.txt").write_text(content)
        over_http = client.evaluate(TASK)
        in_process = grade(load_osworld(Path("t.json"), dict(TASK)), home)
        assert {k: over_http[k] for k in ("score", "success", "status", "metrics")} == {
            k: in_process[k] for k in ("score", "success", "status", "metrics")
        }
    assert over_http["success"] is True and over_http["metrics"][0]["score"] == 1.0


def test_native_mappings_and_task_files_are_graded(live, tmp_path):
    home, url = live
    client = EvaluationClient(url, TOKEN)
    (home / "count.txt").write_text("3")
    assert client.evaluate(NATIVE)["score"] == 1.0
    folder = tmp_path / "suite" / "count"
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(json.dumps(NATIVE))
    assert task_body(folder / "task.yaml") == {"task_file": str(folder / "task.yaml")}
    assert client.evaluate(folder / "task.yaml")["score"] == 1.0
    (tmp_path / "t.json").write_text(json.dumps(TASK))
    assert task_body(tmp_path / "t.json") == TASK  # a JSON task travels whole: the service may be elsewhere
    assert client.evaluate(tmp_path / "t.json")["task"] == "count-lines"


def test_bad_requests_say_what_is_wrong(live, tmp_path):
    _, url = live
    client = EvaluationClient(url, TOKEN)
    with pytest.raises(EvaluationError, match="missing required key 'evaluator'") as missing:
        client.evaluate({"id": "x", "instruction": "y"})
    assert missing.value.status == 400
    with pytest.raises(EvaluationError, match="no such task file") as absent:
        client.evaluate({"task_file": str(tmp_path / "nope.yaml")})
    assert absent.value.status == 400
    with pytest.raises(EvaluationError, match="final_action 'MAYBE'"):
        client.evaluate(TASK, final_action="MAYBE")
    with pytest.raises(EvaluationError, match="no GET /nothing here") as unknown:
        client._request("GET", "/nothing", None)
    assert unknown.value.status == 404
    with pytest.raises(EvaluationError, match="does not answer") as down:
        EvaluationClient("http://127.0.0.1:9", TOKEN, timeout_s=5).evaluate(TASK)
    assert down.value.status == 0


def test_a_desktop_that_cannot_grade_is_503_not_a_failure(live):
    """A getter that needs a live desktop, on none: the environment's failure, no verdict."""
    _, url = live
    tree = dict(
        TASK,
        evaluator={
            "func": "check_accessibility_tree",
            "result": {"type": "accessibility_tree"},
            "expected": {"type": "rule", "rules": [{"selectors": ["frame"]}]},
        },
    )
    reply = httpx.post(f"{url}/evaluate", json=tree, headers={"Authorization": f"Bearer {TOKEN}"})
    assert reply.status_code == 503
    assert reply.json()["status"] == "infra_error" and "needs a live desktop" in reply.json()["error"]


def test_endpoint_folder_keeps_the_token_apart_and_private(tmp_path):
    endpoint = write_endpoint(tmp_path / "served", "http://127.0.0.1:1234", TOKEN, {"display": ":7"})
    about = json.loads(endpoint.read_text())
    assert about == {"url": "http://127.0.0.1:1234", "token_file": str(tmp_path / "served" / "token"), "display": ":7"}
    assert TOKEN not in endpoint.read_text()
    token = Path(about["token_file"])
    assert token.read_text() == TOKEN and stat.S_IMODE(token.stat().st_mode) == 0o600


def _client_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "mcpworld.evaluation.client", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_client_cli_reads_the_token_from_the_folder_the_variable_or_a_file(live, tmp_path):
    home, url = live
    (home / "count.txt").write_text("3")
    task = tmp_path / "t.json"
    task.write_text(json.dumps(TASK))
    folder = tmp_path / "served"
    write_endpoint(folder, url, TOKEN, {})
    no_token = {k: v for k, v in os.environ.items() if k != "MCPWORLD_EVAL_TOKEN"}

    by_folder = _client_cli(str(folder), str(task), env=no_token)
    assert by_folder.returncode == 0, by_folder.stderr
    assert json.loads(by_folder.stdout)["score"] == 1.0
    by_variable = _client_cli(url, str(task), env=dict(no_token, MCPWORLD_EVAL_TOKEN=TOKEN))
    assert json.loads(by_variable.stdout)["success"] is True
    by_file = _client_cli(url, str(task), "--token-file", str(folder / "token"), env=no_token)
    assert json.loads(by_file.stdout)["score"] == 1.0
    for proc in (by_folder, by_variable, by_file):
        assert TOKEN not in proc.stdout + proc.stderr

    refused = _client_cli(url, str(task), env=no_token)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "401" in refused.stderr
    missing = _client_cli(url, str(tmp_path / "nope.json"), env=no_token)
    assert missing.returncode == 2 and "no such task file" in missing.stderr
    down = _client_cli("http://127.0.0.1:9", str(task), env=no_token)
    assert down.returncode == 1 and "does not answer" in down.stderr


def test_client_grades_a_home_directory_service_with_its_token(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "count.txt").write_text("3")
    server = make_server(home, TOKEN)
    url = _run(server)
    try:
        assert EvaluationClient(url, TOKEN).evaluate(TASK)["score"] == 1.0
        assert EvaluationClient(url, TOKEN).evaluate(dict(TASK, evaluator={"func": "infeasible"}), "FAIL")["score"] == 1.0
        with pytest.raises(EvaluationError) as refused:  # --home takes a token as --live does
            EvaluationClient(url).evaluate(TASK)
        assert refused.value.status == 401
    finally:
        server.shutdown()
        server.server_close()
