"""How many of the real suites' tasks run here, counted through ``tasks.root`` as a run chooses them
(env=local, the default): `pytest -s tests/tasks/test_suite_census.py` prints the counts and the skip
causes; the loader's counts (what no machine can change) are asserted."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from mcpworld.run import job
from tests.test_config import make

SUITES = Path(__file__).resolve().parents[3] / "shared" / "reference" / "suites"
OSWORLD = SUITES / "osworld" / "evaluation_examples" / "examples"
WAA = SUITES / "waa" / "evaluation_examples_windows" / "examples"


def census(root: Path, monkeypatch: pytest.MonkeyPatch) -> job.Selection:
    """The job's own selection, without the network (files by URL, web sites)."""
    monkeypatch.setattr(job, "fetch_task_files", lambda *_: None)
    monkeypatch.setattr(job, "skip_unreachable", lambda *_: None)
    return job.select_tasks(make(f"tasks.root={root}", "provider=openai_compat"))


def causes(selection: job.Selection) -> Counter:
    return Counter(re.sub(r" \(.*", "", reason)[:110] for _, _, reason in selection.skipped)


@pytest.mark.parametrize("root, loadable", [(OSWORLD, 359), (WAA, 82)], ids=["osworld", "waa"])
def test_suite_census(root: Path, loadable: int, monkeypatch, capsys):
    if not root.is_dir():
        pytest.skip(f"the reference suites are not at {root}")
    selection = census(root, monkeypatch)
    capsys.readouterr()
    total = len(selection.tasks) + len(selection.skipped)
    machine = [
        r for _, _, r in selection.skipped if "not installed" in r or "env=local never grants" in r or "make apps" in r
    ]  # what this machine lacks (a program) or refuses (root)
    installable = [r for r in machine if "would be root" not in r]
    with capsys.disabled():
        print(
            f"\n{root.parent.parent.name}: {len(selection.tasks)} of {total} runnable here (env=local); "
            f"{len(selection.tasks) + len(installable)} once this machine has every program named below"
        )
        for cause, count in causes(selection).most_common():
            print(f"  {count:3d}  {cause}")
    # what the loaders decide (Windows, Google Drive, GNOME Shell, systemd) does not depend on this machine
    assert len(selection.tasks) + len(machine) == loadable
    # every skip this machine causes names its fix
    assert all("apt-get install" in r or "make apps" in r or "would be root" in r or "apt-file search" in r for r in machine)
