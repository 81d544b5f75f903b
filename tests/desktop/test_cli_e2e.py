"""``python -m mcpworld`` end to end: real Hydra, real desktops, real MLflow (sqlite)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from tests.fakes.scripted_server import free_port
from tests.helpers.cli import ROOT, results, run_cli

pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def test_oracle_sweep_two_resolutions_logs_to_mlflow(tmp_path):
    db = tmp_path / "mlflow.db"
    proc = run_cli(
        tmp_path,
        "-m",
        "resolution=square,rect",
        "provider=oracle",
        "task=[mousepad/*,xterm/set_theme]",
        f"tracking.uri=sqlite:///{db}",
        f"tracking.artifact_root={tmp_path}/artifacts",
        "tracking.experiment=e2e",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "mcpworld sweep" in proc.stdout
    for job, size in (("0", (1000, 1000)), ("1", (1024, 768))):
        rs = results(tmp_path / "sweep" / job)
        assert len(rs) == 5 and all(r["status"] == "success" for r in rs), rs
        shots = list((tmp_path / "sweep" / job).rglob("screens/*.jpg"))
        assert shots and all(Image.open(s).size == size for s in shots)

    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    exp = client.get_experiment_by_name("e2e")
    runs = client.search_runs([exp.experiment_id])
    level = lambda name: [r for r in runs if r.data.tags.get("mcpworld.level") == name]  # noqa: E731
    (sweep,) = level("sweep")
    assert "mlflow.parentRunId" not in sweep.data.tags and sweep.data.metrics["jobs"] == 2
    jobs = level("job")
    assert len(jobs) == 2 and all(j.data.tags["mlflow.parentRunId"] == sweep.info.run_id for j in jobs)
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{db}")
    for job in jobs:
        assert job.data.params["provider"] == "oracle" and len(job.data.params) <= 30
        assert job.data.metrics["success"] == 1.0 and job.data.metrics["steps"] > 0
        tags = job.data.tags
        assert len(tags["mcpworld.git.commit"]) == 40 and tags["mcpworld.git.dirty"] in ("true", "false")
        assert tags["mcpworld.version.mlflow"] and tags["mcpworld.host"] and len(tags["mcpworld.config_hash"]) == 16
        assert "resolution=" in tags["mcpworld.overrides"]
        children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == job.info.run_id]
        assert len(children) == 5 and all(c.data.tags["mcpworld.level"] == "episode" for c in children)
        child = children[0]
        assert {"task_id", "status", "termination"} <= set(child.data.tags)
        for key in ("model", "provider", "resolution", "modality", "app", "task"):
            assert key in child.data.params
        assert "seed" not in child.data.params  # none set: none sent, none logged
        assert child.data.metrics["score"] == 1.0 and child.data.metrics["steps"] > 0
        assert child.data.metrics["duration_s"] > 0
        names = {a.path for a in client.list_artifacts(child.info.run_id)}
        assert {"result.json", "trace.jsonl", "screens", "trajectory.html"} <= names
        assert {".hydra", "config.yaml", "summary.json"} <= {a.path for a in client.list_artifacts(job.info.run_id)}
        (trace,) = client.search_traces(locations=[exp.experiment_id], run_id=child.info.run_id)
        kinds = [span.span_type for span in trace.data.spans]
        assert kinds[0] == "AGENT" and kinds.count("LLM") == child.data.metrics["llm_calls"]
        waits = child.data.metrics.get("tool_calls.wait_for", 0.0)
        assert kinds.count("TOOL") == child.data.metrics["actions"] + waits  # the oracle's waits are no action
    assert {j.data.params["resolution"] for j in jobs} == {"square", "rect"}

    # the paper tables and a plot from that sweep
    report = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld.report",
            "experiment=e2e",
            "--tracking-uri",
            f"sqlite:///{db}",
            "--out",
            str(tmp_path / "report"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stderr[-2000:]
    table = (tmp_path / "report" / "summary.csv").read_text().splitlines()
    # header + (square, rect) x (mousepad, xterm), every group at 100 %
    assert len(table) == 5 and table[0].startswith("model,resolution,modality,app,episodes")
    assert all(",1.0," in row for row in table[1:])
    assert Image.open(tmp_path / "report" / "success.png").size[0] > 200


def vscode_installed() -> bool:
    from mcpworld.apps.catalog import programs

    return any(p.app == "vscode" and p.installed() for p in programs())


def test_every_builtin_task_passes_with_the_cli_oracle(tmp_path):
    proc = run_cli(tmp_path, "modality=cli", "tracking=none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rs = results(tmp_path / "run")
    assert len(rs) >= 8 and all(r["status"] == "success" for r in rs)
    # the cli modality offers no computer tool: nothing was clicked or typed
    assert all(set(r["tool_calls"]) <= {"bash", "done"} for r in rs)
    (theme,) = [r for r in rs if r["task_id"] == "xterm/set_theme"]
    assert theme["key_steps"]["ratio"] == 1.0 and theme["key_steps"]["timeline"][0]["via"] == "event"


def test_unreachable_ollama_is_one_clear_line_before_any_episode(tmp_path):
    port = free_port()
    proc = run_cli(
        tmp_path,
        "model=qwen3vl_8b",
        "tracking=none",
        "task=xterm/count_errors",
        env={"OLLAMA_BASE_URL": f"http://127.0.0.1:{port}/v1"},
    )
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, proc.stderr
    assert "unreachable" in errors[0] and "ollama serve" in errors[0] and str(port) in errors[0]
    assert results(tmp_path / "run") == []  # the preflight stopped it: no desktop was started


def test_qwen3vl_32b_square_multirun_against_an_ollama_endpoint(tmp_path):
    """`python -m mcpworld model=qwen3vl_32b resolution=square -m` end to end: the preflight pulls
    and loads the model, the agent's Qwen-style calls (normalised coordinates, computer_use,
    terminate) drive a real xterm, the task is graded and the run lands in MLflow."""
    from tests.fakes.ollama_server import FakeOllamaServer, ps_entry, tag_entry

    chat = [
        {"tool_calls": [{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [200, 150]}}]},
        {
            "tool_calls": [
                {
                    "name": "computer_use",
                    "arguments": {"action": "type", "text": "mkdir -p ~/projects/alpha/src ~/projects/alpha/tests\n"},
                }
            ]
        },
        {"tool_calls": [{"name": "computer_use", "arguments": {"action": "wait", "time": 0.5}}]},
        {
            "text": 'Action: Done.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "terminate", '
            '"status": "success"}}\n</tool_call>'
        },
    ]
    db = tmp_path / "mlflow.db"
    with FakeOllamaServer(
        models=[tag_entry("llama3:8b")],
        loaded=[ps_entry("llama3:8b")],
        chat_script=chat,
        model="qwen3-vl:32b-instruct",
        context_length=262144,
    ) as server:  # at least model.context_length: preflight checks it
        proc = run_cli(
            tmp_path,
            "-m",
            "model=qwen3vl_32b",
            "resolution=square",
            "task=xterm/make_project_dirs",
            f"tracking.uri=sqlite:///{db}",
            f"tracking.artifact_root={tmp_path}/artifacts",
            "tracking.experiment=ollama",
            env={"OLLAMA_BASE_URL": server.base_url},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        paths = server.paths()
        assert "/api/pull" in paths  # the model was missing: pulled
        assert {"model": "llama3:8b", "keep_alive": 0} in server.bodies("/api/generate")  # others unloaded
        chats = [c.body for c in server.calls if c.path == "/v1/chat/completions"]
        assert len(chats) == 4 and chats[0]["model"] == "qwen3-vl:32b-instruct" and chats[0]["temperature"] == 0.7
    (result,) = results(tmp_path / "sweep")
    assert (result["status"], result["score"], result["final_action"]) == ("success", 1.0, "DONE")
    assert result["labels"]["model"] == "qwen3vl_32b" and result["hallucinations"] == 0

    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    runs = client.search_runs([client.get_experiment_by_name("ollama").experiment_id])
    (job,) = [r for r in runs if r.data.tags.get("mcpworld.level") == "job"]
    assert job.data.params["ollama.quantization"] and job.data.params["ollama.digest"]
    assert job.data.metrics["ollama.vram_bytes"] > 0 and job.data.metrics["success"] == 1.0


def test_typo_in_a_group_name_names_the_key(tmp_path):
    proc = run_cli(tmp_path, "resolutoin=square")
    assert proc.returncode != 0
    assert "resolutoin" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_task_file_missing_a_field_names_file_and_key(tmp_path):
    bad = tmp_path / "suite" / "editor" / "broken"
    bad.mkdir(parents=True)
    (bad / "task.yaml").write_text("app: mousepad\ninstruction: do it\n")
    proc = run_cli(tmp_path, f"tasks.root={tmp_path / 'suite'}", "tracking=none")
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(bad / "task.yaml") in lines[0] and "'evaluator'" in lines[0]
    assert "Traceback" not in proc.stderr


def test_user_task_folder_and_task_glob(tmp_path):
    suite = tmp_path / "suite" / "notes" / "hello"
    suite.mkdir(parents=True)
    (suite / "task.yaml").write_text(
        "app: xterm\n"
        "instruction: Write {{ word }} into ~/out.txt\n"
        "params: {word: hello}\n"
        "setup: [{launch: {command: [xterm], window: xterm}}]\n"
        "evaluator:\n"
        "  func: exact_match\n"
        "  result: {type: content_from_vm_file, path: ~/out.txt, file_type: txt}\n"
        "  expected: {type: rule, rules: {expected: '{{ word }}'}}\n"
        "solution:\n"
        "  gui:\n"
        '    - computer: {action: type, text: "echo {{ word }} > ~/out.txt\\n"}\n'
        "    - computer: {action: wait, duration: 0.5}\n"
    )
    proc = run_cli(tmp_path, f"tasks.root={tmp_path / 'suite'}", "task=notes/*", "tracking=none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (result,) = results(tmp_path / "run")
    assert result["task_id"] == "notes/hello" and result["status"] == "success"


def test_an_infra_error_is_retried_and_the_failed_try_kept(tmp_path, shared_dir):
    marker = shared_dir / "first-try-done"  # setup commands run as the desktop account: a place it may write
    suite = tmp_path / "suite" / "flaky" / "setup"
    suite.mkdir(parents=True)
    (suite / "task.yaml").write_text(
        "app: xterm\n"
        "instruction: Write hi into ~/out.txt\n"
        f"setup: [{{execute: {{command: 'test -e {marker} || {{ touch {marker}; exit 1; }}', shell: true}}}}]\n"
        "evaluator:\n"
        "  func: exact_match\n"
        "  result: {type: content_from_vm_file, path: ~/out.txt}\n"
        "  expected: {type: rule, rules: {expected: hi}}\n"
        "solution:\n"
        "  cli: [{bash: {command: 'echo hi > ~/out.txt'}}]\n"
    )
    # env.files=open: the marker must outlive the first try's desktop (a hidden-files desktop's /tmp is its own)
    proc = run_cli(tmp_path, f"tasks.root={tmp_path / 'suite'}", "modality=cli", "tracking=none", "env.files=open")
    assert proc.returncode == 0, proc.stderr[-3000:]
    episodes = tmp_path / "run" / "episodes" / "flaky" / "setup"
    first = json.loads((episodes / "0.infra_error1" / "result.json").read_text())
    final = json.loads((episodes / "0" / "result.json").read_text())
    assert first["status"] == "infra_error" and "exited 1" in first["reason"]
    assert final["status"] == "success"


def _scripted_model_run(tmp_path: Path, suite: Path, task: str, command: str) -> dict:
    """One CLI episode of ``task`` driven over HTTP by a scripted model: one bash call, then done."""
    from tests.fakes.openai_server import FakeOpenAIServer

    script = [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"tool_calls": [{"name": "done", "arguments": {"status": "DONE"}}]},
    ]
    with FakeOpenAIServer(script, model="qwen3-vl:8b") as server:
        proc = run_cli(
            tmp_path,
            "model=qwen3vl_8b",
            "model.profile=generic",
            "model.id=qwen3-vl:8b",  # our tool format
            "provider=openai_compat",
            f"provider.base_url={server.base_url}",
            "modality=cli",
            f"tasks.root={suite}",
            f"task={task}",
            "tracking=none",
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert len(server.requests) == 2 and server.requests[0]["model"] == "qwen3-vl:8b"
        assert [t["function"]["name"] for t in server.requests[0]["tools"]] == ["bash", "done"]
        prompt = json.dumps(server.requests[0]["messages"])
    (result,) = results(tmp_path / "run")
    return dict(result, prompt=prompt)


def test_an_osworld_task_file_runs_with_a_model_over_http(tmp_path):
    suite = tmp_path / "osworld" / "os"
    suite.mkdir(parents=True)
    (suite / "answer-file.json").write_text(
        json.dumps(
            {
                "id": "answer-file",
                "snapshot": "os",
                "related_apps": ["xterm"],
                "instruction": "Write the answer 42 into /home/user/answer.txt.",
                "config": [{"type": "launch", "parameters": {"command": ["xterm"]}}],
                "evaluator": {
                    "func": "check_include_exclude",
                    "result": {"type": "vm_command_line", "command": "cat /home/user/answer.txt", "shell": True},
                    "expected": {"type": "rule", "rules": {"include": ["42"], "exclude": ["43"]}},
                },
            }
        )
    )
    # the instruction as OSWorld wrote it, and its path is the episode's home on our desktop (env.files=hidden)
    result = _scripted_model_run(tmp_path, tmp_path / "osworld", "answer-file", "echo 42 > /home/user/answer.txt")
    assert (result["task_id"], result["status"], result["score"]) == ("answer-file", "success", 1.0)
    assert result["metrics"][0]["name"] == "check_include_exclude"
    assert "/home/user/answer.txt" in result["prompt"]


def test_an_mcpworld_task_folder_runs_with_a_model_and_its_handler_grades_it(tmp_path):
    from tests.helpers.pccanary import CONFIG, HANDLER

    root = tmp_path / "canary"
    task_dir = root / "tests" / "tasks" / "notes" / "task07_append"
    task_dir.mkdir(parents=True)
    config = dict(CONFIG, application_info={"name": "notes", "executable_path": "xterm", "args": []})
    (task_dir / "config.json").write_text(json.dumps(config))
    (task_dir / "handler.py").write_text(HANDLER)
    vault = root / "tests" / "context_data" / "notes" / "vault"
    vault.mkdir(parents=True)
    (vault / "Agenda.md").write_text("## Agenda\n")
    result = _scripted_model_run(
        tmp_path, root, "notes/task07_append", "echo '- review budget' >> ~/workspace/.mcpworld/notes/vault/Agenda.md"
    )
    assert (result["task_id"], result["status"], result["score"]) == ("notes/task07_append", "success", 1.0)
    assert result["key_steps"]["completed"] == 2 and result["key_steps"]["ratio"] == 1.0
    assert "Append '- review budget' to Agenda.md" in result["prompt"]


def test_a_pccanary_checkout_runs_as_its_authors_run_it(tmp_path):
    """The miniature checkout (tests/data/pccanary_fixture): pre_process in the background, the app from
    the authors' /workspace/PC-Canary path with its cwd, a StateInspector hook that looked before the
    agent, sql_path in the episode home; a Frida hook in the app's process judged by its handler."""
    fixture = Path(__file__).resolve().parents[1] / "data" / "pccanary_fixture"
    appended = _scripted_model_run(
        tmp_path / "a",
        fixture,
        "notes/task01_append",  # the instruction's own path
        "echo '- review budget' >> /workspace/.mcpworld/notes/vault/Agenda.md",
    )
    assert (appended["status"], appended["score"]) == ("success", 1.0), appended
    assert appended["key_steps"]["completed"] == 2
    assert "/workspace/.mcpworld/notes/vault" in appended["prompt"]
    assert any(n.startswith("precondition vault_initialized=true is not checked") for n in appended["task_notes"])
    # the Frida probe: the hook inside mousepad reports the save as it happens, the handler judges it
    saved = _scripted_model_run(
        tmp_path / "b",
        fixture,
        "notes/task02_save",
        "xdotool key ctrl+End; xdotool type 'call Anna'; xdotool key ctrl+s; sleep 1",
    )
    assert (saved["status"], saved["score"]) == ("success", 1.0), saved
    assert [s["t"] is not None for s in saved["key_steps"]["timeline"]] == [True, True]  # live, dated
    untouched = _scripted_model_run(tmp_path / "c", fixture, "notes/task02_save", "true")
    assert (untouched["status"], untouched["score"]) == ("failure", 0.0), untouched
    assert "Agenda.md never saved" in untouched["metrics"][0]["reason"]
    leftovers = subprocess.run(
        ["pgrep", "-f", "pccanary_fixture/tests/tasks/notes/task01_append/pre_process.py"], capture_output=True, text=True
    )
    assert leftovers.stdout == "", "the pre_process script outlived its episode"


