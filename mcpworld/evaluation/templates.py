"""Named evaluator spec templates: common checks written once (mcpworld/conf/evaluator/*.yaml ``templates``)
and referenced by tasks as ``evaluator: {template: NAME, with: {param: value}}``.

A template is a spec whose strings are jinja2 templates over the ``with`` params (StrictUndefined:
a missing param is an error naming it). Keys next to ``template`` (e.g. ``conj``) override the
expanded spec. Works for key-step ``check`` specs too.
"""

from __future__ import annotations

import copy
import difflib
from dataclasses import replace
from typing import Any

import yaml

from mcpworld.core.errors import UserError
from mcpworld.core.paths import CONF_DIR
from mcpworld.core.task_parts import EvaluatorSpec
from mcpworld.tasks.native import render

BUILTIN_FILE = CONF_DIR / "evaluator" / "default.yaml"


def builtin_templates() -> dict[str, Any]:
    """The templates shipped in mcpworld/conf/evaluator/default.yaml (for grading outside Hydra)."""
    if not BUILTIN_FILE.is_file():
        return {}
    return dict((yaml.safe_load(BUILTIN_FILE.read_text()) or {}).get("templates") or {})


def expand(spec: dict[str, Any], templates: dict[str, Any], where: str) -> dict[str, Any]:
    """``spec`` with a ``template`` reference replaced by the rendered template."""
    if not isinstance(spec, dict) or "template" not in spec:
        return spec
    name = spec["template"]
    if name not in templates:
        close = difflib.get_close_matches(str(name), list(templates), n=3)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UserError(f"{where}: unknown evaluator template {name!r}; {hint}known: {', '.join(sorted(templates))}")
    params = spec.get("with") or {}
    if not isinstance(params, dict):
        raise UserError(f"{where}: evaluator 'with' must be a mapping of template params")
    expanded = render(
        copy.deepcopy(templates[name]),
        params,
        f"{where}: evaluator template {name!r}",
        hint="pass it under 'with'",
        error=UserError,
    )
    expanded.update({k: v for k, v in spec.items() if k not in ("template", "with")})
    return expanded


def expand_task(task: Any, templates: dict[str, Any]) -> None:
    """Expand the task's evaluator and its key-step checks in place."""
    where = str(task.source)
    if task.evaluator is not None:
        task.evaluator = EvaluatorSpec(expand(task.evaluator.spec, templates, where))
    task.key_steps = [
        replace(step, check=expand(dict(step.check), templates, f"{where}: key step {step.name!r}"))
        if step.check is not None
        else step
        for step in task.key_steps
    ]
