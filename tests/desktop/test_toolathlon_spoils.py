"""The built-in Toolathlon tasks' nearly right answers: each solution declares a ``spoil:`` (a value
written as the task forbids, one citation left broken, a change line left out, a phone number half
redacted, a value rounded) and each task's grader rejects it, with its reason. Without the declared
spoils the generic rule leaves out only ``local-claim_done``, which five of the six graders do not
read: the certificate would call them lenient."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcpworld.agent.providers.oracle import declares_spoil
from mcpworld.core.task_parts import parse_oracle_step
from tests.helpers.cli import results, run_cli

pytestmark = [pytest.mark.desktop, pytest.mark.slow]

SHIPPED = Path(__file__).resolve().parents[2] / "mcpworld" / "data" / "tasks" / "toolathlon"
DECLARED = ["docx-report", "fix-bib-citations", "git-tag-release", "redact-contacts", "sales-long-format"]


def test_the_declared_spoils_are_there():
    for name in DECLARED:
        where = str(SHIPPED / name / "solution.json")
        steps = [parse_oracle_step(call, where) for call in json.loads(Path(where).read_text(encoding="utf-8"))["mcp"]]
        assert declares_spoil(steps), name


def test_every_grader_rejects_the_spoiled_replay(tmp_path):
    proc = run_cli(tmp_path, "modality=mcp", "app=toolathlon", "provider=oracle", "provider.replay=spoiled", "tracking=none")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rs = results(tmp_path / "run")
    assert len(rs) == 6
    assert all(r["status"] == "failure" and r["score"] == 0.0 for r in rs), [(r["task_id"], r["status"]) for r in rs]
    assert all(r["metrics"][0]["name"] == "grader" and r["metrics"][0]["reason"] for r in rs)