def test_a_pccanary_vscode_task_is_judged_by_its_own_hook_running_inside_vs_code(tmp_path):
    """The IPC hook runs in VS Code through mcpworld's extension and the episode's event sink: the theme
    change is a key step reported live (dated in the timeline), the theme at completion decides."""
    fixture = Path(__file__).resolve().parents[1] / "data" / "pccanary_fixture"
    # through VS Code's own theme picker (code-server applies a settings.json edited on disk only after
    # a restart): Ctrl+K Ctrl+T, the theme's name, Enter
    change = (
        "xdotool key ctrl+k; sleep 0.3; xdotool key ctrl+t; sleep 2; xdotool type --delay 50 'Light+'; "
        "sleep 1.5; xdotool key Return; sleep 3"
    )
    done = _scripted_model_run(tmp_path / "a", fixture, "vscode/task01_updateColorTheme", change)
    assert (done["status"], done["score"]) == ("success", 1.0), done
    assert done["key_steps"]["completed"] == 2
    changed = done["key_steps"]["timeline"][0]
    assert changed["name"] == "changed the theme" and changed["t"] is not None  # live, with its time
    events = [json.loads(line) for line in next((tmp_path / "a").rglob("trace.jsonl")).read_text().splitlines()]
    kinds = [e["message"]["event_type"] for e in events if e["type"] == "app_event"]
    assert kinds[:1] == ["theme_changed"] and kinds[-1] == "evaluate_on_completion"
    untouched = _scripted_model_run(tmp_path / "b", fixture, "vscode/task01_updateColorTheme", "true")
    assert (untouched["status"], untouched["score"]) == ("failure", 0.0), untouched
    assert "not Default Light+" in untouched["metrics"][0]["reason"]


