"""The Environment seam: what the agent's tools and the evaluator may do to a desktop."""

from __future__ import annotations

import abc
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from mcpworld.core.actions import Action
from mcpworld.core.task import HOME_USER

if TYPE_CHECKING:
    from PIL.Image import Image

    from mcpworld.core.task import Task


@dataclass
class ShellResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False


@dataclass(frozen=True)
class PathStat:
    """What is at a path in the environment: ``kind`` is ``file``, ``dir`` or ``other`` (a link to
    nothing, a socket …), with its modification time."""

    kind: str
    mtime_ns: int


@dataclass
class Staged:
    """A reset done ahead for an episode that has not begun (``Environment.stage``): it serves that
    episode only, the same task in the same folder, and nothing else."""

    task: Task
    episode_dir: Path
    began: float  # wall clock (time.time()): when its reset began
    ready: float  # … and when its desktop had settled

    def serves(self, task: Task, episode_dir: Path, extra_env: dict[str, str]) -> bool:
        # (an episode's own variables, a live hook's sink, reach its setup: such a reset is its own)
        return task == self.task and Path(episode_dir) == Path(self.episode_dir) and not extra_env


class Environment(abc.ABC):
    """One desktop for one episode at a time. Blocking; callers run it in a worker thread."""

    width: int
    height: int
    home: Path  # the episode's home directory ("~" and /home/user map here)
    cache_dir: Path  # where getters put copies of files they read
    # this desktop's ports of the apps' control interfaces ({"cdp": …, "vlc": …}) and their password
    ports: dict[str, int] = {}  # noqa: RUF012 - a default never changed in place: each backend assigns its own
    app_password: str = ""
    # variables the episode gives the desktop's programs (an app probe's event sink): ``begin`` takes them,
    # ``stage`` clears them; the backends read them at reset and relaunch, and nothing else sets them
    extra_env: dict[str, str] = {}  # noqa: RUF012 - a default never changed in place: each backend assigns its own
    # where a person can watch this desktop in a browser (noVNC), when it can be watched
    viewer_url: str | None = None
    # what the episode's results should say about how this desktop ran the task (set by reset)
    notes: list[str] = []  # noqa: RUF012 - a default never changed in place: each backend assigns its own
    # the network this desktop got (env.network asks): isolated, isolated_offline, isolated_unfenced or
    # host (docs/isolation.md); None where the backend does not decide it (a suite's own VM)
    network_effective: str | None = None
    # the paths the suites' instructions name (/home/user/…, /workspace/…) exist on this desktop, as
    # views of its home: the instruction is given as the suite wrote it (else with ~ in their place)
    suite_paths: bool = True
    # env.stage: this backend can reset one desktop while another runs an episode (a suite's own VM cannot)
    stages: bool = True
    _staged: Staged | None = None  # (see stage / begin)
    _handed: bool = False  # begin handed a staged desktop over, and the agent has not seen it yet
    # what ``begin`` found: the staged reset it handed over ({began, ready}: wall clock; stage_s: how long
    # it took; ready_ahead_s: how long it waited for its episode), or None: it reset now
    handover: dict[str, float] | None = None

    def stage(self, task: Task, episode_dir: Path) -> None:
        """Reset for an episode that has not begun, while another desktop runs the current one, and let
        the screen settle; ``begin`` hands it over. A failure leaves nothing staged (``begin`` then
        resets as usual, and that reset's failure is the episode's)."""
        self._staged, self._handed = None, False
        began = time.time()
        self.extra_env = {}
        self.reset(task, episode_dir)
        self.settle(None)
        self._staged = Staged(task, Path(episode_dir), began, time.time())

    def begin(self, task: Task, episode_dir: Path, extra_env: Mapping[str, str] | None = None) -> None:
        """The desktop ready for this episode: the reset ``stage`` did for it, handed over, or a reset now.
        ``extra_env``: the variables this episode gives the desktop's programs (a staged reset had none,
        so an episode with some resets anew)."""
        self.extra_env = dict(extra_env or {})
        staged, self._staged, self._handed = self._staged, None, False
        if staged is not None and staged.serves(task, episode_dir, self.extra_env):
            self.handover = {
                "began": round(staged.began, 3),
                "ready": round(staged.ready, 3),
                "stage_s": round(staged.ready - staged.began, 4),
                "ready_ahead_s": round(time.time() - staged.ready, 4),
            }
            self._handed = True
            return
        self.handover = None
        self.reset(task, episode_dir)  # (it ends whatever was staged for another episode first)

    def unstage(self) -> Path | None:
        """End what was staged for an episode that will not begin here; its episode folder."""
        staged, self._staged, self._handed = self._staged, None, False
        self.end_episode()
        return staged.episode_dir if staged else None

    def first_observation(self) -> Image:
        """The screen the agent first sees: settled after the reset (``settle``), or, on a staged desktop,
        the screen now: it settled when its staging ended and nothing has acted on it since (what changed
        meanwhile is the app's own idling, a blinking caret, which waiting would not settle)."""
        handed, self._handed = self._handed, False
        return self.screenshot() if handed else self.settle(None)

    @abc.abstractmethod
    def reset(self, task: Task, episode_dir: Path) -> None:
        """Restore the task's context, start the desktop if needed, run the task's setup steps."""

    @abc.abstractmethod
    def run_steps(self, steps: Sequence[object]) -> None:
        """Run OSWorld-style setup/postconfig steps (launch, execute, open, sleep, activate_window …)."""

    def app_pid(self) -> int | None:
        """The process of the app the task's setup launched last (its window's owner), for probes that
        attach to it; None when there is none or this environment cannot tell."""
        return None

    @abc.abstractmethod
    def screenshot(self) -> Image:
        """The current screen, full resolution."""

    @abc.abstractmethod
    def act(self, action: Action) -> None:
        """Perform one input action (no waiting)."""

    @abc.abstractmethod
    def settle(self, before: Image | None = None) -> Image:
        """Wait until the screen stops changing (with a cap) and return the last frame."""

    @abc.abstractmethod
    def cursor_position(self) -> tuple[int, int]:
        """Pointer position in screen pixels."""

    @abc.abstractmethod
    def shell(self, command: str, timeout: float = 30.0, max_output: int = 20_000) -> ShellResult:
        """Run a bash command inside the environment, with a scrubbed environment."""

    @abc.abstractmethod
    def read_file(self, path: str) -> bytes:
        """Bytes of a file inside the environment; FileNotFoundError if absent."""

    @abc.abstractmethod
    def list_dir(self, path: str) -> list[str]:
        """Sorted entry names of a directory inside the environment; FileNotFoundError if absent."""

    @abc.abstractmethod
    def end_episode(self) -> None:
        """Stop everything the episode started (apps, display); keep what makes the next reset fast."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop everything this environment started and remove its files. Safe to call twice."""

    def app_exits(self) -> list[dict[str, Any]]:
        """Apps launched by setup that exited since the last call (each reported once)."""
        return []

    def restore_access(self) -> bool:
        """The display closed again to clients without its cookie, when one that has it opened it
        (``xhost +``); True when it had been opened. A backend whose display no one else reaches: False."""
        return False

    def relaunch(self, exited: dict[str, Any]) -> None:
        """Start an app that ``app_exits`` reported again, as its setup step did."""
        raise NotImplementedError

    def kill(self) -> None:  # noqa: B027 - a no-op by default, not abstract: backends with nothing to stop keep it
        """Stop the desktop's processes now, from any thread (used when a run is interrupted)."""

    def window_rows(self) -> list[tuple[str, str, str]]:
        """(title, class, geometry) of each managed window, through the desktop's shell (env/window_rows.py)."""
        from mcpworld.env.window_rows import LIST_WINDOWS, parse

        return parse(self.shell(LIST_WINDOWS, timeout=10).stdout)

    def accessibility_tree(self, timeout_s: float = 60.0) -> str:
        """The live AT-SPI tree of the desktop as XML (see ``a11y_dump``), read by the
        distribution's python3-pyatspi inside the environment's display and D-Bus session."""
        from mcpworld.core.errors import InfraError
        from mcpworld.env.a11y_dump import NO_PYATSPI, dump_command

        result = self.shell(dump_command(budget_s=max(1.0, timeout_s - 5)), timeout=timeout_s, max_output=64 * 1024 * 1024)
        if result.returncode == 0:
            return result.stdout
        if NO_PYATSPI in result.stderr or result.returncode == 127:
            raise InfraError(
                "the accessibility tree needs Debian's python3-pyatspi in the environment: "
                "apt-get install -y python3-pyatspi at-spi2-core libatk-adaptor"
            )
        why = "timed out" if result.timed_out else f"exited {result.returncode}: {result.stderr.strip()[-300:]}"
        raise InfraError(f"reading the accessibility tree {why}")

    def resolve(self, path: str) -> Path:
        """Map a task path (``~/x``, ``/home/user/x``, relative) onto the episode's home."""
        if path == "~" or path.startswith("~/"):
            return self.home / path[2:]
        for prefix in ("/home/user/", "/root/"):
            if path.startswith(prefix):
                return self.home / path[len(prefix) :]
        if path in ("/home/user", "/root"):
            return self.home
        p = Path(path)
        return p if p.is_absolute() else self.home / p

    def stat(self, path: str) -> PathStat | None:
        """What is at a task path (following links), None when nothing is. Getters ask this, never
        ``resolve(…).exists()``: on a suite's own VM the path is not on this host."""
        import stat

        target = self.resolve(path)
        try:
            found = target.stat()
        except OSError:
            if not target.is_symlink():
                return None
            found = target.lstat()
        kind = "dir" if stat.S_ISDIR(found.st_mode) else "file" if stat.S_ISREG(found.st_mode) else "other"
        return PathStat(kind, found.st_mtime_ns)

    def map_paths(self, command: str) -> str:
        """Rewrite OSWorld's ``/home/user`` inside a command line to the episode's home, so task
        commands written for a VM run unchanged (``~`` already works: HOME is the episode home)."""
        return HOME_USER.sub(lambda _: str(self.home), command)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
