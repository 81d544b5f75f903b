"""The Traces filter docs/tracking.md gives, checked against MLflow 3.17's own trace search on a
real sqlite store holding a square and a rect episode's traces, as mcpworld tags them.

MLflow 3.17.2's Traces tab sends what is typed in its search box as ``trace.text ILIKE '%…%'`` (a
full-text search of the spans), so a filter expression typed there finds nothing; its tag filter
(``…/traces?tag=KEY=VALUE``, or a click on a trace's tag) sends ``tags.<key> = '<value>'``, the
syntax ``MlflowClient.search_traces`` and ``mlflow.search_traces`` take too (read from the UI's JS
bundle and its requests; tests/telemetry/test_mlflow_ui_traces.py checks it in the UI itself)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.mlflow_store import log_two_episodes

pytestmark = pytest.mark.slow  # a real sqlite store (MLflow's import and migrations: a few seconds)


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
