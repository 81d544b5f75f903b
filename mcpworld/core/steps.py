"""The setup-step vocabulary of task files: OSWorld/WAA's ``{"type": T, "parameters": {...}}`` or
the shorthand ``{T: {...}}``, what each kind requires, and which ones a desktop can replay. Task
loaders check steps with it; env/steps.py runs them."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcpworld.core.errors import TaskFileError
from mcpworld.core.pyautogui_script import Unsupported, parse, script_of
from mcpworld.core.sudo import Satisfied, satisfied_here, unmet


@dataclass(frozen=True)
class SetupStep:
    """One setup step of a task, parsed once when the task loads: its ``kind`` (launch, open, execute …)
    and its ``params`` in the long form, and ``raw``, the mapping as the task (or its loader) wrote it,
    for what passes a suite's step on unchanged. A changed step is a new one (``replaced``,
    ``with_params``), never a mapping edited in place."""

    kind: str
    params: Mapping[str, object]
    raw: Mapping[str, object]

    @classmethod
    def of(cls, step: object, where: str) -> SetupStep:
        """A step from a task file's mapping; TaskFileError naming ``where`` (the file and ``setup[i]``)."""
        if isinstance(step, SetupStep):
            return step
        kind, params = normalize_step(step, where)
        assert isinstance(step, dict)  # normalize_step refuses anything else
        return cls(kind, params, dict(step))

    def replaced(self, kind: str, params: Mapping[str, object]) -> SetupStep:
        """Another step in this one's place (a download become a copy of the local file)."""
        return SetupStep(kind, dict(params), {kind: dict(params)})

    def with_params(self, **extra: object) -> SetupStep:
        """This step with ``extra`` parameters added, written in the shape the task wrote it."""
        params = {**self.params, **extra}
        raw = {"type": self.kind, "parameters": params} if "type" in self.raw else {self.kind: params}
        return SetupStep(self.kind, params, raw)


def parse_steps(value: object, where: str, key: str = "setup") -> list[SetupStep]:
    """A task's steps, each checked for shape (not yet for its kind's parameters: ``validate_steps``);
    TaskFileError naming the file, ``setup[i]`` and the fix."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise TaskFileError(f"{where}: {key} = {value!r}: must be a list of steps, like [{{launch: {{command: [...]}}}}]")
    return [SetupStep.of(step, f"{where}: {key}[{i}]") for i, step in enumerate(value)]


def normalize_step(step: Any, where: str = "task") -> tuple[str, dict[str, Any]]:
    """(kind, parameters) of a step: a SetupStep, or a mapping in either of the task files' forms."""
    if isinstance(step, SetupStep):
        return step.kind, dict(step.params)
    if not isinstance(step, dict) or not step:
        raise TaskFileError(f"{where}: a step must be a mapping like {{launch: {{command: [...]}}}}, got {step!r}")
    if "type" in step:
        return str(step["type"]), dict(step.get("parameters") or {})
    if len(step) != 1:
        raise TaskFileError(f"{where}: step {step!r} must have exactly one key (its type) or 'type'+'parameters'")
    ((kind, params),) = step.items()
    if isinstance(params, (list, str)):
        params = (
            {"command": params}
            if kind in ("launch", "execute", "command")
            else {"path": params}
            if kind == "open"
            else {"seconds": params}
            if kind == "sleep"
            else {"window_name": params}
        )
    elif isinstance(params, (int, float)) and kind == "sleep":
        params = {"seconds": params}
    return kind, dict(params or {})


SCREEN_PLACEHOLDERS = re.compile(r"\{SCREEN_(WIDTH|HEIGHT)(_HALF)?\}")
# the desktop account's password where a desktop grants sudo (env=docker), as on OSWorld's VMs
CLIENT_PASSWORD = "password"


