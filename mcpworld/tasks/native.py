"""Loader for the native ``task.yaml`` format (see DESIGN.md: Task format)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import yaml

from mcpworld.core.errors import TaskFileError
from mcpworld.core.steps import parse_steps, validate_steps
from mcpworld.core.task import ContextEntry, Task
from mcpworld.core.task_parts import OracleStep, Solution, parse_evaluator, parse_key_steps, parse_oracle_step
from mcpworld.core.waits import TOOL as WAIT_TOOL
from mcpworld.core.waits import check_wait
from mcpworld.tasks.formats import task_format
from mcpworld.tasks.settings import LoaderSettings

REQUIRED = ("app", "instruction")
KNOWN = set(REQUIRED) | {
    "evaluator",
    "id",
    "params",
    "timeout",
    "max_steps",
    "tags",
    "context",
    "setup",
    "mcp_servers",
    "key_steps",
    "handler",
    "solution",
    "workspace",
    "stage",
}

_jinja = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


_WHOLE_PARAM = re.compile(r"^\{\{\s*([A-Za-z_]\w*)\s*\}\}$")


def render(
    value: Any, params: dict[str, Any], where: str, hint: str = "define it under 'params'", error: type[Exception] = TaskFileError
) -> Any:
    """Render every templated string inside ``value`` with the task's params (StrictUndefined).
    A string that is exactly ``{{ name }}`` becomes the param itself, keeping its type (14, not "14")."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        whole = _WHOLE_PARAM.fullmatch(value)
        if whole and whole.group(1) in params:
            return params[whole.group(1)]
        try:
            return _jinja.from_string(value).render(**params)
        except jinja2.TemplateError as exc:
            raise error(f"{where}: template {value[:60]!r}: {exc} ({hint})") from exc
    if isinstance(value, list):
        return [render(v, params, where, hint, error) for v in value]
    if isinstance(value, dict):
        return {k: render(v, params, where, hint, error) for k, v in value.items()}
    return value


def normalize_call(call: object, where: str) -> OracleStep:
    """A solution step, ``{tool: computer, args: {...}}`` or the shorthand ``{computer: {...}}``, either with
    ``spoil:`` for the oracle's nearly right replay (docs/certify.md); a ``wait_for`` step (the oracle's
    wait for state) is checked here too (core/waits.py)."""
    step = parse_oracle_step(call, where)
    if step.tool == WAIT_TOOL:
        check_wait(dict(step.args), where)
    return step


def _number(data: dict[str, Any], key: str, kind: type, where: str) -> Any:
    """A positive number (a bound of zero or less would end every episode before it starts)."""
    value = data.get(key)
    if value is None:
        return None
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise TaskFileError(f"{where}: '{key}' must be a number, got {value!r}") from None
    if number <= 0:
        raise TaskFileError(f"{where}: '{key}' must be positive, got {value!r} (leave it out for the run's bound)")
    return number


def load_task(path: Path, root: Path | None = None) -> Task:
    path = Path(path)
    where = str(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise TaskFileError(
            f"{where}: not UTF-8 text (byte {exc.start}: {exc.object[exc.start : exc.start + 4]!r}); save the file as UTF-8"
        ) from None
    except yaml.YAMLError as exc:
        raise TaskFileError(f"{where}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise TaskFileError(f"{where}: must be a mapping of task fields")
    unknown = sorted(set(data) - KNOWN)
    if unknown:
        raise TaskFileError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN))}")
    for key in REQUIRED:
        if key not in data or data[key] in (None, ""):
            raise TaskFileError(f"{where}: missing required key '{key}'")
    if not data.get("evaluator") and not data.get("handler"):
        raise TaskFileError(f"{where}: missing required key 'evaluator' (or a 'handler' that judges the task)")

    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise TaskFileError(f"{where}: 'params' must be a mapping")
    try:
        needed = jinja2.meta.find_undeclared_variables(_jinja.parse(str(data["instruction"])))
    except jinja2.TemplateSyntaxError as exc:
        raise TaskFileError(
            f"{where}: instruction: template syntax error: {exc.message} (line {exc.lineno} of the instruction)"
        ) from None
    missing = sorted(needed - set(params))
    if missing:
        raise TaskFileError(f"{where}: instruction uses undefined param(s) {', '.join(missing)}; add them under 'params'")

    task_dir = path.parent
    app = str(data["app"])
    task_id = str(data.get("id") or (path.parent.relative_to(root).as_posix() if root else f"{app}/{task_dir.name}"))

    context = []
    for entry in data.get("context") or []:
        if not isinstance(entry, dict) or "from" not in entry or "to" not in entry:
            raise TaskFileError(f"{where}: context entries need 'from' (in the task folder) and 'to' (~/...)")
        src = (task_dir / entry["from"]).resolve()
        if not src.exists():
            raise TaskFileError(f"{where}: context file {entry['from']!r} does not exist in {task_dir}")
        if task_dir.resolve() not in src.parents and src != task_dir.resolve():
            raise TaskFileError(f"{where}: context 'from' {entry['from']!r} must stay inside the task folder")
        context.append(ContextEntry(src, str(entry["to"])))

    setup = parse_steps(render(list(data.get("setup") or []), params, where), where)
    validate_steps(setup, where)

    raw_solution = data.get("solution") or {}
    if isinstance(raw_solution, list):
        raw_solution = {"gui": raw_solution}
    if not isinstance(raw_solution, dict):
        raise TaskFileError(f"{where}: 'solution' must be a list of tool calls or a mapping modality -> list")
    solution = Solution(
        {str(m): tuple(normalize_call(c, where) for c in render(calls or [], params, where)) for m, calls in raw_solution.items()}
    )

    # evaluators may name gold files in the task folder: {type: cache_file, path: "{{ task_dir }}/gold.png"}
    judged = {"task_dir": str(task_dir.resolve()), **params}
    evaluator = render(data.get("evaluator"), judged, where)
    handler = task_dir / data["handler"] if data.get("handler") else None
    if handler is not None and not handler.is_file():
        raise TaskFileError(f"{where}: handler {data['handler']!r} does not exist in {task_dir}")

    tags = data.get("tags") or []
    if not isinstance(tags, list):
        raise TaskFileError(f"{where}: 'tags' must be a list, e.g. tags: [{tags}]")
    stage = data.get("stage", True)
    if not isinstance(stage, bool):
        raise TaskFileError(
            f"{where}: 'stage' must be true or false (false: its setup runs at the episode's start, "
            "never ahead under env.stage), not {stage!r}"
        )
    return Task(
        id=task_id,
        app=app,
        instruction=str(render(str(data["instruction"]), params, where)).strip(),
        dir=task_dir,
        source=path,
        params=params,
        timeout_s=_number(data, "timeout", float, where),
        max_steps=_number(data, "max_steps", int, where),
        tags=[str(t) for t in tags],
        context=context,
        setup=setup,
        mcp_servers=list(data.get("mcp_servers") or []),
        key_steps=parse_key_steps(render(data.get("key_steps"), judged, where), where),
        evaluator=parse_evaluator(evaluator, where),
        handler=handler,
        solution=solution,
        workspace=str(data.get("workspace") or "~"),
        stage=stage,
    )


@task_format(
    "native",
    pattern="task.yaml",
    needs="a task.yaml with 'app', 'instruction' and 'evaluator'",
    detect=lambda path, data: path.suffix in (".yaml", ".yml"),
)
def _load_file(path: Path, data: Any, settings: LoaderSettings, root: Path | None) -> Task:
    return load_task(path, root)
