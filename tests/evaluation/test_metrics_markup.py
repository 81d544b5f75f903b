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
    attribute = page(tmp_path, "attr.html", text=PAGE.format(sdnum="1033;", extra="<tr><td>Total</td><td>42</td></tr>").replace('border="0"', 'border="1"'))
    assert compare_htmls(attribute, gold, ignore_sdnum=True) == 0.0
    assert compare_htmls(page(tmp_path, "empty.html", text=""), gold) == 0.0
    assert compare_htmls(None, gold) == 0.0
    assert compare_htmls(str(tmp_path / "missing.html"), gold) == 0.0


def epub(tmp_path: Path, name: str, chapters: dict[str, str], identifier="urn:uuid:1", nav_id="np-1", root="") -> str:
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
            z.writestr(f"{root}{file_name}", f"<html><body>\n{body}\n</body></html>")
    return str(path)


def test_compare_epub(tmp_path):
    chapters = {"ch1.xhtml": "<h1>One</h1><p>It began.</p>", "ch2.xhtml": "<h1>Two</h1><p>It ended.</p>"}
    gold = epub(tmp_path, "gold.epub", chapters)
    # a fresh conversion: new identifier and navigation ids, same book
    assert compare_epub(epub(tmp_path, "again.epub", chapters, identifier="urn:uuid:2", nav_id="np-9"), gold) == 1.0
    # the producer's line breaks inside a chapter do not count
    rewrapped = {name: body.replace("</h1>", "</h1>\n\n") for name, body in chapters.items()}
    assert compare_epub(epub(tmp_path, "wrapped.epub", rewrapped), gold) == 1.0
    changed = epub(tmp_path, "changed.epub", {**chapters, "ch2.xhtml": "<h1>Two</h1><p>It went on.</p>"})
    assert 0.5 < compare_epub(changed, gold) < 1.0
    # a chapter missing counts 0 for that part (OSWorld ignored gold parts the result lacked)
    missing = compare_epub(epub(tmp_path, "missing.epub", {"ch1.xhtml": chapters["ch1.xhtml"]}), gold)
    assert missing == 3 / 4
    # parts in a subfolder are found too
    assert compare_epub(epub(tmp_path, "oebps.epub", chapters, root="OEBPS/"), epub(tmp_path, "gold2.epub", chapters, root="OEBPS/")) == 1.0
    (tmp_path / "junk.epub").write_text("not a zip")
    assert compare_epub(str(tmp_path / "junk.epub"), gold) == 0.0
    assert compare_epub(None, gold) == 0.0
    assert compare_epub(gold, str(tmp_path / "nope.epub")) == 0.0


def test_compare_epub_pairs_differently_named_parts_in_order(tmp_path):
    gold = epub(tmp_path, "gold.epub", {"index_split_000.html": "<p>It began.</p>", "index_split_001.html": "<p>It ended.</p>"})
    renamed = epub(tmp_path, "renamed.epub", {"ch1.html": "<p>It began.</p>", "ch2.html": "<p>It ended.</p>"})
    assert compare_epub(renamed, gold) == 1.0
