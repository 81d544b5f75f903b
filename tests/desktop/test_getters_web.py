"""Web-site gold getters (info_from_website, pdf_from_url, gotoRecreationPage_and_get_html_content)
against the real Chromium on an Xvfb desktop, the sites imitated by pages served from 127.0.0.1."""

from __future__ import annotations

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.evaluation.getters import web
from mcpworld.evaluation.registry import get_getter, get_metric
from tests.fakes.file_server import serve_folder

pytestmark = pytest.mark.desktop

SCHOLAR = """<title>Yann LeCun - Google Scholar</title>
<div id='gsc_prf_in'>Yann LeCun</div>
<table id='gsc_rsb_st'><tbody>
<tr><td>Citations</td><td>345074</td><td>1</td></tr>
<tr><td>h-index</td><td>147</td><td>2</td></tr>
<tr><td>i10-index</td><td>372</td><td>3</td></tr>
</tbody></table>
<table><tbody id='gsc_a_b'>
<tr><td class='gsc_a_t'><a href='citation.html'>Deep learning</a></td></tr>
<tr><td class='gsc_a_t'><a href='other.html'>Gradient-based learning</a></td></tr>
</tbody></table>"""
CITATION = (
    "<title>Deep learning</title><div id='gsc_oci_title_gg'><div><a href='https://example.org/deep.pdf'>"
    "[PDF] example.org</a></div></div>"
)
HOME = """<title>Recreation.gov</title>
<input id='hero-search-input'><button class='nav-search-button'
 onclick="location.href='search.html?q=' + encodeURIComponent(document.getElementById('hero-search-input').value)">
Search</button>"""
SEARCH = """<title>Search</title><div id='results'></div><script>
setTimeout(() => {  // results arrive after the page loaded, as on the real site
  const q = new URLSearchParams(location.search).get('q');
  document.getElementById('results').innerHTML =
    "<a class='search-result-highlight--success' target='_blank' href='camp.html'>" + q + " Campground</a>";
}, 300);
</script>"""
CAMP = """<title>Diamond Campground</title>
<table><tr><th class='camp-sortable-column-header'>Site</th><th class='camp-sortable-column-header'>Loop</th>
<th class='camp-sortable-column-header' id='d1'>Jun 1</th>
<th class='camp-sortable-column-header'>Jun 2</th></tr></table>
<button class='next-available' onclick="document.getElementById('d1').textContent = ' Aug 14 '">Next Available</button>
<script>if (location.search.includes('shown')) document.getElementById('d1').textContent = 'Aug 14';</script>"""
ARTICLE = "<title>LLM Powered Autonomous Agents</title><h1>LLM Powered Autonomous Agents</h1>" + "".join(
    f"<p>Paragraph {i}: planning, memory and tool use let an agent act on its own.</p>" for i in range(60)
)
PAGES = {
    "scholar.html": SCHOLAR,
    "citation.html": CITATION,
    "captcha.html": "<title>Sorry</title>unusual traffic",
    "index.html": HOME,
    "search.html": SEARCH,
    "camp.html": CAMP,
    "article.html": ARTICLE,
    "broken/index.html": "<title>Maintenance</title>down for maintenance",
}

SCHOLAR_INFOS = [
    {"action": "inner_text", "selector": "#gsc_prf_in"},
    {"action": "inner_text", "selector": "#gsc_rsb_st > tbody > tr:nth-child(1) > td:nth-child(2)"},
    {"action": "inner_text", "selector": "#gsc_rsb_st > tbody > tr:nth-child(2) > td:nth-child(2)"},
    {"action": "inner_text", "selector": "#gsc_rsb_st > tbody > tr:nth-child(3) > td:nth-child(2)"},
    {"action": "inner_text", "selector": "#gsc_a_b > tr:nth-child(1) > td.gsc_a_t > a"},
    {
        "action": "click_and_attribute",
        "attribute": "href",
        "selector": ["#gsc_a_b > tr:nth-child(1) > td.gsc_a_t > a", "#gsc_oci_title_gg > div:nth-child(1) > a"],
    },
]
BACKUPS = ["Yann LeCun", "1", "2", "3", "Deep learning", "https://backup"]
REFUSED = "http://127.0.0.1:1/"  # nothing listens on port 1


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("site")
    for name, html in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(html)
    with serve_folder(root) as url:
        yield url