def fill_screen(command: Any, width: int, height: int) -> Any:
    """OSWorld's ``{SCREEN_WIDTH}``/``{SCREEN_HEIGHT}`` (and ``_HALF``) in a command, as its setup
    controller fills them from the screen size (e.g. a click in the middle of the screen), and its
    ``{CLIENT_PASSWORD}`` (``echo {CLIENT_PASSWORD} | sudo -S …``), filled with its VMs' password."""

    def fill(text: str) -> str:
        text = text.replace("{CLIENT_PASSWORD}", CLIENT_PASSWORD)
        return SCREEN_PLACEHOLDERS.sub(
            lambda m: str((width if m.group(1) == "WIDTH" else height) // (2 if m.group(2) else 1)), text
        )

    return fill(command) if isinstance(command, str) else [fill(str(c)) for c in command]


def unreplayable(kind: str, params: dict[str, Any]) -> str | None:
    """Why an execute step's pyautogui script cannot be replayed, or None when it can (or is none)."""
    command = fill_screen(params.get("command", ""), 1000, 1000)  # any size: replayable or not alike
    source = script_of(command) if kind in ("execute", "command") else None
    if source is None:
        return None
    try:
        parse(source)
    except Unsupported as exc:
        return f"its pyautogui script uses {exc}, which mcpworld does not replay"
    return None


# the parameters each step kind needs; its keys are every kind a desktop runs
REQUIRED: dict[str, tuple[str, ...]] = {
    "launch": ("command",),
    "execute": ("command",),
    "command": ("command",),
    "open": ("path",),
    "activate_window": ("window_name",),
    "close_window": ("window_name",),
    "copy": ("src", "dest"),
    "download": ("url", "dest"),
    "chrome_open_tabs": ("urls_to_open",),
    "chrome_close_tabs": ("urls_to_close",),
    "update_browse_history": ("history",),
    "sleep": (),
}


def validate_steps(steps: Sequence[object], where: str, key: str = "setup") -> None:
    """Each step's kind is one a desktop runs, with the parameters it needs, and a replayable script."""
    for i, step in enumerate(steps):
        at = f"{where}: {key}[{i}]"
        kind, params = normalize_step(step, at)
        if kind not in REQUIRED:
            raise TaskFileError(f"{at}: unknown step type {kind!r}; known: {', '.join(sorted(REQUIRED))}")
        for required in REQUIRED.get(kind, ()):
            if required not in params:
                raise TaskFileError(f"{at}: step {kind!r} needs '{required}'")
        why = unreplayable(kind, params)
        if why:
            raise TaskFileError(f"{at}: step {kind!r}: {why}")


SUDO = re.compile(r"(^|[\s;&|(`])sudo(\s|$)")


def as_bool(value: object) -> bool:
    """A step's flag as task files write it: true/false, or the strings "true"/"false" (OSWorld's
    ``"shell": "true"``)."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes", "on")
    return bool(value)


def command_text(command: str | Sequence[object] | None) -> str:
    return command if isinstance(command, str) else shlex.join(str(c) for c in command or [])


def sudo_command(steps: list[Any], satisfied: Satisfied = satisfied_here) -> str | None:
    """The first step command that needs root (OSWorld's ``echo {CLIENT_PASSWORD} | sudo -S …``),
    or None: a desktop on this host never grants root to what a task runs. A sudo that only asks
    for what this machine has already (core/sudo.py) needs none."""
    found = sudo_needs(steps, satisfied)
    return found[0] if found else None


def sudo_needs(steps: list[Any], satisfied: Satisfied = satisfied_here) -> tuple[str, str] | None:
    """(the step command, why it needs root here and the fix) of the first step that needs root."""
    for step in steps:
        kind, params = normalize_step(step)
        if kind not in ("launch", "execute", "command"):
            continue
        text = fill_screen(command_text(params.get("command")), 1000, 1000)
        if not (SUDO.search(text) or text.split()[:1] == ["sudo"]):
            continue
        missing = unmet(text, satisfied)
        if not missing:
            continue
        item = missing[0]
        if item.kind == "root":
            return text, f"it runs sudo ({item.text[:80]!r}), which env=local never grants: it would be root on this host"
        return text, (
            f"a step installs {', '.join(item.packages)} as root ({item.text[:80]!r}), which env=local "
            f"never grants; {item.install_hint()}"
        )
    return None