def test_hooked_tasks_side_by_side_keep_their_own_events(tmp_path):
    """concurrency=2 over the fixture checkout with our solutions: two VS Code episodes at once, each
    with its own event sink and probe, one changing the theme and one doing nothing; the Frida and
    StateInspector tasks beside them. Each is judged by its own hooks' events only."""
    data = Path(__file__).resolve().parents[1] / "data"
    proc = run_cli(
        tmp_path,
        f"tasks.root={data / 'pccanary_fixture'}",
        f"tasks.solutions={data / 'pccanary_solutions'}",
        "provider=oracle",
        "modality=cli",
        "concurrency=2",
        "tracking=none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = {r["task_id"]: r for r in results(tmp_path / "run")}
    assert {t: r["status"] for t, r in got.items()} == {
        "notes/task01_append": "success",
        "notes/task02_save": "success",
        "vscode/task01_updateColorTheme": "success",
        "vscode/task02_darkTheme": "failure",
    }, {t: r["reason"] or r["metrics"] for t, r in got.items()}

    def app_events(task: str) -> list[str]:
        (trace,) = (tmp_path / "run").rglob(f"{task}/0/trace.jsonl")
        events = [json.loads(line) for line in trace.read_text().splitlines()]
        return [e["message"].get("event_type") for e in events if e["type"] == "app_event"]

    assert app_events("task01_updateColorTheme")[0] == "theme_changed"
    assert app_events("task02_darkTheme") == ["evaluate_on_completion"]  # no theme change crossed over


def test_a_hook_that_cannot_watch_this_build_is_infra_and_not_tried_again(tmp_path):
    """A Frida hook wanting a symbol only the authors' build has fails the same way every time: the
    episode is infra_error (unwatchable) naming it, never the agent's failure, and is not re-run."""
    import shutil

    fixture = Path(__file__).resolve().parents[1] / "data" / "pccanary_fixture"
    task = tmp_path / "tasks" / "notes" / "task02_save"  # the app and context stay in the fixture checkout
    shutil.copytree(fixture / "tests/tasks/notes/task02_save", task)
    (task / "hooker.js").write_text("send({event: 'error', error_type: 'symbol_not_found', message: 'notes_save_document'});\n")
    proc = run_cli(
        tmp_path,
        f"tasks.root={tmp_path / 'tasks'}",
        f"pccanary.root={fixture}",
        "task=notes/task02_save",
        "provider=oracle",
        "agent.max_steps=0",
        "tracking=none",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (result,) = results(tmp_path / "run")
    assert (result["status"], result["termination"]) == ("infra_error", "unwatchable")
    assert "symbol_not_found: notes_save_document" in result["reason"]
    assert len(list((tmp_path / "run").rglob("trace.jsonl"))) == 1  # tried once (infra_retries=1 by default)
