"""Live Chromium getters against a real browser on an Xvfb desktop, pages served from 127.0.0.1."""

from __future__ import annotations

import time
from typing import ClassVar

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.evaluation.registry import get_getter, get_metric
from tests.fakes.file_server import serve_folder

pytestmark = pytest.mark.desktop

PAGES = {
    "search.html": (
        "<title>Flights</title><div class='city'>SEA</div><div class='city'>NYC</div>"
        "<div class='pair'>SEA<span>-</span>NYC</div><ul class='cats'><li class='catAllProducts'>"
        "<span>Shoes</span></li><li class='catAllProducts'><span>Hats</span></li></ul>"
        "<p id='when'> Mar 3 </p><input id='from' value=' Seattle '>"
    ),
    "a.html": "<title>Page A</title><p>alpha</p><a href='b.html?q=cats&lang=en'>to b</a>",
    "b.html": "<title>Page B</title><p>bravo</p>",
}


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    root.mkdir()
    for name, html in PAGES.items():
        (root / name).write_text(html)
    with serve_folder(root) as url:
        yield url


def get(name, env, **cfg):
    return get_getter(name)(env, {"type": name, **cfg})


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    return predicate()


def test_tab_getters_read_the_live_browser_in_osworlds_shapes(tmp_path, site):
    task = Task(
        id="t/chromium",
        app="chromium",
        instruction="x",
        dir=tmp_path,
        source=tmp_path / "task.yaml",
        setup=[{"launch": {"command": ["google-chrome", f"{site}/a.html"], "window": "Page A", "timeout": 60}}],
    )
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp_path / "ep")
        tabs = get("open_tabs_info", env)
        assert tabs == [{"title": "Page A", "url": f"{site}/a.html"}]

        active = get("active_tab_info", env)
        assert set(active) == {"title", "url", "content"}
        assert active["title"] == "Page A" and active["url"] == f"{site}/a.html" and "alpha" in active["content"]

        # a second tab in front (Tab to the link, ctrl+shift+Return opens it in a new foreground tab)
        env.act({"kind": "key", "keys": "Tab"})
        env.act({"kind": "key", "keys": "ctrl+shift+Return"})
        b_url = f"{site}/b.html?q=cats&lang=en"
        assert wait_for(lambda: get("active_url_from_accessTree", env) == b_url), get("open_tabs_info", env)
        tabs = get("open_tabs_info", env)
        assert sorted(t["url"] for t in tabs) == sorted([f"{site}/a.html", b_url])
        assert all(set(t) == {"title", "url"} for t in tabs)
        assert get_metric("is_expected_tabs")(tabs, {"type": "url", "urls": [b_url, f"{site}/a.html"]}) == 1.0
        active = get("active_tab_info", env)
        assert active["title"] == "Page B" and "bravo" in active["content"]
        assert get_metric("is_expected_active_tab")(active, {"type": "url", "url": b_url}) == 1.0

        assert get("active_tab_url_parse", env, parse_keys=["q", "page"], replace={"q": "query"}) == {"page": "", "query": "cats"}

        # back to the first tab: the active tab follows
        env.act({"kind": "key", "keys": "ctrl+1"})
        assert wait_for(lambda: get("active_url_from_accessTree", env) == f"{site}/a.html")

        # page_info opens the URL in a tab of its own and closes it again
        info = get("page_info", env, url=f"{site}/b.html")
        assert info == {"title": "Page B", "url": f"{site}/b.html", "content": info["content"]}
        assert "bravo" in info["content"]
        assert len(get("open_tabs_info", env)) == 2

        # local pages are reported under /home/user whatever the episode's real home is
        (env.home / "local.html").write_text("<title>Local</title>")
        env.user and env.user.own(env.home / "local.html")
        assert get("page_info", env, url="file:///home/user/local.html")["url"] == "file:///home/user/local.html"

        # the browser gone: None, which every metric scores 0
        for launched in env.launched:  # the browser process the launch step started, by its id
            launched.proc.kill()
        assert wait_for(lambda: get("open_tabs_info", env) is None)
        assert get("active_tab_info", env) is None
        assert get("page_info", env, url=f"{site}/b.html") is None
        assert get_metric("is_expected_tabs")(None, {"type": "url", "urls": [f"{site}/a.html"]}) == 0.0


def test_an_environment_without_a_devtools_port_is_an_infra_error(tmp_path):
    from mcpworld.core.errors import InfraError

    class NoPorts:
        ports: ClassVar[dict[str, int]] = {}

    with pytest.raises(InfraError, match="DevTools"):
        get("open_tabs_info", NoPorts())


