"""The Traces tab of MLflow 3.17.2's own UI, in a real browser (Playwright driving the system
Chromium) against a real ``mlflow server`` holding a square and a rect episode's traces as mcpworld
logs them: the way docs/tracking.md gives to filter by a tag works there, and the one it warns about
does not. What the page asks the server (``traces/search``'s filter) is recorded beside what it shows."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.scripted_server import free_port
from tests.helpers.mlflow_store import log_two_episodes, start_mlflow_server
from tests.telemetry.browser import CHROMIUM

pytestmark = [pytest.mark.desktop, pytest.mark.slow]
SEARCH_BOX = "Search traces by id, input, or output"  # MLflow 3.17.2's placeholder


def test_the_traces_tab_filters_by_a_tag_through_its_link_not_its_search_box(tmp_path: Path) -> None:
    from playwright.sync_api import Page, expect, sync_playwright

    _, experiment_id = log_two_episodes(tmp_path)
    port = free_port()
    server = start_mlflow_server(tmp_path / "mlflow.db", port)
    traces = f"http://127.0.0.1:{port}/#/experiments/{experiment_id}/traces"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:

                def open_page(url: str) -> tuple[Page, list[str], list[list[str]]]:
                    page = browser.new_context(viewport={"width": 1600, "height": 1000}).new_page()
                    asked: list[str] = []  # each traces/search request's filter
                    answered: list[list[str]] = []  # the resolution tags of the traces each answer lists

                    def ask(request: Any) -> None:
                        if "traces/search" in request.url:
                            asked.append(str(json.loads(request.post_data or "{}").get("filter", "")))

                    def answer(response: Any) -> None:
                        if "traces/search" in response.url and response.ok:
                            listed = response.json().get("traces") or []
                            answered.append(sorted(str(t.get("tags", {}).get("resolution")) for t in listed))

                    page.on("request", ask)
                    page.on("response", answer)
                    page.goto(url)
                    return page, asked, answered

                # the link docs/tracking.md gives: the rect trace alone ("1 of 2"), asked by its tag
                page, asked, answered = open_page(f"{traces}?tag=resolution%3Drect")
                expect(page.get_by_text("1 of 2", exact=True)).to_be_visible(timeout=60_000)
                assert any(f.endswith("tags.resolution = 'rect'") for f in asked), asked
                assert answered[-1] == ["rect"], answered

                # unfiltered, both are listed; a filter typed in the search box is searched as text: none
                page, asked, answered = open_page(traces)
                expect(page.get_by_text("2 of 2", exact=True)).to_be_visible(timeout=60_000)
                page.wait_for_timeout(3000)  # MLflow's "Detect Issues" pop-up comes late and takes the focus
                if page.get_by_role("button", name="Got it").is_visible():
                    page.get_by_role("button", name="Got it").click()
                box = page.get_by_placeholder(SEARCH_BOX)
                box.click()
                box.fill("tags.resolution = 'rect'")
                box.press("Enter")
                expect(page).to_have_url(re.compile(r"[?&]q=tags\.resolution"))
                expect(page.get_by_text("No traces match your filters")).to_be_visible(timeout=30_000)
                assert any(f.startswith("trace.text ILIKE '%tags.resolution") for f in asked), asked
                assert answered[0] == ["rect", "square"] and answered[-1] == [], answered
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait(30)
