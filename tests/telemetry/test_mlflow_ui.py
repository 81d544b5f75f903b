"""A square/rect sweep read in MLflow's own UI, in a real browser (Playwright driving the system
Chromium) against a real ``mlflow server``: job and episode rows carry the same ``resolution`` param,
grouping by it gives one group per resolution holding both the job and its episodes, an episode's
Duration is its ``duration_s``, its Run Name cell shows its task first, job runs have few params, a
fresh browser lands on the runs table by the link the sweep prints; runs, traces and the experiment
read as docs/tracking.md says (checked with MlflowClient where the UI only renders them)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.scripted_server import free_port
from tests.helpers.cli import run_cli
from tests.helpers.mlflow_store import start_mlflow_server
from tests.telemetry.browser import CHROMIUM, require_browser

pytestmark = [pytest.mark.desktop, pytest.mark.slow]
TASKS = "task=[mousepad/create_todo,xterm/set_theme]"
UNIT_S = {"ms": 0.001, "s": 1.0, "min": 60.0, "h": 3600.0}
RUN_NAME_COLUMN = "attributes.`Run Name`"


def seconds(text: str) -> float:
    """MLflow's Duration cell ("2.7s", "1.2min", "160ms") in seconds."""
    found = re.fullmatch(r"\s*([\d.]+)\s*(ms|s|min|h)\s*", text)
    assert found, f"not a duration: {text!r}"
    return float(found.group(1)) * UNIT_S[found.group(2)]


# the leading characters of a name its Run Name cell shows uncut (the cell, or a box inside it, clips it)
SHOWN_PREFIX = """(cell, name) => {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    let node = walker.nextNode();
    while (node && !node.textContent.includes(name)) node = walker.nextNode();
    if (!node) return null;
    let right = cell.getBoundingClientRect().right;
    for (let e = node.parentElement; e && e !== cell; e = e.parentElement) {
        if (getComputedStyle(e).overflowX !== "visible") right = Math.min(right, e.getBoundingClientRect().right);
    }
    const at = node.textContent.indexOf(name), range = document.createRange();
    let shown = 0;
    while (shown < name.length) {
        range.setStart(node, at + shown);
        range.setEnd(node, at + shown + 1);
        if (range.getBoundingClientRect().right > right + 0.5) break;
        shown += 1;
    }
    return name.slice(0, shown);
}"""


def check_the_task_shows(page: Any, episode: Any) -> None:
    """An episode's Run Name cell starts with its task: MLflow cuts a name short with an ellipsis
    (about 21 characters of a grouped row here), and a name that led with the model showed
    ``oracle · re…`` on every episode."""
    cell = page.locator(f'[role="row"][row-id$=".{episode.info.run_id}"] [col-id="{RUN_NAME_COLUMN}"]').first
    shown = cell.evaluate(SHOWN_PREFIX, episode.info.run_name)
    task = episode.data.tags["task_id"]
    assert shown is not None, (episode.info.run_name, cell.inner_text())
    # all that shows is the task (or the whole task shows), and more of it than its app
    assert (task.startswith(shown) or shown.startswith(task)) and len(shown) > len(task.split("/")[0]) + 1, (
        shown,
        episode.info.run_name,
    )


