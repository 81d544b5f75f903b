"""MCPWorld handler runtime: drive a task's ``handler.py`` and turn its updates into a verdict.

The handler runs in a child process (``handler_runner``) with the episode's home as HOME and a
timeout per call, so task code never runs inside the harness. Updates: ``key_step`` (1-based
index), ``success``, ``error``, ``app_event``, ``continue``/None. Success comes only from a
``success`` update; an ``error`` update is the handler saying no (score 0 with its reason).
A handler that gives no verdict because it could not (it fails to load, raises, hangs, dies, or
judges from hook events that were never sent) is :class:`EvalError`: not the agent failing.
The one exception is PC-Canary's own rule: its evaluator (``BaseEvaluator._on_message``) ends the
task as a failure when the task's handler raises ("Handler execution error"), so a PC-Canary
handler that raises is that failure here too, with the exception as its reason.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import EvalError, InfraError
from mcpworld.core.result import MetricOutcome

if TYPE_CHECKING:
    from mcpworld.core.task import Task
    from mcpworld.env.base import Environment

FRIDA_COMPLETION = {"type": "send", "payload": {"event": "evaluate_on_completion"}}  # PC-Canary's HookManager's


@dataclass
class HandlerVerdict:
    score: float = 0.0
    reason: str = "the handler gave no success or error verdict"
    key_steps: list[int] = field(default_factory=list)  # 1-based indices, first time reached
    said_no: bool = False  # an error update came: a verdict, not silence
    app_events: list[dict[str, Any]] = field(default_factory=list)

    def outcome(self) -> MetricOutcome:
        return MetricOutcome("handler", self.score, self.reason)


class HandlerProcess:
    """``setup``: the task's ``handler_setup`` (see ``Task``); empty for our own tasks' handlers."""

    def __init__(
        self,
        path: Path,
        task_parameters: dict[str, Any],
        home: Path,
        timeout_s: float = 60.0,
        setup: dict[str, Any] | None = None,
        paths: Callable[[str], str] | None = None,
    ):
        """``paths``: an app event's text as the handler compares it (the suites' paths the agent used,
        /workspace/… or /home/user/…, as the episode's home, which its parameters name)."""
        self.timeout_s = timeout_s
        self._paths = paths
        self.setup = setup or {}
        self.problem: str | None = None  # why the handler could give no verdict
        self.ended = False  # a PC-Canary handler raised: the task ended there as a failure
        self._lock = threading.Lock()
        env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        proc = self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mcpworld.evaluation.handler_runner",
                str(path),
                json.dumps(task_parameters),
                json.dumps(self.setup, default=str),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(self.setup.get("root") or Path(path).parent),
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None  # all three PIPE
        self._in, self._out, self._err = proc.stdin, proc.stdout, proc.stderr
        self.verdict = HandlerVerdict()
        with self._lock:  # its hooks look at the app before the agent may touch it
            started = self._read_line()
        if started is not None and "fatal" in started:
            self._broken(f"the handler could not be loaded: {started['fatal']}")

    def send(self, message: dict[str, Any]) -> list[int]:
        """Hand the handler one live app event; the key steps it newly reported."""
        before = len(self.verdict.key_steps)
        if self._paths:
            message = json.loads(self._paths(json.dumps(message)))
        self._request({"op": "message", "message": message})
        return self.verdict.key_steps[before:]

    def complete(self) -> HandlerVerdict:
        """The verdict once the agent is done, the completion sent as PC-Canary's evaluator of the task's
        kind sends it (when ``evaluate_on_completion``; always for our own tasks): StateInspector calls
        the Python hooks' ``inspector_on_completion``; HookManager (Frida) hands the handler
        ``{"type": "send", "payload": {"event": "evaluate_on_completion"}}`` itself; IpcInjector asks the
        hooks inside the app, which answer the handler with the app's state (through the episode's
        probe: nothing is made up here). Raises EvalError when the handler could give no verdict, or
        when its app hooks (hooker.js) could not run here and it did not say success: its "no" would
        then be about events it never saw, not about the agent."""
        live, probed = bool(self.setup.get("live_hooks")), bool(self.setup.get("probed"))
        kind = self.setup.get("evaluator_type")
        if self.verdict.score == 0.0 and self.problem is None:
            if not self.setup.get("evaluate_on_completion", True) or (kind == "IpcInjector" and live):
                self._request({"op": "ping"})  # nothing to send: is it alive?
            elif kind == "HookManager":
                self._request({"op": "complete", "message": FRIDA_COMPLETION})
            else:
                self._request({"op": "complete"})
        if self.problem and self.verdict.score < 1.0:
            raise EvalError(self.problem)
        if live and not probed and self.verdict.score < 1.0:
            raise EvalError(
                "the handler judges from the events of its app hooks (hooker.js), which no probe "
                "of this harness runs for this app yet: no verdict"
            )
        return self.verdict

    def _request(self, request: dict[str, Any]) -> None:
        with self._lock:  # live events arrive on the event sink's thread, the completion on the episode's
            self._exchange(request)

    def _exchange(self, request: dict[str, Any]) -> None:
        try:
            self._in.write(json.dumps(request) + "\n")
            self._in.flush()
        except (BrokenPipeError, OSError):
            self._broken("the handler process is not running: " + self._stderr())
            return
        reply = self._read_line()
        if reply is None:
            return
        if "fatal" in reply:
            self._broken(f"the handler could not be loaded: {reply['fatal']}")
            return
        if self.ended:
            return  # PC-Canary's evaluator hears nothing after the handler raised
        if "error" in reply:
            if self.setup.get("evaluator_type"):  # a PC-Canary task: its evaluator's rule
                self._raised(str(reply["error"]))
            else:
                self._broken(f"the handler raised {reply['error']}")
            return
        for update in reply.get("updates", []):
            self._apply(update)

    def _read_line(self) -> dict[str, Any] | None:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(self._out, selectors.EVENT_READ)
        if not sel.select(self.timeout_s):
            self._broken(f"the handler did not answer within {self.timeout_s:.0f}s")
            return None
        line = self._out.readline()
        if not line:
            self._broken("the handler process exited: " + self._stderr())
            return None
        return json.loads(line)

    def _apply(self, update: dict[str, Any]) -> None:
        status = update.get("status")
        v = self.verdict
        if status == "key_step":
            index = update.get("index")
            if isinstance(index, int) and index not in v.key_steps:
                v.key_steps.append(index)
        elif status == "success":
            v.score, v.reason = 1.0, f"handler: success: {update.get('reason', '')}".rstrip(": ")
        elif status == "error":
            v.said_no = True
            self._fail(f"handler: error {update.get('type', '')}: {update.get('message', '')}".strip())
        elif status == "app_event":
            v.app_events.append(update)

    def _raised(self, error: str) -> None:
        """PC-Canary's evaluator records a handler exception as the task's end, status failure; a success
        the handler reported before stands (the task had ended there)."""
        self.verdict.said_no, self.ended = True, True
        self._fail(f"the handler raised {error} (PC-Canary's evaluator ends the task as a failure then)")

    def _broken(self, reason: str) -> None:
        self.problem = self.problem or reason

    def _fail(self, reason: str) -> None:
        if self.verdict.score < 1.0:  # a success already reported stands
            self.verdict.reason = reason

    def _stderr(self) -> str:
        try:
            self.proc.kill()
            return (self._err.read() or "")[-500:].strip()
        except Exception:
            return ""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=5)
        for stream in (self._in, self._out, self._err):
            with contextlib.suppress(Exception):
                stream.close()


