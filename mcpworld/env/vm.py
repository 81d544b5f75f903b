"""``env=vm``: a suite's own machine (OSWorld's Ubuntu VM, Windows Agent Arena's Windows 11 VM) driven
through the HTTP server its authors run in it, as their harnesses drive it.

- Reset: ``env.vm.reset_command`` runs on this host (restart OSWorld's docker-hosted VM, revert a
  VMware/VirtualBox snapshot …), then the server is polled until it answers. Without one, the task's
  own setup runs on the VM as it is, and the episode's notes say so.
- Actions are sent as the pyautogui code the suites' harnesses send (``/execute``); screenshots,
  files, the accessibility tree, setup steps (launch, open, activate/close window, upload) go through
  the server's own endpoints. Paths mean what they mean on the VM (``~`` and ``/home/user`` are its home).
- A task's context files and files named by URL are uploaded (``/setup/upload``) from this host.

What differs from ``env=local``: the VM's screen is the screen (a configured resolution that differs
is a clear error, not a silent rescale); the desktop's app ports (Chromium's DevTools …) are the VM's,
not this host's, so getters that read an app over its port are unavailable; the agent's shell runs as
the VM server's account.
"""

from __future__ import annotations

import io
import logging
import posixpath
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from PIL import Image

from mcpworld.core.errors import InfraError, MissingWindow, UserError
from mcpworld.core.task import Task
from mcpworld.env.base import Action, Environment, ShellResult
from mcpworld.env.context import Goldens
from mcpworld.env.screen import SettlePolicy, settle
from mcpworld.env.steps import run_steps
from mcpworld.env.vm_actions import PREFIX, pyautogui_code
from mcpworld.env.vm_server import VmServer

logger = logging.getLogger(__name__)

NO_RESET_NOTE = ("env=vm without env.vm.reset_command: the task's setup ran on the VM as it was left by the "
                 "episode before (no snapshot was restored)")


class _RemoteScreen:
    """The VM's screenshots in the shape settle() polls (size, BGRX bytes)."""

    def __init__(self, vm: VmEnvironment):
        self.vm = vm

    def raw(self) -> tuple[tuple[int, int], bytes]:
        image = self.vm.screenshot()
        return image.size, image.tobytes("raw", "BGRX")


