"""A task whose browser opens a site this machine cannot reach is skipped naming the site."""

from __future__ import annotations

import socket
from pathlib import Path

from mcpworld.core.task import Task
from mcpworld.core.task_parts import EvaluatorSpec
from mcpworld.tasks.websites import site_urls, skip_unreachable, why_unreachable
from tests.fakes.file_server import FileServer


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again on exit: a connect is refused


def chrome_task(task_id: str, url: str, **evaluator) -> Task:
    return Task(
        id=task_id,
        app="chrome",
        instruction="x",
        dir=Path("."),
        source=Path("x.json"),
        format="osworld",
        setup=[
            {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [url]}},
            {"type": "launch", "parameters": {"command": f"google-chrome {url}/extra", "shell": True}},
        ],
        evaluator=EvaluatorSpec({"func": "exact_match", **evaluator}),
    )


def test_urls_come_from_tabs_commands_and_fetching_getters():
    task = chrome_task(
        "t",
        "https://a.example/x",
        result={"type": "page_info", "url": "http://b.example:8080/p"},
        expected={"type": "rule", "rules": {"expected": "https://not-fetched.example"}},
    )
    assert site_urls(task) == ["https://a.example/x", "https://a.example/x/extra", "http://b.example:8080/p"]
    pdf = chrome_task(
        "p",
        "https://a.example/x",
        expected={"type": "pdf_from_url", "dest": "gold.pdf", "path": "https://lilianweng.example/posts/agent/"},
    )
    assert site_urls(pdf)[-1] == "https://lilianweng.example/posts/agent/"  # its page is in "path"


def test_a_connect_says_why_a_site_cannot_be_reached():
    with FileServer({"/": b"ok"}) as site:
        host, port = site.url.split("//")[1].split(":")
        assert why_unreachable(host, int(port)) is None
    assert "refused" in why_unreachable("127.0.0.1", closed_port()).lower()


def test_only_tasks_with_an_unreachable_site_are_skipped():
    down = "https://no-such-site.invalid/page"  # .invalid never resolves (RFC 2606)
    tasks = [
        chrome_task("own", f"http://127.0.0.1:{closed_port()}/"),
        chrome_task("down", down),
        Task(id="local", app="os", instruction="x", dir=Path("."), source=Path("x")),
    ]
    skip_unreachable(tasks, timeout_s=2)
    assert tasks[0].skip_reason is None  # loopback: a server the episode itself starts
    assert tasks[2].skip_reason is None
    assert tasks[1].skip_reason.startswith(f"it opens {down}, and this machine cannot reach no-such-site.invalid:443 (")
    assert tasks[1].skip_reason.endswith("run it where that site is reachable")


def test_a_task_declared_offline_runs_although_its_site_is_down():
    down = chrome_task("settings", "https://no-such-site.invalid/page")
    down.offline = "the answer is a browser setting; the page's content plays no part"
    skip_unreachable([down], timeout_s=2)
    assert down.skip_reason is None
