"""A key given on the command line or in the environment reaches no file Hydra or we write, no
printed line, and no trace — not even when the agent's shell digs it out of /proc."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.desktop, pytest.mark.slow]
OVERRIDE_KEY = "sk-test-SECRETVALUE123"
ENV_KEY = "sk-ant-ENVSECRET-0987654321"


def test_keys_reach_no_file_no_output_and_no_trace(tmp_path):
    task = tmp_path / "suite" / "peek" / "proc"
    task.mkdir(parents=True)
    (task / "task.yaml").write_text(
        "app: xterm\n"
        "instruction: Write hi into ~/out.txt\n"
        "evaluator:\n"
        "  func: exact_match\n"
        "  result: {type: content_from_vm_file, path: ~/out.txt}\n"
        "  expected: {type: rule, rules: {expected: hi}}\n"
        "solution:\n"
        "  cli:\n"  # what a curious agent could do: print the harness's environment
        "    - bash: {command: \"cat /proc/$PPID/environ /proc/$PPID/cmdline | tr '\\\\0' '\\\\n' | grep -i api_key; "
        'echo hi > ~/out.txt"}\n'
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld",
            "-m",
            f"provider.api_key={OVERRIDE_KEY}",
            "modality=cli",
            f"tasks.root={tmp_path / 'suite'}",
            f"hydra.sweep.dir={tmp_path}/sweep",
            f"tracking.uri=sqlite:///{tmp_path}/mlflow.db",
            f"tracking.artifact_root={tmp_path}/artifacts",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ANTHROPIC_API_KEY": ENV_KEY},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "'***'" in proc.stdout + proc.stderr  # the launcher's "#0 : provider.api_key=…" line, masked
    written = [p for p in tmp_path.rglob("*") if p.is_file()]  # MLflow's store and artifacts too
    assert any(p.name == "multirun.yaml" for p in written) and any(p.name == "trace.jsonl" for p in written)
    for path in written:
        data = path.read_bytes()
        assert OVERRIDE_KEY.encode() not in data and ENV_KEY.encode() not in data, path
    for text in (proc.stdout, proc.stderr):
        assert OVERRIDE_KEY not in text and ENV_KEY not in text
    (trace,) = [t for t in tmp_path.rglob("trace.jsonl") if t.parent.name == "0"]
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    (call,) = [e for e in events if e["type"] == "tool_call" and e["tool"] == "bash"]
    # the harness's /proc shows neither the variable nor the override: only the masked argument
    assert "ANTHROPIC_API_KEY" not in call["output"] and "provider.api_key='***'" in call["output"], call


def test_a_secret_a_tool_prints_is_redacted_in_the_trace(tmp_path, monkeypatch):
    from mcpworld.core import secrets
    from mcpworld.telemetry.trace import Trace

    secrets.register_secrets(["sk-registered-5555555555"])
    trace = Trace(tmp_path / "trace.jsonl")
    trace.emit("tool_call", output="key=sk-registered-5555555555", args={"nested": ["sk-registered-5555555555"]})
    trace.close()
    text = (tmp_path / "trace.jsonl").read_text()
    assert "sk-registered" not in text and text.count("***") == 2
