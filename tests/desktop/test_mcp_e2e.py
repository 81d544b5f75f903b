"""MCP through ``python -m mcpworld``: the gui/mcp/hybrid comparison side by side in MLflow, the
Toolathlon tasks (oracle passes, doing nothing fails), the proxy's record → replay round trip with
the upstream gone, and fault injection that gives tool errors, never a crashed episode."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import results, run_cli

pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def events(folder: Path, kind: str) -> list[dict]:
    (trace,) = folder.rglob("trace.jsonl")
    return [e for e in map(json.loads, trace.read_text().splitlines()) if e["type"] == kind]


def test_gui_mcp_and_hybrid_side_by_side_in_mlflow(tmp_path):
    db = tmp_path / "mlflow.db"
    proc = run_cli(
        tmp_path,
        "-m",
        "modality=gui,mcp,hybrid",
        "provider=oracle",
        "app=mousepad",
        "task=[mousepad/append_line,mousepad/enable_debug]",
        f"tracking.uri=sqlite:///{db}",
        f"tracking.artifact_root={tmp_path}/artifacts",
        "tracking.experiment=modalities",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    used = {}
    for job, modality in enumerate(("gui", "mcp", "hybrid")):
        rs = results(tmp_path / "sweep" / str(job))
        assert len(rs) == 2 and all(r["status"] == "success" for r in rs), rs
        used[modality] = set().union(*(r["tool_calls"] for r in rs)) - {"done"}
    assert used["gui"] - {"wait_for"} == {"computer"}  # (wait_for: the oracle's own waits for app state)
    assert used["mcp"] == {"filesystem-edit_file"}
    assert {"computer", "filesystem-read_text_file", "filesystem-search_files"} <= used["hybrid"]

    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    runs = client.search_runs([client.get_experiment_by_name("modalities").experiment_id])
    jobs = [r for r in runs if r.data.tags.get("mcpworld.level") == "job"]
    assert sorted(j.data.params["modality"] for j in jobs) == ["gui", "hybrid", "mcp"]
    assert all(j.data.metrics["success"] == 1.0 for j in jobs)


def test_toolathlon_tasks_pass_with_the_oracle_and_fail_when_nothing_is_done(tmp_path):
    proc = run_cli(tmp_path / "oracle", "modality=mcp", "app=toolathlon", "tracking=none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rs = results(tmp_path / "oracle" / "run")
    assert len(rs) == 6 and all(r["status"] == "success" for r in rs), [(r["task_id"], r["reason"]) for r in rs]
    assert all(r["metrics"][0]["name"] == "grader" and r["tool_calls"].get("local-claim_done") for r in rs)
    (log,) = (tmp_path / "oracle" / "run").rglob("arrange-files/0/traj_log.json")
    traj = json.loads(log.read_text())
    assert traj["status"] == "success" and traj["key_stats"]["tool_calls"] == 20
    called = [c["function"]["name"] for m in traj["messages"] for c in m.get("tool_calls") or []]
    assert called[-1] == "local-claim_done" and called[0].startswith("filesystem-")

    proc = run_cli(tmp_path / "noop", "modality=mcp", "app=toolathlon", "agent.max_steps=0", "tracking=none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rs = results(tmp_path / "noop" / "run")
    assert len(rs) == 6 and all(r["status"] == "failure" and r["score"] == 0.0 for r in rs)
    assert all(r["metrics"][0]["reason"] for r in rs)  # each grader said why


def comparable(folder: Path) -> list[tuple]:
    """What the agent saw of its tools, with the episode's own paths taken out."""
    (result,) = results(folder)
    out = []
    for e in events(folder, "tool_call"):
        out.append((e["tool"], e["ok"], e.get("output", e.get("error", ""))))
    return [(t, ok, _unpath(text)) for t, ok, text in out] + [("status", result["status"], result["score"])]


def _unpath(text: str) -> str:
    import re

    return re.sub(r"/\S*?/home/workspace", "{workspace}", text)


def test_record_then_replay_reproduces_the_episode_with_the_upstream_gone(tmp_path):
    task = "task=toolathlon/fix-bib-citations"
    proc = run_cli(tmp_path / "rec", "modality=mcp", task, "tracking=none", "mcp.proxy.mode=record")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (cassettes,) = (tmp_path / "rec" / "run").rglob("mcp")
    assert (cassettes / "filesystem.jsonl").is_file()
    recorded = comparable(tmp_path / "rec" / "run")
    assert recorded[-1] == ("status", "success", 1.0)

    # no server installed at all now: every answer comes from the cassette
    proc = run_cli(
        tmp_path / "rep",
        "modality=mcp",
        task,
        "tracking=none",
        "mcp.proxy.mode=replay",
        f"mcp.proxy.cassettes={cassettes}",
        f"mcp.servers_dir={tmp_path}/nothing-here",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    replayed = comparable(tmp_path / "rep" / "run")
    assert replayed[:-1] == recorded[:-1]  # the same calls, the same answers
    assert [e["server"] for e in events(tmp_path / "rep" / "run", "mcp_start")] == ["filesystem"]


@pytest.mark.parametrize("kinds, message", [("[error]", "injected fault"), ("[drop]", "no answer within")])
def test_fault_mode_gives_recorded_tool_errors_not_a_crash(tmp_path, kinds, message):
    proc = run_cli(
        tmp_path,
        "modality=mcp",
        "task=toolathlon/redact-contacts",
        "tracking=none",
        "mcp.proxy.mode=fault",
        "mcp.proxy.fault_rate=1.0",
        f"mcp.proxy.fault_kinds={kinds}",
        "mcp.call_timeout_s=1",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (result,) = results(tmp_path / "run")
    assert result["status"] == "failure" and result["termination"] == "done"
    calls = [e for e in events(tmp_path / "run", "tool_call") if e["tool"].startswith("filesystem-")]
    assert calls and all(not e["ok"] and message in e["error" if "error" in e else "output"] for e in calls)
    assert result["hallucinations"] == 0  # a failing server is not the model's mistake
    (cassette,) = (tmp_path / "run").rglob("mcp/filesystem.jsonl")
    faults = [json.loads(line).get("fault") for line in cassette.read_text().splitlines()]
    assert faults.count(kinds.strip("[]")) == len(calls)


def test_a_server_that_fails_to_start_is_an_infra_error_naming_its_stderr(tmp_path):
    script = tmp_path / "broken_server.py"
    script.write_text("import sys\nprint('cannot read /etc/notes-server.toml', file=sys.stderr)\nsys.exit(2)\n")
    folder = tmp_path / "suite" / "notes" / "broken"
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(
        "app: notes\ninstruction: write a note\nevaluator: {func: infeasible}\n"
        f"mcp_servers: [{{name: notes, command: {sys.executable}, args: [{script}]}}]\n"
        "solution: {mcp: [{done: {status: DONE}}]}\n"
    )
    proc = run_cli(tmp_path, "modality=mcp", f"tasks.root={tmp_path}/suite", "tracking=none", "infra_retries=0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (result,) = results(tmp_path / "run")
    assert result["status"] == "infra_error"
    assert "'notes' failed to start" in result["reason"] and "cannot read /etc/notes-server.toml" in result["reason"]
