"""Live app hooks for one episode: which probe can run a task's hooks, the probe itself, and the relay
that records each app event in the trace and hands it to the task's handler as it happens.

Probes: PC-Canary's IPC hooks (``evaluator_type: IpcInjector``) for VS Code run in mcpworld's VS Code
extension (profiles/vscode), which the episode's event sink injects them into; its Frida hooks
(``HookManager``, the default) run in the app's process through Frida. IPC hooks of Electron apps we
have no extension for do not run; such tasks say so (``Task.notes``) and end in eval_error. A hook
that reports an error before the agent starts (a symbol the authors' own build has and this one
lacks) cannot watch this build: the episode is an infra_error naming it, never the agent's failure.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from mcpworld.core.errors import InfraError, Unwatchable
from mcpworld.core.paths import APPS
from mcpworld.core.task_parts import HandlerSetup
from mcpworld.probes import frida_probe
from mcpworld.probes.sink import EventSink

SOCKETIO_CLIENT = APPS / "vscode-probe" / "node_modules" / "socket.io-client"  # scripts/install-vscode-probe.sh
IPC_APPS = {"vscode"}  # apps with an IPC probe of ours (the extension in their golden profile)
SETTLE_S = 1.5  # Frida: how long no app event must come before the agent's last action counts as reported
SETTLE_LIMIT_S = 6.0


class Handler(Protocol):
    def send(self, message: dict[str, Any]) -> list[int]: ...


def probe_for(app: str, handler_setup: HandlerSetup | None) -> str | None:
    """The probe that runs this task's hooks here ("vscode", "frida"), or None."""
    if handler_setup is None:
        return None
    hooks, kind = handler_setup.js_hooks, handler_setup.evaluator_type
    if hooks and kind == "IpcInjector" and app in IPC_APPS:
        return "vscode"
    if hooks and kind == "HookManager" and frida_probe.available():
        return "frida"
    return None


def hook_source(paths: list[str]) -> str:
    """The source a probe runs: the hook, then its dependencies, joined as PC-Canary joins them."""
    return "\n".join(Path(p).read_text(encoding="utf-8") for p in paths)


class EventRelay:
    """App events → the trace (``app_event``) and the handler, in arrival order; events that come
    before the handler is attached (the app starts before the agent) wait for it. A key step the
    handler reports is traced at once (``key_step``), which dates it in the timeline."""

    def __init__(self, emit: Callable[..., Any]):
        self._emit = emit
        self._lock = threading.Lock()
        self._pending: list[dict[str, Any]] = []
        self._handler: Handler | None = None
        self.last = 0.0  # time.monotonic() of the latest event

    def __call__(self, message: dict[str, Any]) -> None:
        with self._lock:
            self.last = time.monotonic()
            self._emit("app_event", message=message)
            if self._handler is None:
                self._pending.append(message)
            else:
                self._deliver(self._handler, message)

    def attach(self, handler: Handler) -> None:
        with self._lock:
            self._handler = handler
            for message in self._pending:
                self._deliver(handler, message)
            self._pending.clear()

    def _deliver(self, handler: Handler, message: dict[str, Any]) -> None:
        for index in handler.send(message):
            self._emit("key_step", index=index, via="handler")


class LiveHooks:
    """The probe and relay of an episode whose task has hooks a probe of ours can run. ``env()`` goes
    to the desktop's programs before setup; ``start(...)`` once the app is up, before the agent."""

    def __init__(
        self, probe: str, hooks: list[str], emit: Callable[..., Any], rewrite: Callable[[str], str] = lambda source: source
    ):
        """``rewrite``: the hooks' source as this episode runs it (their authors' paths mapped)."""
        self.probe = probe
        self.relay = EventRelay(emit)
        self.source = rewrite(hook_source(hooks))
        self.sink = EventSink(self.relay, self.source).start() if probe == "vscode" else None
        self._frida: frida_probe.FridaProbe | None = None
        self._early: list[dict[str, Any]] = []

    def env(self) -> dict[str, str]:
        if self.sink is None:
            return {}
        return {**self.sink.env(), "MCPWORLD_SOCKETIO_CLIENT": str(SOCKETIO_CLIENT)}

    def start(self, app_pid: int | None, timeout_s: float) -> None:
        """The hooks run in the app: the extension reported from inside it, or Frida's hook loaded
        without an error. InfraError otherwise (the harness could not watch the app, not the agent's
        doing)."""
        if self.sink is not None:
            if not self.sink.wait_ready(timeout_s):
                raise InfraError(f"the {self.probe} probe did not report from inside the app within {timeout_s:.0f}s")
            return
        if app_pid is None:
            raise InfraError("the task's hook has no app process to attach to (its setup launched none)")

        def seen(message: dict[str, Any]) -> None:
            self._early.append(message)
            self.relay(message)

        try:
            self._frida = frida_probe.FridaProbe(app_pid, self.source, seen)
        except Exception as exc:
            raise InfraError(f"frida could not attach the task's hook to the app (pid {app_pid}): {exc}") from None
        failed = next((m for m in self._early if hook_error(m)), None)
        if failed is not None:
            raise Unwatchable(f"the task's hook cannot watch this build of the app: {hook_error(failed)}")

    def settle(self, quiet_s: float = SETTLE_S, limit_s: float = SETTLE_LIMIT_S) -> None:
        """Let in what the agent's last actions made the hooks send: Frida's message leaves the app as the hooked
        function returns, which can trail the file that function wrote (a wait_for, an agent's glance) and the
        agent's stop. Waits until no event has come for ``quiet_s``, at most ``limit_s``."""
        if self._frida is None:
            return
        start = time.monotonic()
        while (now := time.monotonic()) - start < limit_s:
            quiet = now - max(start, self.relay.last)
            if quiet >= quiet_s:
                return
            time.sleep(min(quiet_s - quiet, 0.1))

    def evaluate(self, timeout_s: float = 10.0) -> bool:
        """Ask the hooks in the app for the final state (IPC); Frida's completion goes to the handler itself."""
        return self.sink.evaluate(timeout_s) if self.sink is not None else True

    def close(self) -> None:
        if self._frida is not None:
            self._frida.close()
        if self.sink is not None:
            self.sink.stop()


def hook_error(message: dict[str, Any]) -> str | None:
    """What went wrong, when a Frida message says the hook failed (an exception, or the hook's own
    ``error`` event such as PC-Canary's ``symbol_not_found``); else None."""
    if message.get("type") == "error":
        return str(message.get("description") or message.get("stack") or "an exception in the hook")[:300]
    payload = message.get("payload")
    if isinstance(payload, dict) and "error" in (payload.get("event_type"), payload.get("event")):
        return f"{payload.get('error_type', 'error')}: {payload.get('message', '')}"[:300]
    return None