@pytest.fixture(scope="module")
def env(tmp_path_factory, site):
    """One desktop for the module; the agent's browser shows the campground page it found."""
    tmp = tmp_path_factory.mktemp("web")
    task = Task(
        id="t/web",
        app="chromium",
        instruction="x",
        dir=tmp,
        source=tmp / "task.yaml",
        setup=[
            {"launch": {"command": ["google-chrome", f"{site}/camp.html?shown"], "window": "Diamond Campground", "timeout": 60}}
        ],
    )
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(task, tmp / "ep")
        yield env


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(web, "PDF_SETTLE_S", 0.0)
    monkeypatch.setattr(web, "IDLE_TIMEOUT_MS", 2_000)
    monkeypatch.setattr(web, "FLOW_TIMEOUT_MS", 3_000)
    monkeypatch.setattr(web, "SELECTOR_TIMEOUT_MS", 2_000)


def get(name, env, **cfg):
    return get_getter(name)(env, {"type": name, **cfg})


def tabs(env):
    return get("open_tabs_info", env)


def test_info_from_website_reads_and_clicks_like_osworld_and_falls_back_to_backups(env, site):
    before = tabs(env)
    got = get("info_from_website", env, url=f"{site}/scholar.html", infos=SCHOLAR_INFOS, backups=BACKUPS)
    assert got == ["Yann LeCun", "345074", "147", "372", "Deep learning", "https://example.org/deep.pdf"]
    assert tabs(env) == before  # its tab is closed again

    attr = get(
        "info_from_website",
        env,
        url=f"{site}/scholar.html",
        infos=[
            {"action": "attribute", "selector": "#gsc_a_b a", "attribute": "href"},
            {"action": "click_and_inner_text", "selector": ["#gsc_a_b a", "#gsc_oci_title_gg a"]},
            {"selector": "#gsc_prf_in"},
        ],
        backups=BACKUPS,
    )  # inner_text is the default action
    assert attr == ["citation.html", "[PDF] example.org", "Yann LeCun"]

    # the site answered with something else (a captcha page): the task's backups, the whole list
    assert get("info_from_website", env, url=f"{site}/captcha.html", infos=SCHOLAR_INFOS, backups=BACKUPS) == BACKUPS
    assert get("info_from_website", env, url=f"{site}/captcha.html", infos=SCHOLAR_INFOS) is None

    # the site does not load at all: the network's failure, not the agent's
    with pytest.raises(InfraError, match="did not load"):
        get("info_from_website", env, url=REFUSED, infos=SCHOLAR_INFOS, backups=BACKUPS)
    with pytest.raises(UserError, match="action"):
        get("info_from_website", env, url=f"{site}/scholar.html", infos=[{"action": "hover", "selector": "a"}])
    assert tabs(env) == before


