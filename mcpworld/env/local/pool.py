"""env.pool for env=local: the next desktops are started while an episode runs.

Without it, each reset waits for a new X server, session bus and window manager (0.3–0.7 s here,
more on a loaded host). With ``env.pool=N`` (N ≥ 2), N−1 desktops are kept ready by a background
thread. Each is wholly its own: a work folder (claimed like every desktop's, so a killed run's are
reaped), a desktop account, a cgroup, a network namespace and a display. Only task-independent
parts are prepared: the reset still restores the task's home and starts its apps on the desktop
it takes, and each desktop serves one episode, then is thrown away.

The spare has an account of its own because the running episode's agent acts as its desktop's
account. If both desktops had one account, that agent could signal the spare's window manager or
use its session bus, and services the bus started would live on into the next episode.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from mcpworld.env.local import desktop_user, leftovers
from mcpworld.env.local.cgroup import DesktopCgroup
from mcpworld.env.local.confine import Confinement
from mcpworld.env.local.desktop_user import DesktopUser, UserSlot
from mcpworld.env.local.display import VirtualDisplay
from mcpworld.env.local.mountns import FileView, MountNamespace
from mcpworld.env.local.netns import NetNamespace

logger = logging.getLogger(__name__)


@dataclass
class PreparedDesktop:
    """A started display (X server, bus, window manager) with the account, cgroup, network and
    runtime folder it runs in; its processes carry its folder as their ``MCPWORLD_DESKTOP`` marker."""

    folder: Path
    slot: UserSlot
    confinement: Confinement
    display: VirtualDisplay

    @property
    def user(self) -> DesktopUser | None:
        return self.slot.user

    @property
    def netns(self) -> NetNamespace | None:
        return self.confinement.netns

    @property
    def runtime_dir(self) -> Path:
        return self.folder / "run"

    @classmethod
    def start(
        cls,
        width: int,
        height: int,
        window_manager: str,
        network: str,
        env_for: Callable[[Path], dict[str, str]],
        view_for: Callable[[Path], FileView] | None = None,
    ) -> PreparedDesktop:
        """A new desktop; ``env_for(runtime_dir)``: the environment its processes start with;
        ``view_for(folder)``: the files they see (env.files=hidden), None: the host's."""
        folder = Path(tempfile.mkdtemp(prefix=leftovers.PREFIX, dir=leftovers.work_bases()[0]))
        leftovers.claim(folder)
        folder.chmod(0o711)  # its account reaches its runtime folder inside, lists nothing
        slot = desktop_user.acquire()
        netns: NetNamespace | None = None
        confinement = Confinement()
        display: VirtualDisplay | None = None
        try:
            runtime = folder / "run"
            runtime.mkdir(mode=0o700)
            if slot.user:
                slot.user.own(runtime)
            netns = NetNamespace.create(unfenced_ok=network == "isolated_unfenced") if network != "host" else None
            confinement = Confinement(None, netns)  # (its namespace goes with _discard if what follows fails)
            files_ns = MountNamespace.create(view_for(folder)) if view_for else None
            confinement = Confinement(None, netns, files_ns)
            confinement = Confinement(DesktopCgroup.create(folder.name), netns, files_ns)
            display = VirtualDisplay(width, height, window_manager, desktop_id=str(folder), confinement=confinement)
            display.start(env_for(runtime), user=slot.user)
            leftovers.record_display(folder, display.number)
            return cls(folder, slot, confinement, display)
        except BaseException:
            _discard(folder, slot, confinement, display)
            raise

    def stop(self) -> None:
        """Kill everything it runs (its cgroup at once; without one, the display's own teardown) and
        free the host ports its network forwards (the next desktop forwards the same); the rest
        is ``remove``'s, in the background."""
        if self.confinement.cgroup is None:
            self.display.stop()
        self.confinement.kill()
        if self.netns:
            self.netns.close_ports()

    def remove(self) -> None:
        """After ``stop``: reap its processes and X socket, delete its namespace and cgroup, free
        its account and remove its folder."""
        _discard(self.folder, self.slot, self.confinement, self.display)

    def discard(self) -> None:
        self.stop()
        self.remove()


def _discard(folder: Path, slot: UserSlot, confinement: Confinement, display: VirtualDisplay | None) -> None:
    try:
        if display is not None:
            display.stop()
        confinement.kill()
        if confinement.netns:
            confinement.netns.close()
        if confinement.mountns:
            confinement.mountns.close()
        if confinement.cgroup:
            confinement.cgroup.remove()
    finally:
        slot.release()  # its processes are gone: another desktop may take the account
        shutil.rmtree(folder, ignore_errors=True)


def _discard_started(future: Future[PreparedDesktop]) -> None:
    if not future.cancelled() and future.exception() is None:
        future.result().discard()


class DesktopPool:
    """Keeps ``ahead`` desktops preparing or ready (one background thread, in order of request).
    ``take`` hands out the oldest (waiting for it if it is not ready yet). ``refill`` removes the
    retired desktops and starts the next ones once the reset that took one has started its apps:
    on few cores, work done in the background during the reset would slow the reset."""

    def __init__(self, prepare: Callable[[], PreparedDesktop], ahead: int):
        self._prepare = prepare
        self._ahead = ahead
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="desktop-pool")
        self._ready: deque[Future[PreparedDesktop]] = deque()
        self._lock = threading.Lock()
        self._retired: list[PreparedDesktop] = []
        self._closed = False
        self.refill()

    def refill(self) -> None:
        with self._lock:
            if self._closed:
                return
            for desktop in self._retired:
                self._worker.submit(desktop.remove)
            self._retired.clear()
            while len(self._ready) < self._ahead:
                self._ready.append(self._worker.submit(self._prepare))

    def take(self) -> PreparedDesktop:
        """The next prepared desktop; a failed preparation raises its error (the episode's
        infra_error), and the next take prepares another."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the desktop pool is closed")
            future = self._ready.popleft() if self._ready else self._worker.submit(self._prepare)
        try:
            return future.result()
        except BaseException:
            if not future.done():  # interrupted (Ctrl-C) while it was being started: discarded when it is
                future.add_done_callback(_discard_started)
            raise

    def retire(self, desktop: PreparedDesktop) -> None:
        """``desktop`` (stopped) is removed in the background at the next ``refill``, or now when
        the pool is closed."""
        with self._lock:
            if not self._closed:
                self._retired.append(desktop)
                return
        desktop.remove()

    def spares(self) -> list[PreparedDesktop]:
        """The desktops ready now (not those still being prepared)."""
        with self._lock:
            return [f.result() for f in self._ready if f.done() and not f.cancelled() and f.exception() is None]

    def close(self) -> None:
        """Cancel what has not started, wait for what has, and discard every spare."""
        with self._lock:
            self._closed = True
            pending, retired = list(self._ready), list(self._retired)
            self._ready.clear()
            self._retired.clear()
        for future in pending:
            future.cancel()
        self._worker.shutdown(wait=True)
        for desktop in retired:
            try:
                desktop.remove()
            except Exception as exc:
                logger.warning("could not remove a used desktop: %s", exc)
        for future in pending:
            if future.cancelled() or future.exception() is not None:
                continue
            try:
                future.result().discard()
            except Exception as exc:  # one spare's teardown must not keep the others alive
                logger.warning("could not discard a prepared desktop: %s", exc)
