"""compare_htmls / compare_epub on HTML and EPUB files written into tmp_path."""

import zipfile
from pathlib import Path

from mcpworld.evaluation.metrics.markup import compare_epub, compare_htmls
from mcpworld.evaluation.registry import METRICS

PAGE = """<!DOCTYPE html>
<html><head><meta http-equiv="content-type" content="text/html; charset=utf-8"/><title>survey</title></head>
<body><!-- exported -->
<table cellspacing="0" border="0">
  <tr><td height="17" align="left">Year</td><td align="right" sdval="2021" sdnum="{sdnum}">2021</td></tr>
  {extra}
</table>
</body></html>"""


def page(tmp_path: Path, name: str, sdnum="1033;", extra="<tr><td>Total</td><td>42</td></tr>", text=None) -> str:
    path = tmp_path / name
    path.write_text(text if text is not None else PAGE.format(sdnum=sdnum, extra=extra), encoding="utf-8")
    return str(path)


def test_registered():
    assert METRICS["compare_htmls"] is compare_htmls
    assert METRICS["compare_epub"] is compare_epub


def test_compare_htmls(tmp_path):
    gold = page(tmp_path, "gold.html")
    assert compare_htmls(page(tmp_path, "same.html"), gold) == 1.0
    german = page(tmp_path, "de.html", sdnum="1031;")
    assert compare_htmls(german, gold) == 0.0
    assert compare_htmls(german, gold, ignore_sdnum=True) == 1.0
    # the gold's last row missing: OSWorld passed it (it stopped at the shorter page)
    assert compare_htmls(page(tmp_path, "short.html", extra=""), gold) == 0.0
    assert compare_htmls(page(tmp_path, "value.html", extra="<tr><td>Total</td><td>43</td></tr>"), gold) == 0.0
    bordered = PAGE.format(sdnum="1033;", extra="<tr><td>Total</td><td>42</td></tr>").replace('border="0"', 'border="1"')
    attribute = page(tmp_path, "attr.html", text=bordered)
    assert compare_htmls(attribute, gold, ignore_sdnum=True) == 0.0
    assert compare_htmls(page(tmp_path, "empty.html", text=""), gold) == 0.0
    assert compare_htmls(None, gold) == 0.0
    assert compare_htmls(str(tmp_path / "missing.html"), gold) == 0.0


def epub(tmp_path: Path, name: str, chapters: dict[str, str], identifier="urn:uuid:1", nav_id="np-1", root="", raw=False) -> str:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", "<container/>")
        z.writestr(
            f"{root}content.opf",
            f'<package>\n<metadata>\n<dc:title>Pass Through</dc:title>\n<dc:identifier id="id">{identifier}</dc:identifier>\n'
            "</metadata>\n</package>\n",
        )
        z.writestr(
            f"{root}toc.ncx",
            f'<ncx>\n<docTitle><text>Pass Through</text></docTitle>\n<navPoint id="{nav_id}">\n</ncx>\n',
        )
        for file_name, body in chapters.items():
            z.writestr(f"{root}{file_name}", body if raw else f"<html><body>\n{body}\n</body></html>")
    return str(path)


def test_compare_epub(tmp_path):
    chapters = {"ch1.html": "<h1>One</h1><p>It began.</p>", "ch2.html": "<h1>Two</h1><p>It ended.</p>"}
    gold = epub(tmp_path, "gold.epub", chapters)
    # a fresh conversion: new identifier and navigation ids, same book
    assert compare_epub(epub(tmp_path, "again.epub", chapters, identifier="urn:uuid:2", nav_id="np-9"), gold) == 1.0
    # the producer's line breaks inside a chapter do not count
    rewrapped = {name: body.replace("</h1>", "</h1>\n\n") for name, body in chapters.items()}
    assert compare_epub(epub(tmp_path, "wrapped.epub", rewrapped), gold) == 1.0
    changed = epub(tmp_path, "changed.epub", {**chapters, "ch2.html": "<h1>Two</h1><p>It went on.</p>"})
    assert 0.5 < compare_epub(changed, gold) < 1.0
    (tmp_path / "junk.epub").write_text("not a zip")
    assert compare_epub(str(tmp_path / "junk.epub"), gold) == 0.0
    assert compare_epub(None, gold) == 0.0
    assert compare_epub(gold, str(tmp_path / "nope.epub")) == 0.0


