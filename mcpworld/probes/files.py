"""The file probe: when anything under the episode's home last changed (inotify, through watchdog),
for key steps no app hook reports. An app saving its document, settings or profile is the moment a
``check`` key step can first pass; the episode re-checks only after a change, and dates the step
by that change."""

from __future__ import annotations

import threading
import time
import warnings
from pathlib import Path

# watchdog 7.1's recursive inotify watch races itself: a folder made with its subfolders at once (mkdir -p,
# a copied tree, an app's first profile on a fresh machine) gets its subfolders watched by the walk of the
# new folder and again by their own queued creation events. The second add re-registers the same callback
# on the same watch, harmlessly, and warns, its message the repr of every watch of the tree (kilobytes
# each time, because ``Watch.short_str`` lacks @property). Nothing is lost: exactly that warning is ignored.
DUPLICATE_WATCH = r"Callback with id '\d+' already exists for watch "


class HomeChanges:
    def __init__(self, home: Path):
        from watchdog.events import FileSystemEventHandler
        from watchdog.observers import Observer

        warnings.filterwarnings(
            "ignore", message=DUPLICATE_WATCH, category=RuntimeWarning, module=r"watchdog\.observers\.inotify$"
        )  # (its emitter thread warns)
        self._lock = threading.Lock()
        self._changed_at: float | None = None  # time.time() of the last change not yet taken

        changes = self

        class Seen(FileSystemEventHandler):
            def on_any_event(self, event) -> None:
                if event.event_type not in ("opened", "closed_no_write"):
                    with changes._lock:
                        changes._changed_at = time.time()

        self._observer = Observer()
        self._observer.schedule(Seen(), str(home), recursive=True)
        self._observer.start()

    def take(self) -> float | None:
        """The time of the latest change since the last call, or None when nothing changed."""
        with self._lock:
            changed, self._changed_at = self._changed_at, None
        return changed

    def close(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)