class VmEnvironment(Environment):
    def __init__(self, width: int, height: int, *, url: str, kind: str = "osworld",
                 reset_command: str | None = None, ready_timeout_s: float = 300.0,
                 request_timeout_s: float = 120.0, settle_policy: SettlePolicy | None = None):
        if not url:
            raise UserError("env=vm needs the VM server's address: env.vm.url=http://HOST:5000 "
                            "(OSWorld's and WAA's servers listen on port 5000 inside the VM)")
        self.width, self.height = width, height
        self.server = VmServer(url, kind, timeout_s=request_timeout_s)
        self.reset_command = reset_command
        self.ready_timeout_s = ready_timeout_s
        self.settle_policy = settle_policy or SettlePolicy(interval_s=0.2, stable_frames=2, idle_s=0.5, max_s=5.0)
        self.workroot = Path(tempfile.mkdtemp(prefix="mcpworld-vm-"))
        self.home = Path(self.server.dialect.home)
        self.cache_dir = self.workroot / "cache"
        self.goldens = Goldens(self.workroot / "golden", lambda: [])
        self.task: Task | None = None
        self.notes = []
        self.ports = {}
        if self.server.answers():  # a VM that is up now: a screen it cannot show fails before any episode
            self._check_screen()

    # --- lifecycle -------------------------------------------------------------------------------
    def reset(self, task: Task, episode_dir: Path) -> None:
        self.task, self.notes = task, []
        if self.reset_command:
            self._run_reset_command()
        else:
            self.notes.append(NO_RESET_NOTE)
        self.server.wait_ready(self.ready_timeout_s)
        self._check_screen()
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        self.cache_dir.mkdir(parents=True)
        self._upload_context(task)
        self.run_steps(task.setup)

    def _check_screen(self) -> None:
        size = self.server.screen_size()
        if size != (self.width, self.height):
            raise UserError(f"the VM's screen is {size[0]}x{size[1]}, the run's resolution is "
                            f"{self.width}x{self.height}: choose the VM's (resolution.width={size[0]} "
                            f"resolution.height={size[1]}) or change the VM's display")

    def _run_reset_command(self) -> None:
        """The provider's reset, its output kept in a file: a command that leaves a process running (a VM
        started in the background) must not keep us waiting on its pipes."""
        log = self.workroot / "reset.log"
        with log.open("w") as out:
            try:
                proc = subprocess.run(self.reset_command or "", shell=True, stdin=subprocess.DEVNULL, stdout=out,
                                      stderr=subprocess.STDOUT, timeout=self.ready_timeout_s)
            except subprocess.TimeoutExpired:
                raise InfraError(f"env.vm.reset_command ran past {self.ready_timeout_s:.0f}s") from None
        if proc.returncode != 0:
            tail = log.read_text(errors="replace").strip()[-300:]
            raise InfraError(f"env.vm.reset_command exited {proc.returncode}: {tail}")

    def _upload_context(self, task: Task) -> None:
        if not task.context:
            return
        staging = self.workroot / "staging"
        shutil.rmtree(staging, ignore_errors=True)
        self.goldens.restore(task, staging, owner=None)
        for local in sorted(p for p in staging.rglob("*") if p.is_file()):
            self.copy_in(str(local), "~/" + local.relative_to(staging).as_posix())

    def run_steps(self, steps: list[dict[str, Any]]) -> None:
        run_steps(self, steps, where=str(self.task.source) if self.task else "steps")

    def end_episode(self) -> None:
        """Nothing to stop here: the VM is the reset command's to restore."""

    def close(self) -> None:
        self.server.close()
        shutil.rmtree(self.workroot, ignore_errors=True)

    # --- paths on the VM -------------------------------------------------------------------------
    def vm_path(self, path: str) -> str:
        """A task path (``~/x``, ``/home/user/x``) as the VM names it."""
        home, sep = self.server.dialect.home, self.server.dialect.separator
        if path == "~" or path.startswith("~/"):
            rest = path[2:]
            return home + (sep + rest.replace("/", sep) if rest else "")
        if path == "/home/user" or path.startswith("/home/user/"):  # the home as getters name it
            return home + path[len("/home/user"):].replace("/", sep)
        return path

    def resolve(self, path: str) -> Path:
        return Path(self.vm_path(path))

    # --- step host -------------------------------------------------------------------------------
    def launch(self, command: list[str] | str, shell: bool = False, window: str | None = None,
               timeout_s: float | None = None) -> None:
        self.server.launch(command, shell)
        if window:
            self._await_window(window, timeout_s or 20)

    def _await_window(self, name: str, timeout_s: float) -> None:
        """Until a window titled ``name`` is listed (wmctrl, as OSWorld's VM server activates windows)."""
        if self.server.dialect.kind != "osworld":
            return
        deadline = time.monotonic() + timeout_s
        while True:
            listed = self.server.execute(["wmctrl", "-l"])
            if listed.returncode == 0 and name.lower() in listed.output.lower():
                return
            if time.monotonic() > deadline:
                raise MissingWindow(f"no window titled {name!r} appeared on the VM within {timeout_s:.0f}s")
            time.sleep(0.5)

    def execute(self, command: list[str] | str, shell: bool = False, timeout_s: float = 60,
                env: dict[str, str] | None = None, task_code: bool = False) -> None:
        if env:  # the VM's server takes no variables, and a command line would show them
            raise InfraError("env=vm cannot give a setup command variables of its own (a Klavis task's "
                             "preprocess): run such tasks on env=local or env=docker")
        result = self.server.execute(command, shell=shell, setup=True)
        if result.returncode != 0:
            logger.info("a setup command exited %s on the VM: %s", result.returncode, result.error.strip()[-300:])

    def open_path(self, path: str, app: str | None = None, window: str | None = None,
                  timeout_s: float | None = None) -> None:
        self.server.open_file(self.vm_path(path))
        if window:
            self._await_window(window, timeout_s or 20)

    def activate_window(self, pattern: str, timeout_s: float = 5, strict: bool = False, by_class: bool = False) -> None:
        self.server.window("activate", pattern, strict, by_class)

    def close_window(self, pattern: str, timeout_s: float = 5, strict: bool = False, by_class: bool = False) -> None:
        self.server.window("close", pattern, strict, by_class)

    def copy_in(self, src: str, dest: str) -> None:
        target = self.vm_path(dest)
        parent = posixpath.dirname(target) if self.server.dialect.separator == "/" else target.rsplit("\\", 1)[0]
        if self.server.dialect.separator == "/":
            self.server.execute(["mkdir", "-p", parent])
        self.server.upload(target, Path(src).read_bytes())

    # --- agent-facing ----------------------------------------------------------------------------
    def screenshot(self) -> Image.Image:
        data = self.server.screenshot()
        try:
            return Image.open(io.BytesIO(data)).convert("RGB")
        except Exception as exc:
            raise InfraError(f"the VM server's screenshot is not an image ({type(exc).__name__})") from None

    def settle(self, before: Image.Image | None = None) -> Image.Image:
        frame, _ = settle(_RemoteScreen(self), before, self.settle_policy)  # type: ignore[arg-type]
        return frame

    def act(self, action: Action) -> None:
        result = self.server.python(PREFIX + pyautogui_code(action))
        if result.returncode != 0:
            raise InfraError(f"the VM could not perform {action['kind']}: {result.error.strip()[-300:]}")

    def cursor_position(self) -> tuple[int, int]:
        result = self.server.python("import pyautogui; p = pyautogui.position(); print(p[0], p[1])")
        try:  # the last line: python-xlib may print warnings before it
            x, y = result.output.strip().splitlines()[-1].split()
            return int(x), int(y)
        except (ValueError, IndexError):
            raise InfraError(f"the VM did not tell the pointer's position: {result.error.strip()[-200:]}") from None

    def shell(self, command: str, timeout: float = 30.0, max_output: int = 20_000) -> ShellResult:
        if self.server.dialect.separator == "/":
            command = f"timeout {int(timeout)} bash -c {shlex.quote(command)}"
        result = self.server.execute(command, shell=True)
        stdout, stderr = result.output, result.error
        truncated = len(stdout) > max_output or len(stderr) > max_output
        return ShellResult(result.returncode, stdout[:max_output], stderr[:max_output],
                           timed_out=result.returncode == 124, truncated=truncated)

    def read_file(self, path: str) -> bytes:
        return self.server.file(self.vm_path(path))

    def list_dir(self, path: str) -> list[str]:
        return self.server.list_directory(self.vm_path(path))

    def accessibility_tree(self, timeout_s: float = 60.0) -> str:
        return self.server.accessibility()