def run_handler(
    path: Path, task_parameters: dict[str, Any], home: Path, timeout_s: float = 60.0, setup: dict[str, Any] | None = None
) -> HandlerVerdict:
    if not Path(path).is_file():
        raise InfraError(f"handler {path} does not exist")
    proc = HandlerProcess(path, task_parameters, home, timeout_s, setup)
    try:
        return proc.complete()
    finally:
        proc.close()


def handler_setup(task: Task, env: Environment) -> dict[str, Any]:
    """The task's handler surroundings with the config's home paths (``sql_path``) in this episode's home."""
    if task.handler_setup is None:
        return {}
    config = dict(task.handler_setup.config)
    if config.get("sql_path"):
        config["sql_path"] = str(env.resolve(str(config["sql_path"])))
    return {**task.handler_setup.as_runner(), "config": config}


def handler_params(task: Task, env: Environment) -> dict[str, Any]:
    """The task's parameters as its handler gets them: a PC-Canary task's ``/home/user/…`` (its authors'
    home, see ``author_home_text``) in this episode's home, where its hooks look too."""
    if not task.handler_setup:
        return task.params

    def mapped(value: Any) -> Any:
        if isinstance(value, str):
            return env.map_paths(value)
        if isinstance(value, dict):
            return {key: mapped(item) for key, item in value.items()}
        return [mapped(item) for item in value] if isinstance(value, list) else value

    return dict(mapped(task.params))


def start_handler(task: Task, env: Environment, probed: bool = False) -> HandlerProcess | None:
    """A handler task's handler, started before the agent: its Python hooks take their first look at
    the app (``inspector_on_start``) then, as PC-Canary's start with the app. ``probed``: a probe runs
    the task's app hooks this episode and feeds the handler. None for other tasks."""
    if task.evaluator or task.grader or not task.handler:
        return None
    if not task.handler.is_file():
        raise InfraError(f"handler {task.handler} does not exist")
    setup = handler_setup(task, env)
    from mcpworld.tasks.mcpworld_format import author_home_text

    # the instruction names the authors' paths (/workspace/…, /FreeCAD/…), which the desktop has as views of
    # its home: an app event that names one (a saved file's path) reaches the handler as its home's path, as
    # the handler's parameters name it (handler_params)
    return HandlerProcess(
        task.handler,
        handler_params(task, env),
        env.home,
        setup=dict(setup, probed=True) if probed else setup,
        paths=(lambda text: env.map_paths(author_home_text(text))) if task.format == "mcpworld" else None,
    )


def handler_verdict(task: Task, env: Environment, started: HandlerProcess | None) -> HandlerVerdict:
    """The handler's verdict on the finished task: the one ``start_handler`` started before the agent,
    else (standalone grading) one run now."""
    if started:
        return started.complete()
    assert task.handler is not None  # a task without an evaluator or a grader has one (the loaders check)
    return run_handler(task.handler, handler_params(task, env), env.home, setup=handler_setup(task, env))