def test_compare_epub_divides_by_the_results_parts(tmp_path):
    """OSWorld's mean is over the result's parts: a gold chapter the result lacks is not counted,
    a result chapter the gold lacks counts 0."""
    chapters = {"ch1.html": "<p>It began.</p>", "ch2.html": "<p>It ended.</p>"}
    gold = epub(tmp_path, "gold.epub", chapters)
    fewer = epub(tmp_path, "fewer.epub", {"ch1.html": chapters["ch1.html"]})
    # sorted parts: ch1, (ch2,) content.opf, toc.ncx; paired in order, so only ch1 meets its match
    assert compare_epub(fewer, gold) == 1 / 3
    assert compare_epub(gold, fewer) == 1 / 4


def test_compare_epub_takes_osworlds_parts(tmp_path):
    """Only .html chapters, and toc.ncx / content.opf at the root, are compared (as OSWorld did)."""
    gold = epub(tmp_path, "gold.epub", {"ch1.xhtml": "<p>It began.</p>"})
    other = epub(tmp_path, "other.epub", {"ch1.xhtml": "<p>Something else entirely.</p>"})
    assert compare_epub(other, gold) == 1.0  # .xhtml chapters are not read
    assert compare_epub(epub(tmp_path, "nothing.epub", {}, root="OEBPS/"), gold) == 0.0  # no parts at all
    # an empty chapter file cannot be parsed: OSWorld failed on it
    assert compare_epub(epub(tmp_path, "empty.epub", {"ch1.html": ""}, raw=True), gold) == 0.0


def test_compare_epub_pairs_parts_in_name_order(tmp_path):
    gold = epub(tmp_path, "gold.epub", {"index_split_000.html": "<p>It began.</p>", "index_split_001.html": "<p>It ended.</p>"})
    same = epub(tmp_path, "same.epub", {"index_split_000.html": "<p>It began.</p>", "index_split_001.html": "<p>It ended.</p>"})
    assert compare_epub(same, gold) == 1.0
    # other names sort before content.opf: the parts pair up differently (as in OSWorld)
    renamed = epub(tmp_path, "renamed.epub", {"ch1.html": "<p>It began.</p>", "ch2.html": "<p>It ended.</p>"})
    assert compare_epub(renamed, gold) < 0.5


def test_compare_epub_reads_html_in_a_folder(tmp_path):
    """OSWorld failed on an .html file inside a folder (a bug: it never made the folder for its copy)."""
    chapters = {"ch1.html": "<p>It began.</p>"}
    book = epub(tmp_path, "oebps.epub", chapters, root="OEBPS/")
    assert compare_epub(book, epub(tmp_path, "gold.epub", chapters, root="OEBPS/")) == 1.0


def test_compare_htmls_reads_the_page_as_beautifulsoup_did(tmp_path):
    """OSWorld parsed with BeautifulSoup (lxml): whitespace between tags is one newline or space,
    class-like attributes are token lists, the doctype is a node, a page is read up to the end of
    the shorter one, and an empty page (OSWorld: 1) scores 0 here."""
    gold = page(tmp_path, "gold.html")
    base = PAGE.format(sdnum="1033;", extra="<tr><td>Total</td><td>42</td></tr>")
    assert compare_htmls(page(tmp_path, "indent.html", text=base.replace("\n  <tr>", "\n\t\t<tr>")), gold) == 1.0
    assert compare_htmls(page(tmp_path, "blank.html", text=base.replace("</table>\n", "</table>\n \n")), gold) == 1.0
    assert compare_htmls(page(tmp_path, "nodoctype.html", text=base.replace("<!DOCTYPE html>", "")), gold) == 0.0
    two = page(tmp_path, "two.html", text=base.replace("<table ", '<table class="a  b" '))
    assert compare_htmls(two, page(tmp_path, "one.html", text=base.replace("<table ", '<table class="a b" '))) == 1.0
    trailing = page(tmp_path, "trailing.html", text=base.replace("</body>", "<p></p><div class='x'></div></body>"))
    assert compare_htmls(trailing, gold) == 1.0  # no text added: the extra nodes are past the gold's end
    assert compare_htmls(page(tmp_path, "more.html", text=base.replace("</body>", "<p>more</p></body>")), gold) == 0.0
    script = page(tmp_path, "script.html", text=base.replace("</head>", "<script>var a;</script></head>"))
    assert compare_htmls(script, gold) == 0.0
    assert compare_htmls(page(tmp_path, "empty.html", text=""), gold) == 0.0
    assert compare_htmls(gold, page(tmp_path, "empty2.html", text="")) == 0.0
