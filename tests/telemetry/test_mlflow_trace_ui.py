"""An episode's trace read in MLflow's own UI, in a real browser (Playwright driving the system
Chromium) against a real ``mlflow server``: selecting a computer call's span shows the screenshot
it produced as an image that loaded (docs/tracking.md, issue 39)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.scripted_server import free_port
from tests.helpers.cli import run_cli
from tests.helpers.mlflow_store import start_mlflow_server
from tests.telemetry.browser import CHROMIUM, require_browser

pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def test_a_tool_spans_screenshot_shows_in_mlflows_trace_view(tmp_path: Path) -> None:
    require_browser()
    from mlflow.tracking import MlflowClient
    from playwright.sync_api import expect, sync_playwright

    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    server = start_mlflow_server(tmp_path / "server.db", port)
    try:
        proc = run_cli(
            tmp_path,
            "provider=oracle",
            "task=mousepad/create_todo",
            f"tracking.uri={uri}",
            "tracking.experiment=trace_ui",
            f"tracking.artifact_root={tmp_path}/artifacts",
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        client = MlflowClient(uri)
        experiment_id = client.get_experiment_by_name("trace_ui").experiment_id
        (trace,) = client.search_traces(locations=[experiment_id])
        span = next(s for s in trace.data.spans if s.name.startswith("computer.") and s.attributes.get("screenshot"))
        stored = tmp_path / "run" / "episodes" / "mousepad" / "create_todo" / "0" / span.attributes["screenshot"]
        from PIL import Image

        width = Image.open(stored).size[0]

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1800, "height": 1000})
                page.goto(f"{uri}/#/experiments/{experiment_id}/traces?selectedEvaluationId={trace.info.trace_id}")
                page.get_by_text(span.name, exact=True).first.click(timeout=60_000)
                image = page.locator('img[alt^="Attachment "]').first
                expect(image).to_be_visible(timeout=30_000)
                page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle(), timeout=30_000)
                assert image.evaluate("img => img.naturalWidth") == width  # the screenshot as stored
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
