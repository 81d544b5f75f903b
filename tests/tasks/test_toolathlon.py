"""The Toolathlon task-folder loader, its dispatch in load_task_file/find_task_files, and the shipped tasks."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.core.errors import EvalError, TaskFileError
from mcpworld.core.task import Task
from mcpworld.core.task_parts import ScriptGrader
from mcpworld.env.context import build_golden
from mcpworld.evaluation.grader import minimal_trajectory, run_grader
from mcpworld.evaluation.standalone import grade
from mcpworld.mcp.install import load_settings
from mcpworld.mcp.spec import parse_servers
from mcpworld.tasks import toolathlon
from mcpworld.tasks.load import find_task_files
from mcpworld.tasks.load import load_task_file as load_with
from mcpworld.tasks.settings import LoaderSettings, ToolathlonSettings

SHIPPED = Path(__file__).resolve().parents[2] / "mcpworld" / "data" / "tasks" / "toolathlon"
CHECKOUT = Path(__file__).resolve().parents[1] / "data" / "toolathlon_fixture"  # a miniature upstream checkout
FINALPOOL = CHECKOUT / "tasks" / "finalpool"


def load_task_file(path: Path, **toolathlon_settings) -> Task:
    """A task loaded with the default toolathlon.* settings (graded by this interpreter), changed by the
    keywords given."""
    settings = ToolathlonSettings(**{"python": sys.executable, **toolathlon_settings})
    return load_with(path, settings=LoaderSettings(toolathlon=settings))


TIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [A-Z][a-z]+day$")
PROMPT = "Work in !!<<<<||||workspace_dir||||>>>>!! only.\nNow: !!<<<<||||time||||>>>>!!\n"


def make_task(
    root: Path,
    name: str = "demo",
    *,
    config: dict | None = None,
    preprocess: bool = False,
    initial: bool = True,
    solution: list | None = None,
    task_md: bool = True,
    grader: bool = True,
) -> Path:
    folder = root / name
    (folder / "docs").mkdir(parents=True)
    config = (
        {"needed_mcp_servers": ["filesystem"], "needed_local_tools": ["claim_done"], "meta": {}} if config is None else config
    )
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
    path = make_task(
        tmp_path,
        "sort-inbox",
        config={"needed_mcp_servers": ["filesystem", "git"], "needed_local_tools": ["claim_done"], "meta": {"x": 1}},
    )
    task = load_task_file(path)
    folder = path.parent
    assert task.id == "toolathlon/sort-inbox"
    assert task.app == "toolathlon" and task.format == "toolathlon"
    assert task.instruction == "Sort the files in the inbox."
    assert task.mcp_servers == ["filesystem", "git"]
    assert task.workspace == "~/workspace"
    assert task.skip_reason is None and task.max_steps is None
    assert task.grader.script == folder / "evaluation" / "main.py"
    assert task.grader.groundtruth == str(folder / "groundtruth_workspace")
    assert task.source == path and task.dir == folder


def test_the_system_prompt_gets_the_workspace_placeholder_and_the_launch_time(tmp_path: Path):
    task = load_task_file(make_task(tmp_path))
    when = task.grader.launch_time
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
    assert [step.raw for step in task.setup] == [{"execute": {"command": ["mkdir", "-p", "~/workspace"]}}]


def test_with_preprocess_it_runs_with_the_workspace_and_the_same_launch_time(tmp_path: Path):
    path = make_task(tmp_path, preprocess=True)
    task = load_task_file(path)
    (entry,) = task.context
    assert entry.extract_archives is False  # the preprocess script owns the archives
    mkdir, run = (step.raw for step in task.setup)
    assert mkdir == {"execute": {"command": ["mkdir", "-p", "~/workspace"]}}
    command = shlex.split(run["execute"]["command"])  # outside a checkout: a module of the task's parent folder
    assert run["execute"]["shell"] is True
    assert command[:3] == ["cd", str(tmp_path.resolve()), "&&"]
    assert command[5:] == [
        "-m",
        "demo.preprocess.main",
        "--agent_workspace",
        "~/workspace",
        "--launch_time",
        task.grader.launch_time,
    ]


def test_no_initial_workspace_means_no_context(tmp_path: Path):
    task = load_task_file(make_task(tmp_path, initial=False, preprocess=True))
    assert task.context == [] and len(task.setup) == 2


def test_local_tools_keep_provided_ones_and_drop_the_context_managers(tmp_path: Path):
    task = load_task_file(
        make_task(
            tmp_path,
            config={
                "needed_mcp_servers": [],
                "needed_local_tools": ["claim_done", "manage_context", "python_execute", "history", "sleep"],
            },
        )
    )
    assert task.local_tools == ["claim_done", "python_execute", "sleep"]
    assert task.skip_reason is None


@pytest.mark.parametrize("tool", ["web_search", "ai_webpage_summary", "teleport"])
def test_a_local_tool_we_lack_skips_the_task(tmp_path: Path, tool: str):
    task = load_task_file(make_task(tmp_path, config={"needed_mcp_servers": [], "needed_local_tools": ["claim_done", tool]}))
    assert task.skip_reason and tool in task.skip_reason
    assert tool not in task.local_tools


def test_max_turns_becomes_max_steps(tmp_path: Path):
    task = load_task_file(make_task(tmp_path, config={"needed_mcp_servers": ["filesystem"], "max_turns": 40}))
    assert task.max_steps == 40


def test_solution_calls_become_the_mcp_and_hybrid_solutions(tmp_path: Path):
    calls = [{"tool": "filesystem-list_directory", "args": {"path": "{workspace}"}}, {"local-claim_done": {}}]
    task = load_task_file(make_task(tmp_path, solution=calls))
    expected = [{"tool": "filesystem-list_directory", "args": {"path": "{workspace}"}}, {"tool": "local-claim_done", "args": {}}]
    assert task.solution.as_written() == {"mcp": expected, "hybrid": expected}


def test_no_solution_file_means_no_solution(tmp_path: Path):
    assert not load_task_file(make_task(tmp_path)).solution


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

SHIPPED_NAMES = ["arrange-files", "docx-report", "fix-bib-citations", "git-tag-release", "redact-contacts", "sales-long-format"]


def test_all_shipped_tasks_are_found():
    assert [p.parent.name for p in find_task_files(SHIPPED)] == SHIPPED_NAMES


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_a_shipped_task_loads_and_runs_here(name: str, tmp_path: Path):
    task = load_task_file(SHIPPED / name / "task_config.json")
    assert task.id == f"toolathlon/{name}" and task.skip_reason is None
    assert task.instruction and "{workspace}" in task.system_prompt and "!!<<<<" not in task.system_prompt
    catalog = load_settings()["catalog"]
    parse_servers(task.mcp_servers, catalog, str(task.source))  # every needed server is in the catalog
    assert task.solution.as_written()["mcp"] and task.solution.as_written()["mcp"][-1]["tool"] == "local-claim_done"
    assert task.solution.as_written()["hybrid"] == task.solution.as_written()["mcp"]
    assert Path(task.grader.script).is_file()


@pytest.mark.parametrize("name", SHIPPED_NAMES)
def test_no_grader_groundtruth_or_preprocess_reaches_the_agent(name: str, tmp_path: Path):
    folder = SHIPPED / name
    task = load_task_file(folder / "task_config.json")
    hidden = [
        folder / "evaluation",
        folder / "groundtruth_workspace",
        folder / "preprocess",
        folder / "solution.json",
        folder / "task_config.json",
    ]
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


# --- run as upstream runs them: a checkout's graders as modules, eval_error, claim_done, cn ---------


def workspace_with(tmp_path: Path, answer: str | None) -> Path:
    ws = tmp_path / "home" / "workspace"
    ws.mkdir(parents=True)
    if answer is not None:
        (ws / "answer.txt").write_text(answer, encoding="utf-8")
    return ws


def test_inside_a_checkout_the_grader_is_a_module_of_the_root(tmp_path: Path):
    task = load_task_file(FINALPOOL / "relative-grader")  # a folder path is a task path
    assert task.id == "toolathlon/relative-grader" and task.source == FINALPOOL / "relative-grader" / "task_config.json"
    assert task.grader.root == CHECKOUT.resolve()
    assert task.grader.module == "tasks.finalpool.relative-grader.evaluation.main"
    assert task.grader.python == sys.executable and task.grader.claim_done is True


def test_the_grader_with_relative_imports_and_utils_passes_and_fails_on_the_workspace(tmp_path: Path):
    task = load_task_file(FINALPOOL / "relative-grader" / "task_config.json")
    traj = minimal_trajectory(tmp_path / "traj_log.json")
    score, outcome = run_grader(task.grader, workspace_with(tmp_path / "a", " forty  two\n"), traj)
    assert score == 1.0 and outcome.reason.startswith("pass: ")
    score, outcome = run_grader(task.grader, workspace_with(tmp_path / "b", "41"), traj)
    assert score == 0.0 and "fail: answer '41'" in outcome.reason  # it ran and said no: a failure
    score, outcome = run_grader(task.grader, workspace_with(tmp_path / "c", None), traj)
    assert score == 0.0 and "answer.txt is missing" in outcome.reason


def test_the_preprocess_script_runs_as_a_module_from_the_root(tmp_path: Path):
    task = load_task_file(FINALPOOL / "relative-grader")
    home = tmp_path / "home"
    (home / "workspace").mkdir(parents=True)
    step = task.setup[-1].raw["execute"]
    assert step["shell"] is True
    subprocess.run(["bash", "-c", step["command"]], env={**os.environ, "HOME": str(home)}, check=True)
    assert (home / "workspace" / "prepared.txt").read_text() == "".join(task.grader.launch_time.split()).lower()


def test_standalone_grading_writes_a_trajectory_for_the_grader(tmp_path: Path):
    task = load_task_file(FINALPOOL / "relative-grader")
    workspace_with(tmp_path, "Forty Two")
    verdict = grade(task, tmp_path / "home")
    assert verdict["status"] == "success" and verdict["score"] == 1.0


def test_a_grader_that_cannot_import_is_an_eval_error_not_a_failure(tmp_path: Path):
    task = load_task_file(FINALPOOL / "crashing-grader")
    with pytest.raises(EvalError, match=r"could not import its modules.*a_module_no_environment_has"):
        run_grader(task.grader, workspace_with(tmp_path, "x"), None)
    verdict = grade(task, tmp_path / "home")
    assert verdict["status"] == "eval_error" and verdict["success"] is None
    assert "a_module_no_environment_has" in verdict["error"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="the grader is valid on 3.12")
def test_a_312_only_grader_on_an_older_interpreter_names_it_and_the_fix(tmp_path: Path):
    task = load_task_file(FINALPOOL / "py312-grader")
    with pytest.raises(EvalError) as err:
        run_grader(task.grader, workspace_with(tmp_path, "x"), None)
    text = str(err.value)
    assert sys.executable in text and f"(Python {sys.version_info[0]}.{sys.version_info[1]})" in text
    assert "toolathlon.python=" in text and "SyntaxError" in text


def test_a_traceback_over_the_agents_output_is_a_failure(tmp_path: Path):
    task = load_task_file(FINALPOOL / "relative-grader")
    traj = tmp_path / "traj_log.json"
    traj.write_text('{"status": "success"}')  # the grader's assert on the log fails: it ran and said no
    score, outcome = run_grader(task.grader, workspace_with(tmp_path, "Forty Two"), traj)
    assert score == 0.0 and "AssertionError" in outcome.reason


def test_a_grader_past_its_time_is_an_eval_error(tmp_path: Path):
    script = tmp_path / "t" / "evaluation" / "main.py"
    script.parent.mkdir(parents=True)
    script.write_text("import time; time.sleep(30)\n")
    grader = ScriptGrader(script, module="t.evaluation.main", root=tmp_path, python=sys.executable)
    with pytest.raises(EvalError, match="did not finish within 1s"):
        run_grader(grader, workspace_with(tmp_path, None), None, timeout_s=1)


def test_an_agent_that_did_not_claim_done_fails_without_grading(tmp_path: Path):
    task = load_task_file(FINALPOOL / "relative-grader")
    traj = minimal_trajectory(tmp_path / "traj_log.json", status="max_turns_reached")
    score, outcome = run_grader(task.grader, workspace_with(tmp_path, "Forty Two"), traj)
    assert score == 0.0 and "claimed done" in outcome.reason
    task = load_task_file(FINALPOOL / "relative-grader", claim_done=False)
    assert run_grader(task.grader, tmp_path / "home" / "workspace", traj)[0] == 1.0


def test_lang_cn_picks_the_cn_variants(tmp_path: Path):
    task = load_task_file(FINALPOOL / "relative-grader", lang="cn")
    folder = FINALPOOL / "relative-grader"
    assert task.id == "toolathlon/relative-grader_cn" and task.instruction == "用中文写答案。"
    assert task.system_prompt == "只在 {workspace} 工作。"
    assert task.context[0].src == folder / "initial_workspace_cn"
    assert task.grader.groundtruth == str(folder / "groundtruth_workspace_cn")
    assert task.grader.module == "tasks.finalpool.relative-grader.evaluation.main_cn"
    traj = minimal_trajectory(tmp_path / "traj_log.json")
    assert run_grader(task.grader, workspace_with(tmp_path, "四十二"), traj)[0] == 1.0
    with pytest.raises(TaskFileError, match=r"toolathlon\.lang=fr"):
        ToolathlonSettings(lang="fr")


def test_a_root_that_is_not_a_checkout_is_refused(tmp_path: Path):
    with pytest.raises(TaskFileError, match="not a Toolathlon checkout"):
        load_task_file(FINALPOOL / "relative-grader", root=tmp_path)


def test_without_a_312_the_harness_interpreter_is_used_with_one_warning(monkeypatch, caplog):
    monkeypatch.setattr(toolathlon, "PREPARED", Path("/nonexistent"))
    monkeypatch.setattr(toolathlon.shutil, "which", lambda name: None)
    monkeypatch.setattr(toolathlon, "_warned", set())
    assert toolathlon.grader_python(ToolathlonSettings()) == sys.executable
    assert toolathlon.grader_python(ToolathlonSettings()) == sys.executable
    assert len([r for r in caplog.records if "toolathlon.python" in r.getMessage()]) == 1


def test_a_folder_without_a_task_file_is_named(tmp_path: Path):
    with pytest.raises(TaskFileError, match="a folder without a task file"):
        load_task_file(tmp_path)
