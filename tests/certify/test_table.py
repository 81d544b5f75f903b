"""The per-suite, per-app table of the committed certificates, and the README's copy of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpworld.certify import table
from mcpworld.certify.certificate import COLUMNS
from mcpworld.core.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
HEAD = ",".join(COLUMNS) + "\n"


def write(path: Path, *rows: str) -> Path:
    path.write_text(HEAD + "".join(r + ",2,2,0,2,0,2,generic,0,0.0,1.0,1.0,\n" for r in rows))
    return path


def test_suites_are_named_by_file_and_a_later_part_replaces_a_task(tmp_path):
    first = write(tmp_path / "osworld.csv", "os/a,os,certified", "os/b,os,excluded", "chrome/c,chrome,flaky")
    again = write(tmp_path / "osworld_rerun.csv", "chrome/c,chrome,certified")
    other = write(tmp_path / "pccanary_obs.csv", "obs/t1,obs,lenient")
    counted = table.tally([first, again, other])
    assert counted[("osworld", "os")] == {"certified": 1, "excluded": 1}
    assert counted[("osworld", "chrome")] == {"certified": 1}
    assert counted[("pccanary", "obs")] == {"lenient": 1}
    text = table.to_markdown([first, again, other])
    assert "| osworld | chrome | 1 | 1 | 0 | 0 | 0 | 0 |" in text
    assert "| **osworld** | **all** | 3 | 2 | 0 | 0 | 0 | 1 |" in text
    assert "| pccanary | obs | 1 | 0 | 0 | 0 | 1 | 0 |" in text
    assert "**pccanary**" not in text  # one app: no total line


def test_a_file_that_is_not_a_certificate_is_named(tmp_path):
    bad = tmp_path / "osworld.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(UserError, match=r"osworld\.csv: not a certificate"):
        table.tally([bad])
    assert table.main([str(tmp_path / "missing.csv")]) == 2


def test_the_readme_shows_the_committed_certificates():
    readme = (ROOT / "README.md").read_text()
    block = table.BLOCK.search(readme)
    assert block, "README.md lost its <!-- certificates-table --> block"
    assert block.group(2) == table.to_markdown(sorted(table.CERTIFICATES.glob("*.csv"))), (
        "README's certificate table is stale: python -m mcpworld.certify.table --readme README.md"
    )


def test_the_readme_block_is_rewritten_in_place(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- certificates-table -->\nold\n<!-- /certificates-table -->\nafter\n")
    assert table.main(["--readme", str(readme), str(write(tmp_path / "osworld.csv", "os/a,os,certified"))]) == 0
    text = readme.read_text()
    assert text.startswith("before\n<!-- certificates-table -->\n| suite |")
    assert text.endswith("<!-- /certificates-table -->\nafter\n")
    assert "old" not in text and "| osworld | os | 1 | 1 |" in text
    (tmp_path / "other.md").write_text("no block")
    assert table.main(["--readme", str(tmp_path / "other.md")]) == 2