def test_osworld_chrome_tab_steps_open_and_close_tabs(tmp_path, site):
    """OSWorld's setup: launch google-chrome, then chrome_open_tabs (the start tab goes), then
    chrome_close_tabs (URLs compared as OSWorld compares them)."""
    setup = [
        {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [f"{site}/a.html", f"{site}/b.html"]}},
        {"type": "chrome_close_tabs", "parameters": {"urls_to_close": [site.removeprefix("http://") + "/a.html"]}},
    ]
    task = Task(
        id="t/chrome", app="chrome", instruction="x", dir=tmp_path, source=tmp_path / "task.json", setup=setup, format="osworld"
    )
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp_path / "ep")
        assert wait_for(lambda: get("open_tabs_info", env) == [{"title": "Page B", "url": f"{site}/b.html"}]), get(
            "open_tabs_info", env
        )


def test_a_tab_whose_site_cannot_be_reached_keeps_the_url_it_was_sent_to(tmp_path, site):
    """Offline, Chromium shows its error page (chrome-error://chromewebdata/ to Playwright); the tab,
    like its address bar, keeps the site's URL, which is what the tab getters report and what
    chrome_close_tabs finds it by."""
    down = "http://127.0.0.1:1/unreachable"  # nothing listens on port 1
    setup = [
        {"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
        {"type": "chrome_open_tabs", "parameters": {"urls_to_open": [f"{site}/a.html", down, down + "-too"]}},
        {"type": "chrome_close_tabs", "parameters": {"urls_to_close": [down + "-too"]}},
    ]
    task = Task(
        id="t/chrome", app="chrome", instruction="x", dir=tmp_path, source=tmp_path / "task.json", setup=setup, format="osworld"
    )
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp_path / "ep")
        urls = wait_for(lambda: sorted(t["url"] for t in get("open_tabs_info", env) or []) == [down, f"{site}/a.html"])
        assert urls, get("open_tabs_info", env)


def test_active_tab_html_parse_reads_the_page_by_class_label_xpath_and_input(tmp_path, site):
    """OSWorld's shapes for grading what an agent set on a site, read off the live active tab."""
    url = f"{site}/search.html?sort=price"
    task = Task(
        id="t/parse",
        app="chromium",
        instruction="x",
        dir=tmp_path,
        source=tmp_path / "task.yaml",
        setup=[{"launch": {"command": ["google-chrome", url], "window": "Flights", "timeout": 60}}],
    )
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp_path / "ep")
        parse = lambda **cfg: get("active_tab_html_parse", env, **cfg)  # noqa: E731
        assert parse(
            category="class",
            class_singleObject={"city": "first"},
            class_multiObject={"city": {"1": "second", "5": "none"}},
            class_multiObject_child={"pair": {"0": "from", "1": "to"}},
            class_multiObject_search_exist={"city": ["SEA", "LAX", "is_other_exist"]},
        ) == {
            "first": "SEA",
            "second": "NYC",
            "none": "",
            "from": "SEA",
            "to": "NYC",
            "SEA": True,
            "LAX": False,
            "is_other_exist": True,
        }
        assert parse(
            category="class&url", class_multiObject_li={"cats": ["shoes"]}, url_include_expected=["sort=price", "sort=date"]
        ) == {"shoes": True, "is_other_exist": True, "sort=price": True, "sort=date": False}
        assert parse(category="label", labelObject={"Mar": "date"}) == {"date": "Mar 3"}
        assert parse(category="xpath", xpathObject={"//p[@id='when']": "date", "//p[@id='gone']": "x"}) == {
            "date": "Mar 3",
            "x": "",
        }
        assert parse(category="input", inputObject={"//input[@id='from']": "from"}) == {"from": "Seattle"}


def test_update_browse_history_adds_osworlds_rows_to_chromiums_own_history(tmp_path):
    import sqlite3

    entries = [
        {"url": "https://www.youtube.com/watch?v=1", "title": "A video", "visit_time_from_now_in_seconds": 3600},
        {"url": "https://www.bbc.co.uk/", "title": "BBC", "visit_time_from_now_in_seconds": 60},
    ]
    task = Task(
        id="t/history",
        app="chrome",
        instruction="x",
        dir=tmp_path,
        source=tmp_path / "task.json",
        setup=[{"type": "update_browse_history", "parameters": {"history": entries}}],
        format="osworld",
    )
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp_path / "ep")
        db = sqlite3.connect(env.home / ".config/google-chrome/Default/History")
        rows = db.execute(
            "SELECT u.url, u.title, v.transition, u.last_visit_time FROM urls u "
            "JOIN visits v ON v.url = u.id ORDER BY u.last_visit_time"
        ).fetchall()
        assert [r[:3] for r in rows] == [(e["url"], e["title"], 805306368) for e in entries]
        now_1601_us = (time.time() + 11644473600) * 1e6
        assert abs(now_1601_us - rows[0][3] - 3600e6) < 120e6  # an hour ago, in Chrome's clock
        assert db.execute("SELECT value FROM meta WHERE key = 'version'").fetchone()  # Chromium's own schema
        db.close()
        env.end_episode()
