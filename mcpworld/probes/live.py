"""Live app hooks for one episode: which probe can run a task's hooks, its event sink, and the relay
that records each app event in the trace and hands it to the task's handler as it happens.

Probes: PC-Canary's IPC hooks (``evaluator_type: IpcInjector``) for VS Code run in mcpworld's VS Code
extension (profiles/vscode), which the sink injects them into. Other hooks (Frida's for native apps,
IPC for Electron apps we have no probe for) are not run yet; such tasks say so (``Task.notes``) and
their handlers, given no events, end in eval_error.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Protocol

from mcpworld.probes.sink import EventSink

ROOT = Path(__file__).resolve().parents[2]
SOCKETIO_CLIENT = ROOT / ".apps" / "vscode-probe" / "node_modules" / "socket.io-client"  # scripts/install-vscode-probe.sh
IPC_APPS = {"vscode"}  # apps with an IPC probe of ours (the extension in their golden profile)


class Handler(Protocol):
    def send(self, message: dict[str, Any]) -> list[int]: ...


def probe_for(app: str, handler_setup: dict[str, Any]) -> str | None:
    """The probe that runs this task's hooks here ("vscode"), or None."""
    hooks = handler_setup.get("js_hooks") or []
    if hooks and handler_setup.get("evaluator_type") == "IpcInjector" and app in IPC_APPS:
        return "vscode"
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

    def __call__(self, message: dict[str, Any]) -> None:
        with self._lock:
            self._emit("app_event", message=message)
            if self._handler is None:
                self._pending.append(message)
            else:
                self._deliver(message)

    def attach(self, handler: Handler) -> None:
        with self._lock:
            self._handler = handler
            for message in self._pending:
                self._deliver(message)
            self._pending.clear()

    def _deliver(self, message: dict[str, Any]) -> None:
        for index in self._handler.send(message):
            self._emit("key_step", index=index, via="handler")


class LiveHooks:
    """The sink and relay of an episode whose task has hooks a probe of ours can run."""

    def __init__(self, probe: str, hooks: list[str], emit: Callable[..., Any]):
        self.probe = probe
        self.relay = EventRelay(emit)
        self.sink = EventSink(self.relay, hook_source(hooks)).start()

    def env(self) -> dict[str, str]:
        return {**self.sink.env(), "MCPWORLD_SOCKETIO_CLIENT": str(SOCKETIO_CLIENT)}

    def wait_ready(self, timeout_s: float) -> bool:
        return self.sink.wait_ready(timeout_s)

    def evaluate(self, timeout_s: float = 10.0) -> bool:
        return self.sink.evaluate(timeout_s)

    def close(self) -> None:
        self.sink.stop()
