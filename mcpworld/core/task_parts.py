"""The typed parts of a task (its key steps, its script grader), parsed once when the task loads.

A loader turns what a suite's task file says into these, so a mistake is one error naming the task
file, the key, the value and the fix, before any episode; the code that judges reads fields, not
mappings. What a suite's own code gets unchanged (a key step's ``check``, an evaluator spec the
evaluator validates against its registries) stays the mapping the task wrote.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcpworld.core.errors import TaskFileError

KEY_STEP_KINDS = ("event", "check", "handler_index")


def part_error(where: str, key: str, value: object, fix: str) -> TaskFileError:
    """The one error for a bad task part: the file, the key, the value and the fix."""
    return TaskFileError(f"{where}: {key} = {value!r}: {fix}")


@dataclass(frozen=True)
class EventPattern:
    """The episode event a key step waits for: its ``type`` and a regex per field it must match."""

    type: str
    match: Mapping[str, str] = field(default_factory=dict)

    def matches(self, event: Mapping[str, object]) -> bool:
        if event.get("type") != self.type:
            return False
        return all(name in event and re.search(pattern, str(event[name])) for name, pattern in self.match.items())


@dataclass(frozen=True)
class KeyStep:
    """One checkpoint of partial progress, reached in exactly one way: an episode ``event``, a ``check``
    (an evaluator spec, as the task wrote it: evaluator templates expand it, the evaluator validates it)
    that scores 1, or the MCPWorld handler's ``key_step`` number ``handler_index`` (1-based)."""

    name: str
    event: EventPattern | None = None
    check: Mapping[str, object] | None = None
    handler_index: int | None = None


