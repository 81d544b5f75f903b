"""How many of a suite's tasks run here, counted through ``tasks.root`` as a run chooses them (env=local,
the default). The loaders' decisions (Windows, Google Drive, GNOME Shell, systemd) do not depend on the
machine; what this machine lacks is skipped with its fix.

Two small suites of our own, shaped like OSWorld's and Windows Agent Arena's (tests/data/suite_census/),
test that everywhere. Where the real suites sit beside this checkout (../shared/reference/suites),
`pytest -s tests/tasks/test_suite_census.py` also prints their counts and skip causes and asserts the
loaders' counts on them; elsewhere that check skips, saying so."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from mcpworld.apps.programs import Program
from mcpworld.core.errors import UserError
from mcpworld.run import job
from tests.helpers.config import make

CENSUS = Path(__file__).resolve().parents[1] / "data" / "suite_census"
SUITES = Path(__file__).resolve().parents[3] / "shared" / "reference" / "suites"
OSWORLD = SUITES / "osworld" / "evaluation_examples" / "examples"
WAA = SUITES / "waa" / "evaluation_examples_windows" / "examples"
# per suite of tests/data/suite_census: what its loader skips (the reason's start), which tasks need an
# app, and the app a machine lacks in the test below
LOADER_SKIPS = {
    "osworld": {
        "drive-upload": "needs a Google Drive account",
        "dock-favorites": "needs GNOME Shell",
        "set-timezone": "needs systemd as the init system",
    },
    "waa": {
        "archive-docs-WOS": "needs Windows: it works file_explorer, a Windows program",
        "close-chrome-WOS": "needs Windows: its postconfig runs taskkill, a Windows command",
        "font-size-WOS": "needs Windows: its evaluator names a Windows path or shell",
    },
}
LOADABLE = {"osworld": {"count-lines", "loop-playlist"}, "waa": {"sum-column-WOS", "mute-WOS"}}
LACKING = {"osworld": ("vlc", {"loop-playlist"}), "waa": ("libreoffice_calc", {"sum-column-WOS"})}


def census(root: Path, monkeypatch: pytest.MonkeyPatch) -> job.Selection:
    """The job's own selection, without the network (files by URL, web sites); where none of the tasks
    runs (a machine without the apps), the skips the job printed before it stopped."""
    monkeypatch.setattr(job, "fetch_task_files", lambda *_: None)
    monkeypatch.setattr(job, "skip_unreachable", lambda *_: None)
    printed: list[tuple[str, str, str]] = []
    monkeypatch.setattr(job, "print_skipped", printed.extend)
    try:
        return job.select_tasks(make(f"tasks.root={root}", "provider=openai_compat"))
    except UserError:
        return job.Selection([], printed)


def causes(selection: job.Selection) -> Counter:
    return Counter(re.sub(r" \(.*", "", reason)[:110] for _, _, reason in selection.skipped)


@pytest.mark.parametrize("suite", ["osworld", "waa"])
def test_the_loaders_skip_what_no_machine_runs_and_the_rest_is_chosen(suite, monkeypatch, every_program_installed):
    selection = census(CENSUS / suite, monkeypatch)
    skipped = {task_id: reason for task_id, _, reason in selection.skipped}
    assert set(skipped) == set(LOADER_SKIPS[suite])
    for task_id, start in LOADER_SKIPS[suite].items():
        assert skipped[task_id].startswith(start), skipped[task_id]
    assert {t.id for t in selection.tasks} == LOADABLE[suite]


@pytest.mark.parametrize("suite", ["osworld", "waa"])
def test_an_app_this_machine_lacks_skips_its_tasks_naming_the_install(suite, monkeypatch):
    app, needing = LACKING[suite]
    monkeypatch.setattr(Program, "installed", lambda self: self.app != app)
    selection = census(CENSUS / suite, monkeypatch)
    machine = {task_id: reason for task_id, _, reason in selection.skipped if task_id not in LOADER_SKIPS[suite]}
    assert set(machine) == needing
    assert all("is not installed: run `apt-get install -y" in reason for reason in machine.values()), machine
    # the loaders' count is the machine's runnable tasks plus what it lacks, whatever it has
    assert {t.id for t in selection.tasks} | set(machine) == LOADABLE[suite]


@pytest.mark.parametrize("root, loadable", [(OSWORLD, 359), (WAA, 82)], ids=["osworld", "waa"])
def test_the_real_suites_census(root: Path, loadable: int, monkeypatch, capsys):
    if not root.is_dir():
        pytest.skip(f"the real suites are not at {root} (tests/data/suite_census stands in for them above)")
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