def check_landing(browser: Any, uri: str, experiment_id: str, total: int) -> None:
    """A new user (a fresh browser profile): the link docs/tracking.md gives (and the sweep prints)
    lands on the runs table. The experiment's plain link lands on the GenAI overview in MLflow 3.17.2,
    whatever the server holds (its UI decides by the URL or the browser's own storage alone); should a
    later MLflow open it on the runs, this fails and the docs can say so."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1800, "height": 1000})
    try:
        page = context.new_page()
        page.goto(f"{uri}/#/experiments/{experiment_id}/runs?workflowType=machine_learning")
        expect(page.get_by_text(f"{total} matching runs")).to_be_visible(timeout=60_000)
        assert re.search(rf"#/experiments/{experiment_id}/runs\b", page.url), page.url
    finally:
        context.close()
    context = browser.new_context(viewport={"width": 1800, "height": 1000})
    try:
        page = context.new_page()
        page.goto(f"{uri}/#/experiments/{experiment_id}")
        expect(page.get_by_text("Detect Issues in Your Traces")).to_be_visible(timeout=60_000)  # its pop-up
        expect(page.get_by_text(f"{total} matching runs")).to_have_count(0)
    finally:
        context.close()


def check_runs_in_the_ui(uri: str, experiment_id: str, jobs: list[Any], episodes: list[Any], total: int) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1800, "height": 1000})
            # the link docs/tracking.md gives (MLflow 3.17 picks GenAI or ML views by this switch)
            page.goto(f"{uri}/#/experiments/{experiment_id}/runs?workflowType=machine_learning")
            expect(page.get_by_text(f"{total} matching runs")).to_be_visible(timeout=60_000)

            page.get_by_role("button", name="Group by").click()
            page.get_by_placeholder("Search").fill("resolution")
            menu = page.get_by_role("menu")
            expect(menu.get_by_text("Params")).to_be_visible()
            menu.get_by_text("resolution", exact=True).click()
            page.keyboard.press("Escape")
            groups = {}
            for res in ("square", "rect"):
                expect(page.get_by_text(f"Group: {res}", exact=True)).to_be_visible()
                rows = page.locator(f'[role="row"][row-id^="param.resolution.{res}."]')
                expect(rows.first).to_be_visible()
                groups[res] = {rid.rsplit(".", 1)[-1] for rid in rows.evaluate_all("rs => rs.map(r => r.getAttribute('row-id'))")}
            expect(page.get_by_text(re.compile(r"^Group: "))).to_have_count(2)
            for res, ids in groups.items():  # the job and its episodes: one group
                wanted = {r.info.run_id for r in jobs + episodes if r.data.params["resolution"] == res}
                assert ids == wanted and len(wanted) == 3, (res, ids, wanted)

            page.get_by_role("button", name="Columns").click()  # the param as a column: on every job and episode row
            page.get_by_placeholder("Search").last.fill("resolution")
            page.get_by_test_id("column-selector-tree").get_by_text("resolution", exact=True).click()
            page.keyboard.press("Escape")
            for run in jobs + episodes:
                cell = page.locator(f'[role="row"][row-id$=".{run.info.run_id}"] [col-id="params.`resolution`"]')
                expect(cell.first).to_have_text(run.data.params["resolution"])
            for episode in episodes:  # Duration (from the run's start and end) is the episode's duration_s
                cell = page.locator(f'[role="row"][row-id$=".{episode.info.run_id}"] [col-id="duration"]').first
                expect(cell).to_have_text(re.compile(r"\d"))
                shown = seconds(cell.inner_text())
                assert abs(shown - episode.data.metrics["duration_s"]) < 1.0, (shown, episode.data.metrics["duration_s"])
                name = page.locator(f'[role="row"][row-id$=".{episode.info.run_id}"]').get_by_text(episode.info.run_name)
                expect(name).to_be_visible()
                check_the_task_shows(page, episode)
            check_landing(browser, uri, experiment_id, total)
        finally:
            browser.close()


def test_a_square_rect_sweep_reads_in_mlflows_own_ui(tmp_path: Path) -> None:
    require_browser()
    from mlflow.tracking import MlflowClient

    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    server = start_mlflow_server(tmp_path / "server.db", port)
    try:
        proc = run_cli(
            tmp_path,
            "-m",
            "resolution=square,rect",
            "provider=oracle",
            TASKS,
            f"tracking.uri={uri}",
            "tracking.experiment=ui",
            f"tracking.artifact_root={tmp_path}/artifacts",
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        client = MlflowClient(uri)
        exp = client.get_experiment_by_name("ui")
        found = client.search_runs([exp.experiment_id])
        level = lambda name: [r for r in found if r.data.tags["mcpworld.level"] == name]  # noqa: E731
        (sweep,), jobs, episodes = level("sweep"), level("job"), level("episode")
        assert len(jobs) == 2 and len(episodes) == 4

        # one vocabulary: the job's decisive params, under the same names on its episodes
        for job in jobs:
            params = job.data.params
            assert len(params) <= 30, sorted(params)
            assert "seed" not in params  # none set: none sent to the model, none logged
            assert {"model", "provider", "resolution", "modality", "app", "env", "profile", "attempts", "config.sha256"} <= set(
                params
            )
            assert len(params["config.sha256"]) == 64
            assert "config.yaml" in {a.path for a in client.list_artifacts(job.info.run_id)}
            # what tells it from its sibling first: the runs table shows only a name's start
            assert job.info.run_name == f"resolution={params['resolution']} · oracle · gui · all"
            assert job.data.tags["mcpworld.differs"] == f"resolution={params['resolution']}"
            assert job.data.tags["mlflow.source.git.commit"] == job.data.tags["mcpworld.git.commit"]
            assert "success" in job.data.metrics or "success_rate" in job.data.metrics
            assert not [k for k in job.data.metrics if k.startswith("metric.")]
            children = [e for e in episodes if e.data.tags["mlflow.parentRunId"] == job.info.run_id]
            assert len(children) == 2
            for child in children:
                shared = {k: v for k, v in params.items() if k not in ("app", "tasks")}
                assert shared.items() <= child.data.params.items()
                assert child.data.params["task"] == child.data.tags["task_id"]
        assert sweep.info.run_name == f"resolution=square,rect provider=oracle {TASKS} · sweep"
        names = [r.info.run_name for r in jobs + episodes]
        assert len(set(names)) == len(names)
        assert {e.info.run_name for e in episodes} >= {
            "mousepad/create_todo #0 · oracle · square",
            "xterm/set_theme #0 · oracle · rect",
        }
        link = f"{uri}/#/experiments/{exp.experiment_id}/runs?workflowType=machine_learning"
        assert f"mcpworld: the runs in MLflow: {link}" in proc.stdout  # under the sweep table
        assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
        assert "python -m mcpworld -m resolution=square,rect" in exp.tags["mlflow.note.content"].splitlines()[0]

        # curves per step, and traces filterable by tag with MLflow's own token usage
        episode = next(e for e in episodes if e.data.tags["task_id"] == "mousepad/create_todo")
        result = json.loads((Path(episode.data.tags["mcpworld.episode_dir"]) / "result.json").read_text())
        assert abs((episode.info.end_time - episode.info.start_time) / 1000 - result["duration_s"]) < 1.0
        history = client.get_metric_history(episode.info.run_id, "llm_latency_s")
        assert [m.step for m in history] == list(range(1, result["llm_calls"] + 1))
        traces = client.search_traces(
            locations=[exp.experiment_id], filter_string="tag.resolution = 'rect' AND tag.task = 'mousepad/create_todo'"
        )
        (trace,) = traces
        assert trace.info.tags["mcpworld.job_run_id"] in {j.info.run_id for j in jobs}
        spans = {s.name: s for s in trace.data.spans}
        assert {"setup", "evaluation"} <= set(spans) and any(n.startswith("computer.") for n in spans)

        check_runs_in_the_ui(uri, exp.experiment_id, jobs, episodes, len(found))
    finally:
        server.terminate()
        server.wait(timeout=30)
