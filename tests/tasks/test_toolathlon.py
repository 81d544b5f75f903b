"""The Toolathlon task-folder loader, its dispatch in load_task_file/find_task_files, and the shipped tasks."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from mcpworld.env.context import build_golden
from mcpworld.errors import TaskFileError
from mcpworld.mcp.install import load_settings
from mcpworld.mcp.spec import parse_servers
from mcpworld.tasks.load import find_task_files, load_task_file

SHIPPED = Path(__file__).resolve().parents[2] / "tasks" / "toolathlon"
TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [A-Z][a-z]+day$")
PROMPT = ("Work in !!<<<<||||workspace_dir||||>>>>!! only.\n"
          "Now: !!<<<<||||time||||>>>>!!\n")


def make_task(root: Path, name: str = "demo", *, config: dict | None = None, preprocess: bool = False,
              initial: bool = True, solution: list | None = None, task_md: bool = True,
              grader: bool = True) -> Path:
    folder = root / name
    (folder / "docs").mkdir(parents=True)
    config = {"needed_mcp_servers": ["filesystem"], "needed_local_tools": ["claim_done"], "meta": {}} \
        if config is None else config
    (folder / "task_config.json").write_text(json.dumps(config))
    if task_md:
        (folder / "docs" / "task.md").write_text("\nSort the files in the inbox.\n")
    (folder / "docs" / "agent_system_prompt.md").write_text(PROMPT)
    if grader:
        (folder / "evaluation").mkdir()
        (folder / "evaluation" / "main.py").write_text("import sys; sys.exit(0)\n")
    (folder / "groundtruth_workspace").mkdir()
    (folder / "groundtruth_workspace" / "expected.json").write_text("{}")
    if preprocess:
        (folder / "preprocess").mkdir()
        (folder / "preprocess" / "main.py").write_text("print('prep')\n")
    if initial:
        (folder / "initial_workspace").mkdir()
        (folder / "initial_workspace" / "notes.txt").write_text("hi")
    if solution is not None:
        (folder / "solution.json").write_text(json.dumps({"mcp": solution}))
    return folder / "task_config.json"


def test_a_task_folder_maps_onto_the_task_model(tmp_path: Path):
    path = make_task(tmp_path, "sort-inbox", config={
        "needed_mcp_servers": ["filesystem", "git"], "needed_local_tools": ["claim_done"], "meta": {"x": 1}})
    task = load_task_file(path)
    folder = path.parent
    assert task.id == "toolathlon/sort-inbox"
    assert task.app == "toolathlon" and task.format == "toolathlon"
    assert task.instruction == "Sort the files in the inbox."
    assert task.mcp_servers == ["filesystem", "git"]
    assert task.workspace == "~/workspace"
    assert task.skip_reason is None and task.max_steps is None
    assert task.grader["script"] == str(folder / "evaluation" / "main.py")
    assert task.grader["groundtruth"] == str(folder / "groundtruth_workspace")
    assert task.source == path and task.dir == folder


def test_the_system_prompt_gets_the_workspace_placeholder_and_the_launch_time(tmp_path: Path):
    task = load_task_file(make_task(tmp_path))
    when = task.grader["launch_time"]
    assert TIME.match(when)
    assert task.params["launch_time"] == when
    assert task.system_prompt == f"Work in {{workspace}} only.\nNow: {when}"
    assert "!!<<<<" not in task.system_prompt


def test_without_preprocess_the_initial_workspace_is_copied_and_unpacked(tmp_path: Path):
    path = make_task(tmp_path)
    task = load_task_file(path)
    (entry,) = task.context
    assert entry.src == path.parent / "initial_workspace" and entry.dest == "~/workspace"
    assert entry.extract_archives is True
    assert task.setup == [{"execute": {"command": ["mkdir", "-p", "~/workspace"]}}]


def test_with_preprocess_it_runs_with_the_workspace_and_the_same_launch_time(tmp_path: Path):
    path = make_task(tmp_path, preprocess=True)
    task = load_task_file(path)
    (entry,) = task.context
    assert entry.extract_archives is False  # the preprocess script owns the archives
    mkdir, run = task.setup
    assert mkdir == {"execute": {"command": ["mkdir", "-p", "~/workspace"]}}
    command = run["execute"]["command"]
    assert command[:2] == [sys.executable, str(path.parent / "preprocess" / "main.py")]
    assert command[2:] == ["--agent_workspace", "~/workspace", "--launch_time", task.grader["launch_time"]]


def test_no_initial_workspace_means_no_context(tmp_path: Path):
    task = load_task_file(make_task(tmp_path, initial=False, preprocess=True))
    assert task.context == [] and len(task.setup) == 2


def test_local_tools_keep_provided_ones_and_drop_the_context_managers(tmp_path: Path):
    task = load_task_file(make_task(tmp_path, config={
        "needed_mcp_servers": [], "needed_local_tools": ["claim_done", "manage_context", "python_execute",
                                                         "history", "sleep"]}))
    assert task.local_tools == ["claim_done", "python_execute", "sleep"]
    assert task.skip_reason is None


@pytest.mark.parametrize("tool", ["web_search", "ai_webpage_summary", "teleport"])
def test_a_local_tool_we_lack_skips_the_task(tmp_path: Path, tool: str):
    task = load_task_file(make_task(tmp_path, config={"needed_mcp_servers": [],
                                                      "needed_local_tools": ["claim_done", tool]}))
    assert task.skip_reason and tool in task.skip_reason
    assert tool not in task.local_tools


def test_max_turns_becomes_max_steps(tmp_path: Path):
    task = load_task_file(make_task(tmp_path, config={"needed_mcp_servers": ["filesystem"], "max_turns": 40}))
    assert task.max_steps == 40


def test_solution_calls_become_the_mcp_and_hybrid_solutions(tmp_path: Path):
    calls = [{"tool": "filesystem-list_directory", "args": {"path": "{workspace}"}},
             {"local-claim_done": {}}]
    task = load_task_file(make_task(tmp_path, solution=calls))
    expected = [{"tool": "filesystem-list_directory", "args": {"path": "{workspace}"}},
                {"tool": "local-claim_done", "args": {}}]
    assert task.solution == {"mcp": expected, "hybrid": expected}


def test_no_solution_file_means_no_solution(tmp_path: Path):
    assert load_task_file(make_task(tmp_path)).solution == {}


@pytest.mark.parametrize("missing, name", [("task_md", "docs/task.md"), ("grader", "evaluation/main.py")])
def test_a_missing_required_file_is_named(tmp_path: Path, missing: str, name: str):
    path = make_task(tmp_path, **{missing: False})
    with pytest.raises(TaskFileError) as err:
        load_task_file(path)
    assert str(path) in str(err.value) and name in str(err.value)


def test_a_config_that_is_not_named_task_config_is_not_a_task(tmp_path: Path):
    path = make_task(tmp_path)
    other = path.with_name("other.json")
    other.write_text(path.read_text())
    with pytest.raises(TaskFileError, match="not a task file"):
        load_task_file(other)


def test_find_task_files_finds_task_config_only(tmp_path: Path):
    path = make_task(tmp_path)
    folder = path.parent
    (folder / "initial_workspace" / "data.json").write_text(json.dumps({"needed_mcp_servers": ["x"]}))
    (folder / "meta.json").write_text(json.dumps({"needed_mcp_servers": ["x"]}))
    (folder / "initial_workspace" / "task_config.json").write_text(json.dumps({"unrelated": True}))
    assert find_task_files(tmp_path) == [path]


# --- the shipped tasks -------------------------------------------------------------------------------

SHIPPED_NAMES = ["arrange-files", "docx-report", "fix-bib-citations", "git-tag-release", "redact-contacts",
                 "sales-long-format"]


def test_all_shipped_tasks_are_found():
    assert [p.parent.name for p in find_task_files(SHIPPED)] == SHIPPED_NAMES


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_a_shipped_task_loads_and_runs_here(name: str, tmp_path: Path):
    task = load_task_file(SHIPPED / name / "task_config.json")
    assert task.id == f"toolathlon/{name}" and task.skip_reason is None
    assert task.instruction and "{workspace}" in task.system_prompt and "!!<<<<" not in task.system_prompt
    catalog = load_settings()["catalog"]
    parse_servers(task.mcp_servers, catalog, str(task.source))  # every needed server is in the catalog
    assert task.solution["mcp"] and task.solution["mcp"][-1]["tool"] == "local-claim_done"
    assert task.solution["hybrid"] == task.solution["mcp"]
    assert Path(task.grader["script"]).is_file()


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_no_grader_groundtruth_or_preprocess_reaches_the_agent(name: str, tmp_path: Path):
    folder = SHIPPED / name
    task = load_task_file(folder / "task_config.json")
    hidden = [folder / "evaluation", folder / "groundtruth_workspace", folder / "preprocess",
              folder / "solution.json", folder / "task_config.json"]
    for entry in task.context:
        src = entry.src.resolve()
        for path in hidden:
            path = path.resolve()
            assert not path.is_relative_to(src) and not src.is_relative_to(path), (entry.src, path)
    # the workspace as the agent gets it (archives unpacked) holds no copy of the grader or preprocess code
    # (ground-truth data may legitimately equal an input, e.g. docx-report's table, so only code is compared)
    golden = build_golden(task.context, tmp_path / "golden")
    code = [folder / "evaluation", folder / "preprocess"]
    scripts = {p.read_bytes() for d in code for p in d.rglob("*") if p.is_file()}
    assert scripts, "the task has a grader"
    assert [p for p in golden.rglob("*") if p.is_file() and p.read_bytes() in scripts] == []