def test_pdf_from_url_prints_letter_pages_without_margins(env, site, monkeypatch):
    from pypdf import PdfReader

    path = get("pdf_from_url", env, path=f"{site}/article.html", dest="gold.pdf")
    assert path == str(env.cache_dir / "gold.pdf")
    pdf = PdfReader(path)
    assert len(pdf.pages) >= 2
    box = pdf.pages[0].mediabox
    assert (round(float(box.width)), round(float(box.height))) == (612, 792)  # Letter, in points
    text = "".join(page.extract_text() for page in pdf.pages)
    xs: list[float] = []
    pdf.pages[0].extract_text(visitor_text=lambda t, cm, tm, *_: t.strip() and xs.append(cm[4] + tm[4] * cm[0]))
    left = min(xs)
    assert "LLM Powered Autonomous Agents" in text and "Paragraph 59" in text
    assert left < 15  # the body's 8 px margin only: no page margins (Playwright's default)
    assert get_metric("compare_pdfs")(path, path) == 1.0

    # where page.pdf() refuses (it needs a headless browser in some versions): the same print through CDP
    from playwright.sync_api import Page

    def refuse(*args, **kwargs):
        raise RuntimeError("PDF generation is only supported for headless chromium")

    monkeypatch.setattr(Page, "pdf", refuse)
    again = PdfReader(get("pdf_from_url", env, path=f"{site}/article.html", dest="cdp.pdf"))
    assert [p.extract_text() for p in again.pages] == [p.extract_text() for p in pdf.pages]
    assert again.pages[0].mediabox == pdf.pages[0].mediabox

    with pytest.raises(InfraError, match="did not load"):
        get("pdf_from_url", env, path=REFUSED, dest="x.pdf")


def test_recreation_getter_runs_the_search_flow_and_grades_the_agents_tab(env, site, monkeypatch):
    monkeypatch.setattr(web, "RECREATION_URLS", [f"{site}/"])
    before = tabs(env)
    cfg = {"selector": "class", "class": "camp-sortable-column-header", "order": "2"}
    expected = get("gotoRecreationPage_and_get_html_content", env, **cfg)
    assert expected == {"expected": {"camp-sortable-column-header": "Aug 14"}}  # after Next Available, stripped
    assert tabs(env) == before  # the search tab and the campground tab it opened are closed again
    assert get("gotoRecreationPage_and_get_html_content", env, selector="class", **{"class": "camp-sortable-column-header"}) == {
        "expected": {"camp-sortable-column-header": "Site"}
    }
    assert get(
        "gotoRecreationPage_and_get_html_content", env, selector="class", order="9", **{"class": "camp-sortable-column-header"}
    ) == {"expected": {"camp-sortable-column-header": "__EVALUATION_FAILED__"}}

    # the task's own evaluator: the agent's active tab against the gold
    result = get(
        "active_tab_html_parse",
        env,
        category="class",
        class_singleObject={},
        class_multiObject={"camp-sortable-column-header": {"2": "camp-sortable-column-header"}},
    )
    assert get_metric("check_direct_json_object")(result, expected) == 1.0

    # the site loads but the search flow is not there: OSWorld's failure marker, which scores 0
    monkeypatch.setattr(web, "RECREATION_URLS", [f"{site}/broken/"])
    monkeypatch.setattr(web, "RECREATION_TRIES", 1)
    broken = get("gotoRecreationPage_and_get_html_content", env, **cfg)
    assert broken["expected"]["error"] == "__EVALUATION_FAILED__"
    assert get_metric("check_direct_json_object")(result, broken) == 0.0

    monkeypatch.setattr(web, "RECREATION_URLS", [REFUSED])
    with pytest.raises(InfraError, match="did not load"):
        get("gotoRecreationPage_and_get_html_content", env, **cfg)
    assert tabs(env) == before


def test_without_the_episode_browser_a_headless_chromium_reads_the_site(env, site):
    """OSWorld starts a new browser when the agent closed it; the gold must not depend on that tab."""
    live = get("pdf_from_url", env, path=f"{site}/article.html", dest="live.pdf")  # through the episode's browser
    for launched in env.launched:  # the browser the launch step started, by its id
        launched.proc.kill()
    for launched in env.launched:
        launched.proc.wait(timeout=10)
    import time

    deadline = time.monotonic() + 15
    while tabs(env) is not None and time.monotonic() < deadline:
        time.sleep(0.3)
    assert tabs(env) is None
    got = get("info_from_website", env, url=f"{site}/scholar.html", infos=SCHOLAR_INFOS[:2], backups=BACKUPS)
    assert got == ["Yann LeCun", "345074"]
    path = get("pdf_from_url", env, path=f"{site}/article.html", dest="again.pdf")
    assert get_metric("compare_pdfs")(path, live) == 1.0
