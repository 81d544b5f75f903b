"""Episode trace: one JSON event per line, flushed as it happens so a crash loses nothing."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from mcpworld.core.secrets import redact_tree


def preview(args: Any, limit: int = 300) -> str:
    """Tool-call arguments as a trace event shows them: JSON, cut at ``limit`` characters."""
    text = json.dumps(args, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


class Trace:
    """Append-only event log; ``emit`` is cheap and thread-safe."""

    def __init__(self, path: Path | None):
        self.path = path
        self._t0 = time.monotonic()
        self.wall_start = time.time()  # the wall-clock time of t=0 (events' "t" are seconds after it)
        self._lock = threading.Lock()
        self._file = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 - kept open beyond this block
        self.events: list[dict[str, Any]] = []

    def emit(self, type: str, **data: Any) -> dict[str, Any]:
        """Record one event; a known secret value anywhere in it (a tool's output that printed a
        key) is redacted before it reaches the file, the spans or the trajectory page."""
        event = {"type": type, "t": round(time.monotonic() - self._t0, 4), "ts": time.time(), **redact_tree(data)}
        with self._lock:
            self.events.append(event)
            if self._file:
                self._file.write(json.dumps(event, default=str) + "\n")
                self._file.flush()
        return event

    def close(self) -> None:
        with self._lock:
            if self._file:
                self._file.close()
                self._file = None


def read_trace(path: Path) -> list[dict[str, Any]]:
    """Events of a trace file, skipping a torn last line."""
    events = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return events
