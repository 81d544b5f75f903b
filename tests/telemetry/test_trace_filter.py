"""The Traces filter docs/tracking.md gives, checked against MLflow 3.17's own trace search on a
real sqlite store holding a square and a rect episode's traces, as mcpworld tags them.

MLflow 3.17.2's Traces tab sends what is typed in its search box as ``trace.text ILIKE '%…%'`` (a
full-text search of the spans), so a filter expression typed there finds nothing; its tag filter
(``…/traces?tag=KEY=VALUE``, or a click on a trace's tag) sends ``tags.<key> = '<value>'``, the
syntax ``MlflowClient.search_traces`` and ``mlflow.search_traces`` take too (read from the UI's JS
bundle and its requests; tests/telemetry/test_mlflow_ui_traces.py checks it in the UI itself)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from mcpworld.core.result import EpisodeResult

pytestmark = pytest.mark.slow  # a real sqlite store (MLflow's import and migrations: a few seconds)
RESOLUTIONS = ("square", "rect")


def log_two_episodes(tmp_path: Path) -> tuple[str, str]:
    """A job of two episodes, one per resolution, logged with their traces as a run logs them;
    the store's URI and the experiment's id."""
    from mcpworld.telemetry.tracking.keys import JOB_DIR
    from mcpworld.telemetry.tracking.logger import MlflowLogger

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    logger = MlflowLogger(uri, str(tmp_path / "art"), "filter")
    job_dir = tmp_path / "job"
    logger.start_job("job", {"model": "oracle"}, {JOB_DIR: str(job_dir)})
    start = time.time() - 60
    for n, resolution in enumerate(RESOLUTIONS):
        labels = {"model": "oracle", "provider": "oracle", "resolution": resolution, "modality": "gui", "env": "local"}
        result = EpisodeResult(
            task_id="mousepad/create_todo", app="mousepad", attempt=n, status="success", score=1.0, duration_s=2.0, labels=labels
        )
        folder = job_dir / "episodes" / result.task_id / str(n)
        folder.mkdir(parents=True)
        events: list[dict[str, Any]] = [
            {"type": "episode_start", "t": 0.0, "ts": start, "task": result.task_id, "attempt": n, **labels},
            {"type": "episode_end", "t": 2.0, "ts": start + 2.0, "status": "success", "score": 1.0},
        ]
        (folder / "trace.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        result.write(folder / "result.json")
        logger.log_episode(result, folder)
    assert logger.finish_job({}, [], job_dir=job_dir) == []
    return uri, logger.experiment_id or ""


def test_the_documented_trace_filter_finds_the_traces_tagged_so(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    uri, experiment_id = log_two_episodes(tmp_path)
    client = MlflowClient(uri)

    def resolutions(filter_string: str) -> list[str]:
        traces = client.search_traces(locations=[experiment_id], filter_string=filter_string)
        return sorted(t.info.tags["resolution"] for t in traces)

    assert resolutions("") == ["rect", "square"]
    # what the UI's Tags filter sends (a key with a dot or space in backticks), and the singular alias
    for syntax in ("tags.resolution = 'rect'", "tags.`resolution` = 'rect'", "tag.resolution = 'rect'"):
        assert resolutions(syntax) == ["rect"], syntax
    assert resolutions("tags.resolution != 'rect'") == ["square"]
    assert resolutions("tags.`mcpworld.job_run_id` IS NOT NULL") == ["rect", "square"]
    # what the UI's search box sends for a filter typed there (its quotes doubled): a text no span holds
    assert resolutions("trace.text ILIKE '%tags.resolution = ''rect''%'") == []


def test_a_trace_carries_the_tags_docs_tracking_md_names(tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    from mcpworld.core.paths import PROJECT

    uri, experiment_id = log_two_episodes(tmp_path)
    trace = MlflowClient(uri).search_traces(locations=[experiment_id])[0]
    doc = (PROJECT / "docs" / "tracking.md").read_text(encoding="utf-8")
    sentence = re.search(r"The trace of an episode is tagged (.*?)\(and `seed` where set\)", doc, re.S)
    assert sentence, "docs/tracking.md no longer says which tags a trace has"
    listed = set(re.findall(r"`([^`]+)`", sentence.group(1)))
    tagged = {k for k in trace.info.tags if not k.startswith("mlflow.")}  # (MLflow's own: its bookkeeping)
    assert tagged == listed, (
        f"tagged, not in the doc: {sorted(tagged - listed)}; in the doc, not tagged: {sorted(listed - tagged)}"
    )
