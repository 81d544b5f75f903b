"""The native task.yaml loader, task selection, and the built-in task set."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from mcpworld.apps.catalog import CONF_APPS
from mcpworld.core.errors import TaskFileError, UserError
from mcpworld.core.paths import BUILTIN_TASKS
from mcpworld.core.task import Task
from mcpworld.evaluation.spec import validate_spec
from mcpworld.evaluation.templates import builtin_templates, expand_task
from mcpworld.tasks.native import load_task
from mcpworld.tasks.select import discover, select
from mcpworld.tasks.settings import as_patterns

VALID = """\
app: mousepad
instruction: >-
  Open notes.txt and type "{{ word }}" {{ times }} times.
params:
  word: hello
  times: 14
timeout: 90
max_steps: 7
tags: [edit, save]
context:
  - {from: context/notes.txt, to: ~/notes.txt}
setup:
  - launch: {command: [mousepad, "~/{{ file }}"], window: notes.txt}
  - {type: sleep, parameters: {seconds: 0.1}}
evaluator:
  func: exact_match
  result: {type: content_from_vm_file, path: "~/{{ file }}", file_type: txt}
  expected: {type: rule, rules: {expected: "{{ word }}", count: "{{ times }}"}}
solution:
  gui:
    - computer: {action: left_click, coordinate: ["{{ times }}", 20]}
    - {tool: computer, args: {action: type, text: "{{ word }}\\n"}}
    - done: {status: DONE}
  cli:
    - bash: {command: "echo {{ word }} >> ~/notes.txt"}