def parse_key_steps(value: object, where: str) -> list[KeyStep]:
    """A task file's ``key_steps`` list; TaskFileError naming the file, the step and the fix."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise part_error(
            where, "key_steps", value, "must be a list of steps, each {name, and one of event, check, handler_index}"
        )
    return [parse_key_step(step, f"key_steps[{i}]", where) for i, step in enumerate(value)]


def parse_key_step(step: object, key: str, where: str) -> KeyStep:
    if isinstance(step, KeyStep):
        return step
    if not isinstance(step, Mapping) or not step.get("name"):
        raise TaskFileError(f"{where}: {key} needs a 'name' (what the agent has reached), got {step!r}")
    label = f"{where}: {key} ({step['name']})"
    if sum(kind in step for kind in KEY_STEP_KINDS) != 1:
        given = sorted(str(key) for key in step if key != "name")
        raise TaskFileError(f"{label} needs exactly one of 'event', 'check' or 'handler_index', got {given or 'none'}")
    name = str(step["name"])
    if "event" in step:
        return KeyStep(name, event=_event_pattern(step["event"], label))
    if "check" in step:
        check = step["check"]
        if not isinstance(check, Mapping):
            raise TaskFileError(f"{label}: 'check' must be an evaluator spec (func, result, expected …), got {check!r}")
        return KeyStep(name, check=dict(check))
    index = step["handler_index"]
    if isinstance(index, bool) or not isinstance(index, int) or index < 1:
        raise TaskFileError(f"{label}: handler_index must be an integer from 1 (the handler's key_step number), got {index!r}")
    return KeyStep(name, handler_index=index)


def _event_pattern(event: object, label: str) -> EventPattern:
    if not isinstance(event, Mapping) or not event.get("type"):
        raise TaskFileError(f"{label}: 'event' needs a 'type' (e.g. tool_call), got {event!r}")
    match = event.get("match") or {}
    if not isinstance(match, Mapping):
        raise TaskFileError(f"{label}: event.match must map event fields to regexes, got {match!r}")
    for name, pattern in match.items():
        try:
            re.compile(str(pattern))
        except re.error as exc:
            raise TaskFileError(f"{label}: match.{name} is not a valid regex: {exc}") from exc
    return EventPattern(str(event["type"]), {str(k): str(v) for k, v in match.items()})


@dataclass(frozen=True)
class ScriptGrader:
    """A program that judges the workspace (Toolathlon's ``evaluation/main.py``), run as upstream runs it:
    ``python -m module`` from ``root`` (the script's grandparent's parent when None), given the ground
    truth folder and the launch time; ``claim_done``: an agent that did not claim done fails without it
    running; ``env``: what only this program gets (an episode's hosted-account credentials)."""

    script: Path
    groundtruth: str = ""
    launch_time: str = ""
    module: str | None = None
    root: Path | None = None
    python: str | None = None
    claim_done: bool = False
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EvaluatorSpec:
    """A task's evaluator spec in OSWorld/WAA's shape (``func``, ``result``, ``expected``, ``options``,
    ``conj``, ``postconfig``; or ``template`` and ``with``), kept in ``spec`` as the task wrote it: the
    evaluator expands its templates, validates it against its metrics and getters and scores it
    (``evaluation.spec``), and a loader may point its files at local copies in place. What the
    harness reads before judging (its postconfig steps, its getters, whether it is infeasible) is read
    here, in one place."""

    spec: dict[str, object]

    @property
    def infeasible(self) -> bool:
        return self.spec.get("func") == "infeasible" or bool(self.spec.get("infeasible"))

    @property
    def postconfig(self) -> list[dict[str, object]]:
        """The setup steps run before its getters (the list in ``spec``: changing a step changes the spec)."""
        steps = self.spec.get("postconfig")
        return steps if isinstance(steps, list) else []

    def getters(self) -> list[dict[str, object]]:
        """Its ``result`` and ``expected`` getter configs, each one (a list's entries, none for null)."""
        found: list[dict[str, object]] = []
        for key in ("result", "expected"):
            value = self.spec.get(key)
            found += [cfg for cfg in (value if isinstance(value, list) else [value]) if isinstance(cfg, dict)]
        return found


def parse_evaluator(value: object, where: str) -> EvaluatorSpec | None:
    """A task file's ``evaluator`` (None when it has none); TaskFileError naming the file, the key and the fix.
    Its metrics and getters are checked by name once its templates are expanded (``evaluation.spec``)."""
    if isinstance(value, EvaluatorSpec):
        return value
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        raise part_error(where, "evaluator", value, "must be a mapping: func, result, expected … (or template and with)")
    steps = value.get("postconfig")
    if steps is not None and (not isinstance(steps, list) or not all(isinstance(step, dict) for step in steps)):
        raise part_error(where, "evaluator.postconfig", steps, "must be a list of setup steps (each a mapping, like setup's)")
    return EvaluatorSpec({str(key): item for key, item in value.items()})


OMIT = "omit"  # a solution step's ``spoil: omit``: the spoiled replay leaves the step out


@dataclass(frozen=True)
class OracleStep:
    """One tool call of a task's oracle solution, and its ``spoil`` (docs/certify.md): how the spoiled
    replay changes it, ``omit`` (left out) or a mapping of the args it changes; None where it declares none."""

    tool: str
    args: Mapping[str, object] = field(default_factory=dict)
    spoil: Mapping[str, object] | str | None = None

    def spoiled(self) -> OracleStep | None:
        """The step as the spoiled replay makes it; None when it leaves it out."""
        if self.spoil == OMIT:
            return None
        args = {**self.args, **self.spoil} if isinstance(self.spoil, Mapping) else self.args
        return OracleStep(self.tool, args)

    def rewritten(self, fill: Callable[[dict[str, object]], dict[str, object]]) -> OracleStep:
        """This step with ``fill`` applied to its args and a spoil's args (the episode's workspace path)."""
        spoil = fill(dict(self.spoil)) if isinstance(self.spoil, Mapping) else self.spoil
        return OracleStep(self.tool, fill(dict(self.args)), spoil)

    def as_written(self) -> dict[str, object]:
        """``{tool, args}`` (and ``spoil``), as a solution file writes it."""
        spoil = {"spoil": dict(self.spoil) if isinstance(self.spoil, Mapping) else self.spoil} if self.spoil is not None else {}
        return {"tool": self.tool, "args": dict(self.args), **spoil}


def parse_oracle_step(call: object, where: str) -> OracleStep:
    """``{tool: computer, args: {...}}`` or the shorthand ``{computer: {...}}``, either with ``spoil:``."""
    if isinstance(call, Mapping) and "spoil" in call:
        spoil = call["spoil"]
        if spoil != OMIT and not (isinstance(spoil, Mapping) and spoil):
            raise TaskFileError(
                f"{where}: solution step {call!r}: 'spoil' must be 'omit' (the spoiled replay leaves "
                f"the step out) or a mapping of the args to change (e.g. {{text: '41'}}), got {spoil!r}"
            )
        step = parse_oracle_step({k: v for k, v in call.items() if k != "spoil"}, where)
        return OracleStep(step.tool, step.args, {str(k): v for k, v in spoil.items()} if isinstance(spoil, Mapping) else OMIT)
    if isinstance(call, Mapping) and "tool" in call:
        return OracleStep(str(call["tool"]), _args(call.get("args"), call, where))
    if isinstance(call, Mapping) and len(call) == 1:
        ((tool, args),) = call.items()
        return OracleStep(str(tool), _args(args, call, where))
    raise TaskFileError(f"{where}: solution step {call!r} must be {{tool: NAME, args: {{...}}}} or {{NAME: {{...}}}}")


def _args(args: object, call: object, where: str) -> dict[str, object]:
    if not args:
        return {}
    if not isinstance(args, Mapping):
        raise TaskFileError(f"{where}: solution step {call!r}: its args must be a mapping of argument names to values")
    return {str(k): v for k, v in args.items()}


@dataclass(frozen=True)
class Solution:
    """A task's oracle solution: per modality (gui, cli, mcp, hybrid …) the steps the oracle replays."""

    modalities: Mapping[str, tuple[OracleStep, ...]] = field(default_factory=dict)

    def get(self, modality: str) -> tuple[OracleStep, ...]:
        return self.modalities.get(modality, ())

    def __contains__(self, modality: object) -> bool:
        return modality in self.modalities

    def __iter__(self) -> Iterator[str]:
        return iter(self.modalities)

    def __bool__(self) -> bool:
        return bool(self.modalities)

    def with_steps(self, modality: str, steps: Sequence[OracleStep]) -> Solution:
        return Solution({**self.modalities, modality: tuple(steps)})

    def merged(self, other: Solution) -> Solution:
        """This solution with ``other``'s modalities in place of its own (a tasks.solutions overlay)."""
        return Solution({**self.modalities, **other.modalities})

    def as_written(self) -> dict[str, list[dict[str, object]]]:
        return {modality: [step.as_written() for step in steps] for modality, steps in self.modalities.items()}


@dataclass(frozen=True)
class HandlerSetup:
    """An MCPWorld/PC-Canary handler's surroundings: the task's ``config`` (its evaluator's config, the
    ``sql_path`` in the authors' checkout mapped here), its Python ``hooks`` (dependencies first), its
    app hooks (``js_hooks``: a probe runs them, mcpworld.probes), the ``evaluator_type`` and whether it
    asks for a verdict at the end (``evaluate_on_completion``), the checkout ``root`` the handler runs
    from and the ``python_path`` its hooks import from. The handler runner gets it as JSON (``as_runner``)."""

    config: Mapping[str, object] = field(default_factory=dict)
    hooks: tuple[str, ...] = ()
    js_hooks: tuple[str, ...] = ()
    evaluator_type: str = "HookManager"
    evaluate_on_completion: bool = False
    root: str = ""
    python_path: tuple[str, ...] = ()

    def as_runner(self) -> dict[str, object]:
        """The mapping the handler runner reads (``live_hooks``: the task has app hooks)."""
        return {
            "config": dict(self.config),
            "hooks": list(self.hooks),
            "live_hooks": bool(self.js_hooks),
            "js_hooks": list(self.js_hooks),
            "evaluator_type": self.evaluator_type,
            "evaluate_on_completion": self.evaluate_on_completion,
            "root": self.root,
            "python_path": list(self.python_path),
        }
