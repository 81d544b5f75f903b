"""The Frida probe: a task's hook (PC-Canary's HookManager ``hooker.js``) run inside the app's process.

Frida (the ``frida`` wheel) attaches to the process, loads the hook with its dependencies, and every
``send()`` comes back in Frida's message shape (``{"type": "send", "payload": {...}}``, or
``{"type": "error", ...}`` for an exception in the hook), which is what PC-Canary's handlers read.
The harness runs as root and the app as the desktop account, so attaching needs no ptrace rights
beyond root's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def available() -> bool:
    try:
        import frida  # noqa: F401
    except ImportError:
        return False
    return True


class FridaProbe:
    def __init__(self, pid: int, source: str, on_message: Callable[[dict[str, Any]], None]):
        import frida

        self.session = frida.attach(pid)
        self.script = self.session.create_script(source)
        self.script.on("message", lambda message, data: on_message(message))
        self.script.load()

    def close(self) -> None:
        for step in (self.script.unload, self.session.detach):
            try:
                step()
            except Exception as exc:  # the app may be gone already
                log.debug("frida probe: %s", exc)