"""


def write_task(folder: Path, text: str, files: dict[str, str] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in (files or {"context/notes.txt": "hi\n"}).items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    path = folder / "task.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def valid_with(**replace: str) -> str:
    """VALID with some top-level lines replaced (key -> new line, '' deletes that line)."""
    out = []
    skipping = False
    for line in VALID.splitlines(keepends=True):
        top = line and not line[0].isspace() and ":" in line
        if top:
            key = line.split(":", 1)[0]
            skipping = key in replace
            if skipping and replace[key]:
                out.append(replace[key] + "\n")
            if skipping:
                continue
        elif skipping:
            continue
        out.append(line)
    return "".join(out)


VALID = VALID.replace("{{ file }}", "notes.txt")  # setup/evaluator use a literal file name


# --------------------------------------------------------------------------- loading


def test_valid_task_loads_every_field(tmp_path: Path) -> None:
    path = write_task(tmp_path / "mousepad" / "typing", VALID)
    task = load_task(path, tmp_path)

    assert task.id == "mousepad/typing"
    assert task.app == "mousepad"
    assert task.instruction == 'Open notes.txt and type "hello" 14 times.'
    assert task.params == {"word": "hello", "times": 14}
    assert task.timeout_s == 90.0 and task.max_steps == 7
    assert task.tags == ["edit", "save"]
    assert task.source == path and task.dir == path.parent

    assert len(task.context) == 1
    assert task.context[0].src == (path.parent / "context/notes.txt").resolve()
    assert task.context[0].dest == "~/notes.txt"

    assert task.setup[0].raw == {"launch": {"command": ["mousepad", "~/notes.txt"], "window": "notes.txt"}}
    assert task.setup[1].raw == {"type": "sleep", "parameters": {"seconds": 0.1}}


def test_solution_shorthand_and_full_forms(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "t", VALID))
    assert task.solution.as_written()["gui"] == [
        {"tool": "computer", "args": {"action": "left_click", "coordinate": [14, 20]}},
        {"tool": "computer", "args": {"action": "type", "text": "hello\n"}},
        {"tool": "done", "args": {"status": "DONE"}},
    ]
    assert task.solution.as_written()["cli"] == [{"tool": "bash", "args": {"command": "echo hello >> ~/notes.txt"}}]


def test_whole_param_keeps_its_type_but_text_around_it_makes_a_string(tmp_path: Path) -> None:
    task = load_task(write_task(tmp_path / "t", VALID))
    coordinate = task.solution.as_written()["gui"][0]["args"]["coordinate"]
    assert coordinate == [14, 20] and isinstance(coordinate[0], int)
    text = task.solution.as_written()["gui"][1]["args"]["text"]
    assert text == "hello\n" and isinstance(text, str)
    # the evaluator is rendered too, with the same rule
    assert task.evaluator.spec["expected"]["rules"] == {"expected": "hello", "count": 14}
    assert task.evaluator.spec["result"]["path"] == "~/notes.txt"


def test_list_solution_means_gui(tmp_path: Path) -> None:
    text = valid_with(solution="solution:\n  - computer: {action: key, text: ctrl+s}\n  - done: {status: DONE}")
    task = load_task(write_task(tmp_path / "t", text))
    assert task.solution.as_written() == {
        "gui": [{"tool": "computer", "args": {"action": "key", "text": "ctrl+s"}}, {"tool": "done", "args": {"status": "DONE"}}]
    }


def test_id_without_root_is_app_and_folder_and_explicit_id_wins(tmp_path: Path) -> None:
    assert load_task(write_task(tmp_path / "x" / "folder", VALID)).id == "mousepad/folder"
    task = load_task(write_task(tmp_path / "y", "id: custom/one\n" + VALID), tmp_path)
    assert task.id == "custom/one"


def test_no_solution_and_no_optional_keys(tmp_path: Path) -> None:
    text = "app: xterm\ninstruction: do it\nevaluator: {func: infeasible}\n"
    task = load_task(write_task(tmp_path / "t", text, files={}))
    assert task.solution.as_written() == {} and task.context == [] and task.setup == [] and task.params == {}
    assert task.timeout_s is None and task.max_steps is None
    assert task.infeasible


@pytest.mark.parametrize("key", ["instruction", "evaluator", "app"])
def test_missing_required_key_names_file_and_key(tmp_path: Path, key: str) -> None:
    path = write_task(tmp_path / "t", valid_with(**{key: ""}))
    with pytest.raises(TaskFileError) as info:
        load_task(path)
    assert str(path) in str(info.value)
    assert repr(key) in str(info.value) or f"'{key}'" in str(info.value)


def test_empty_required_value_is_missing(tmp_path: Path) -> None:
    path = write_task(tmp_path / "t", valid_with(app="app: ''"))
    with pytest.raises(TaskFileError, match="'app'"):
        load_task(path)


def test_unknown_top_level_key_is_named(tmp_path: Path) -> None:
    path = write_task(tmp_path / "t", VALID + "instructions_extra: oops\n")
    with pytest.raises(TaskFileError) as info:
        load_task(path)
    assert "instructions_extra" in str(info.value) and str(path) in str(info.value)


def test_not_a_mapping_or_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(TaskFileError, match="mapping"):
        load_task(write_task(tmp_path / "a", "- just\n- a list\n"))
    with pytest.raises(TaskFileError, match="YAML"):
        load_task(write_task(tmp_path / "b", "app: [unclosed\n"))


def test_instruction_with_undefined_param_is_named(tmp_path: Path) -> None:
    path = write_task(tmp_path / "t", valid_with(instruction='instruction: "Type {{ wrod }} now"'))
    with pytest.raises(TaskFileError) as info:
        load_task(path)
    assert "wrod" in str(info.value) and str(path) in str(info.value)


def test_undefined_param_in_solution_or_evaluator_is_an_error(tmp_path: Path) -> None:
    text = valid_with(solution='solution:\n  - bash: {command: "echo {{ missing_one }}"}')
    with pytest.raises(TaskFileError, match="missing_one"):
        load_task(write_task(tmp_path / "a", text))
    text = valid_with(evaluator='evaluator: {func: exact_match, result: {type: x, path: "{{ nope }}"}}')
    with pytest.raises(TaskFileError, match="nope"):
        load_task(write_task(tmp_path / "b", text))


def test_context_from_missing(tmp_path: Path) -> None:
    text = valid_with(context="context:\n  - {to: ~/notes.txt}")
    with pytest.raises(TaskFileError, match="from"):
        load_task(write_task(tmp_path / "a", text))
    text = valid_with(context="context:\n  - {from: context/absent.txt, to: ~/absent.txt}")
    with pytest.raises(TaskFileError, match=r"absent\.txt"):
        load_task(write_task(tmp_path / "b", text))


def test_context_from_escaping_the_task_folder(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    text = valid_with(context="context:\n  - {from: ../secret.txt, to: ~/secret.txt}")
    with pytest.raises(TaskFileError) as info:
        load_task(write_task(tmp_path / "t", text))
    assert "../secret.txt" in str(info.value) and "inside the task folder" in str(info.value)

    text = valid_with(context=f"context:\n  - {{from: {tmp_path / 'secret.txt'}, to: ~/secret.txt}}")
    with pytest.raises(TaskFileError, match="inside the task folder"):
        load_task(write_task(tmp_path / "u", text))


def test_bad_setup_step_type_is_named(tmp_path: Path) -> None:
    text = valid_with(setup="setup:\n  - explode: {command: [rm, -rf]}")
    with pytest.raises(TaskFileError) as info:
        load_task(write_task(tmp_path / "t", text))
    assert "explode" in str(info.value)


def test_setup_step_missing_required_parameter(tmp_path: Path) -> None:
    text = valid_with(setup="setup:\n  - launch: {window: notes.txt}")
    with pytest.raises(TaskFileError, match="command"):
        load_task(write_task(tmp_path / "t", text))


def test_bad_solution_step_is_an_error(tmp_path: Path) -> None:
    text = valid_with(solution="solution:\n  - {computer: {action: key}, bash: {command: ls}}")
    with pytest.raises(TaskFileError, match="solution step"):
        load_task(write_task(tmp_path / "t", text))


# --------------------------------------------------------------------------- selection


def make(task_id: str, tags: list[str] | None = None) -> Task:
    return Task(id=task_id, app=task_id.split("/")[0], instruction="x", dir=Path("."), source=Path("x"), tags=tags or [])


TASKS = [make("mousepad/a", ["edit"]), make("mousepad/b", ["slow"]), make("xterm/a"), make("pcmanfm/c", ["slow"])]


def ids(tasks: list[Task]) -> list[str]:
    return [t.id for t in tasks]


def test_select_everything_by_default() -> None:
    assert ids(select(TASKS, [], [], [])) == ids(TASKS)


def test_select_app_filter() -> None:
    assert ids(select(TASKS, ["xterm", "pcmanfm"], [], [])) == ["xterm/a", "pcmanfm/c"]


def test_select_glob_and_comma_string_and_list() -> None:
    assert ids(select(TASKS, [], as_patterns("mousepad/*"), [])) == ["mousepad/a", "mousepad/b"]
    assert as_patterns("mousepad/a, xterm/a,") == ["mousepad/a", "xterm/a"]
    assert ids(select(TASKS, [], as_patterns("mousepad/a, xterm/a"), [])) == ["mousepad/a", "xterm/a"]
    assert ids(select(TASKS, [], as_patterns(["pcmanfm/c", "*/b"]), [])) == ["mousepad/b", "pcmanfm/c"]
    assert as_patterns(None) == [] and as_patterns("") == []


def test_select_exclude_tags() -> None:
    assert ids(select(TASKS, [], [], ["slow"])) == ["mousepad/a", "xterm/a"]
    assert ids(select(TASKS, ["mousepad"], as_patterns("mousepad/*"), ["edit"])) == ["mousepad/b"]


def test_select_no_match_lists_known_ids() -> None:
    with pytest.raises(UserError) as info:
        select(TASKS, [], as_patterns("mousepad/zzz"), [])
    for task_id in ids(TASKS):
        assert task_id in str(info.value)
    with pytest.raises(UserError, match="xterm/a"):
        select(TASKS, ["gedit"], [], [])


def test_discover_ids_from_folders_and_duplicates(tmp_path: Path) -> None:
    write_task(tmp_path / "mousepad" / "one", VALID)
    write_task(tmp_path / "xterm" / "two", VALID.replace("app: mousepad", "app: xterm"))
    assert ids(discover(tmp_path)) == ["mousepad/one", "xterm/two"]

    write_task(tmp_path / "mousepad" / "three", "id: mousepad/one\n" + VALID)
    with pytest.raises(UserError, match=r"duplicate task id.*mousepad/one"):
        discover(tmp_path)


def test_discover_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="not a folder"):
        discover(tmp_path / "nope")


# --------------------------------------------------------------------------- built-in tasks


BUILTIN = discover(BUILTIN_TASKS)


def test_builtin_task_set_size() -> None:
    assert len(BUILTIN) >= 8
    assert len({t.app for t in BUILTIN}) >= 3


@pytest.mark.parametrize("task", BUILTIN, ids=lambda t: t.id)
def test_builtin_task_is_complete(task: Task) -> None:
    assert task.instruction and "{{" not in task.instruction
    assert task.solution and any(task.solution.as_written().values()), f"{task.id} has no solution"
    allowed = {"gui": {"computer"}, "cli": {"bash"}, "mcp": set(), "hybrid": {"computer"}}
    app_servers = (
        (yaml.safe_load(app_file.read_text()) or {}).get("mcp_servers", [])
        if (app_file := CONF_APPS / f"{task.app}.yaml").is_file()
        else []
    )
    servers = tuple(f"{s if isinstance(s, str) else s['name']}-" for s in [*task.mcp_servers, *app_servers]) or ("filesystem-",)
    for modality, calls in task.solution.as_written().items():
        assert modality in allowed, f"{task.id}: unknown solution modality {modality!r}"
        for tool in {c["tool"] for c in calls} - allowed[modality] - {"done", "wait_for"}:  # wait_for: the oracle's, any modality
            # mcp/hybrid solutions may call the task's (or its app's) servers and local tools
            assert modality in ("mcp", "hybrid") and tool.startswith((*servers, "local-")), f"{task.id}: {tool}"
    for entry in task.context:
        assert entry.src.exists() and entry.dest.startswith("~")
    if task.grader:  # a Toolathlon grader script judges instead of a spec
        assert Path(task.grader.script).is_file()
        return
    expand_task(task, builtin_templates())  # some use the shared templates of mcpworld/conf/evaluator
    validate_spec(task.evaluator.spec, str(task.source))


def test_whole_param_instruction_becomes_text(tmp_path):
    path = tmp_path / "t" / "task.yaml"
    path.parent.mkdir()
    path.write_text('app: x\ninstruction: "{{ n }}"\nparams: {n: 14}\nevaluator: {func: infeasible}\n')
    assert load_task(path).instruction == "14"


@pytest.mark.parametrize(
    "line, key",
    [("tags: slow", "tags"), ("timeout: soon", "timeout"), ("max_steps: many", "max_steps"), ("instrucion: typo", "instrucion")],
)
def test_bad_field_values_name_file_and_key(tmp_path, line, key):
    path = tmp_path / "t" / "task.yaml"
    path.parent.mkdir()
    path.write_text(f"app: x\ninstruction: do it\nevaluator: {{func: infeasible}}\n{line}\n")
    with pytest.raises(TaskFileError) as err:
        load_task(path)
    assert str(path) in str(err.value) and key in str(err.value)
