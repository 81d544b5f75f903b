"""The episode's Chromium over the DevTools protocol, through Playwright (no browser download:
``connect_over_cdp`` only speaks the protocol to the desktop's own browser)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def in_thread(work: Callable[[], T]) -> T:
    """Run ``work`` in a fresh thread: Playwright's sync API refuses a thread with a running event loop."""
    box: queue.Queue[tuple[bool, Any]] = queue.Queue()

    def run() -> None:
        try:
            box.put((True, work()))
        except BaseException as exc:  # handed to the caller
            box.put((False, exc))

    threading.Thread(target=run, name="cdp", daemon=True).start()
    ok, value = box.get()
    if not ok:
        raise value
    return value


def cdp_call(page: Any, method: str, params: dict[str, Any] | None = None) -> Any:
    """One DevTools command on a Playwright page's target (a session opened for it and closed again)."""
    session = page.context.new_cdp_session(page)
    try:
        return session.send(method, params or {})
    finally:
        session.detach()
