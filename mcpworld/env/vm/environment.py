"""``env=vm``: a suite's own machine (OSWorld's Ubuntu VM, Windows Agent Arena's Windows 11 VM) driven
through the HTTP server its authors run in it, as their harnesses drive it.

- Reset: ``env.vm.reset_command`` runs on this host (restart OSWorld's docker-hosted VM, revert a
  VMware/VirtualBox snapshot …), then the server is polled until it answers. Without one, the task's
  own setup runs on the VM as it is, and the episode's notes say so.
- Actions are sent as the pyautogui code the suites' harnesses send (``/execute``); screenshots,
  files, the accessibility tree, setup steps (launch, open, activate/close window, upload) go through
  the server's own endpoints. Paths mean what they mean on the VM (``~`` and ``/home/user`` are its home).
- A task's context files and files named by URL are uploaded (``/setup/upload``) from this host.
- A pool: ``env.vm.urls`` names one VM per concurrent episode, each reset by its own command
  (``env.vm.reset_commands``, or ``{url}`` in ``env.vm.reset_command``): ``vm_slots``; more concurrent
  episodes than VMs is refused before any (``check_vm_pool``).
- What OSWorld's getters ask the VM's server, the getters ask it too: ``terminal_output``
  (``/terminal``), ``window_size``, ``wallpaper``; what is at a path (``stat``) and the clipboard are
  read on the VM, never on this host.

What differs from ``env=local``: the VM's screen is the screen (a configured resolution that differs
is a clear error, not a silent rescale); the desktop's app ports (Chromium's DevTools …) are the VM's,
not this host's, so getters that read an app over its port are unavailable; the agent's shell runs as
the VM server's account.
"""

from __future__ import annotations

import io
import json
import logging
import posixpath
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from mcpworld.core.errors import InfraError, MissingWindow, UserError
from mcpworld.core.task import Task
from mcpworld.env.base import Action, Environment, PathStat, ShellResult
from mcpworld.env.context import Goldens
from mcpworld.env.screen import SettlePolicy, settle
from mcpworld.env.steps import run_steps
from mcpworld.env.vm.actions import PREFIX, pyautogui_code
from mcpworld.env.vm.server import VmServer

logger = logging.getLogger(__name__)

TERMINAL_SETTLE_S, TERMINAL_SETTLE_MAX_S = 0.5, 5.0  # /terminal is read again until it holds still this long
# what is at a path (argv[1]) on the VM: "file|dir|other|none MTIME_NS"
STAT_CODE = (
    "import os, stat, sys\n"
    "try:\n    s = os.stat(sys.argv[1])\nexcept OSError:\n"
    "    s = os.lstat(sys.argv[1]) if os.path.lexists(sys.argv[1]) else None\n"
    "kind = 'none' if s is None else 'dir' if stat.S_ISDIR(s.st_mode) else "
    "'file' if stat.S_ISREG(s.st_mode) else 'other'\n"
    "print(kind, s.st_mtime_ns if s else 0)"
)
CLIPBOARD_MARK = "\x1e--mcpworld-clipboard--\x1e"
# the selection's text as UTF8_STRING, else STRING, asked of its owner (what xsel does)
CLIPBOARD_X11 = f"""import json, sys, time
from Xlib import X, display
d = display.Display()
sel = d.intern_atom(WHICH)
if d.get_selection_owner(sel) == X.NONE:
    sys.exit(0)
w = d.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
prop = d.intern_atom('MCPWORLD_SELECTION')
for target, encoding in (('UTF8_STRING', 'utf-8'), ('STRING', 'latin-1')):
    w.convert_selection(sel, d.intern_atom(target), prop, X.CurrentTime)
    d.flush()
    deadline = time.time() + 5
    event = None
    while time.time() < deadline:
        if d.pending_events():
            e = d.next_event()
            if e.type == X.SelectionNotify:
                event = e
                break
        else:
            time.sleep(0.01)
    if event is None:
        sys.exit('the owner of the selection did not answer within 5 s')
    if event.property == X.NONE:
        continue
    reply = w.get_full_property(prop, X.AnyPropertyType)
    if reply is None or reply.property_type == d.intern_atom('INCR'):
        sys.exit(0)
    value = reply.value
    value = value.decode(encoding, 'replace') if isinstance(value, bytes) else str(value)
    sys.stdout.write({CLIPBOARD_MARK!r} + json.dumps(value))
    break
"""
# (JSON: ASCII on the way back, whatever the VM's locale; Windows' console encoding is not UTF-8)
CLIPBOARD_WAA = f"import json, sys, pyperclip; sys.stdout.write({CLIPBOARD_MARK!r} + json.dumps(pyperclip.paste() or ''))"

NO_RESET_NOTE = (
    "env=vm without env.vm.reset_command: the task's setup ran on the VM as it was left by the "
    "episode before (no snapshot was restored)"
)


@dataclass(frozen=True)
class VmSlot:
    """One VM of the pool: its server and the command that resets it (None: none)."""

    url: str
    reset_command: str | None


def vm_slots(vm: Any) -> list[VmSlot]:
    """The VMs the ``env.vm`` section names, in order, each with its own reset command (``{url}`` in a
    command replaced by that VM's URL); UserError naming the key and the fix for a section that does
    not add up."""
    urls = [str(u) for u in vm.urls] if vm.urls is not None else None
    if vm.url and urls is not None:
        raise UserError(
            "env.vm.url and env.vm.urls both name VMs: give one VM as env.vm.url=URL, or a pool "
            "as env.vm.urls=[URL,…] (one VM per concurrent episode)"
        )
    listed = urls if urls is not None else ([str(vm.url)] if vm.url else [])
    if not listed:
        raise UserError(
            "env=vm needs the VM server's address: env.vm.url=http://HOST:5000, or a pool "
            "env.vm.urls=[http://HOST1:5000,http://HOST2:5000] (OSWorld's and WAA's servers "
            "listen on port 5000 inside the VM)"
        )
    for url in listed:
        if not url.startswith(("http://", "https://")):
            raise UserError(f"env.vm: {url!r} is not a VM server's URL: write it as http://HOST:PORT")
    seen = {url.rstrip("/") for url in listed}
    if len(seen) < len(listed):
        raise UserError(
            f"env.vm.urls names a VM twice ({', '.join(listed)}): each concurrent episode needs a "
            "VM of its own (one episode's reset would restart the VM under the other)"
        )
    command, commands = vm.reset_command, vm.reset_commands
    if command and commands is not None:
        raise UserError(
            "env.vm.reset_command and env.vm.reset_commands are both set: give one command "
            "({url} in it names the VM being reset) or one command per VM in env.vm.reset_commands"
        )
    if commands is not None:
        if len(commands) != len(listed):
            raise UserError(
                f"env.vm.reset_commands has {len(commands)} command(s) for {len(listed)} VM(s): give "
                "one per URL of env.vm.urls, in the same order"
            )
        per_vm = [str(c) if c else None for c in commands]
    else:
        if command and len(listed) > 1 and "{url}" not in command:
            raise UserError(
                f"env.vm.reset_command has no {{url}}: with {len(listed)} VMs, each episode's reset "
                "would reset every VM, another episode's too. Put {url} where the command names "
                "the VM to reset, or give env.vm.reset_commands=[…] (one per URL)"
            )
        per_vm = [str(command) if command else None for _ in listed]
    return [VmSlot(url, c.replace("{url}", shlex.quote(url)) if c else None) for url, c in zip(listed, per_vm, strict=True)]


def check_vm_pool(vm: Any, concurrency: int) -> list[VmSlot]:
    """The pool, refused when more episodes would run at once than it has VMs (one VM runs one
    episode: another's reset would restart it under the first)."""
    slots = vm_slots(vm)
    if concurrency > len(slots):
        raise UserError(
            f"concurrency={concurrency} but env=vm has {len(slots)} VM(s): one VM runs one episode at "
            f"a time. Set concurrency={len(slots)} or name more VMs in env.vm.urls=[URL,…]"
        )
    return slots


class _RemoteScreen:
    """The VM's screenshots in the shape settle() polls (size, BGRX bytes)."""

    def __init__(self, vm: VmEnvironment):
        self.vm = vm

    def raw(self) -> tuple[tuple[int, int], bytes]:
        image = self.vm.screenshot()
        return image.size, image.tobytes("raw", "BGRX")


class VmEnvironment(Environment):
    # env.stage: a worker would need a second VM to set up while its first runs an episode
    stages = False

    def __init__(
        self,
        width: int,
        height: int,
        *,
        url: str,
        kind: str = "osworld",
        reset_command: str | None = None,
        ready_timeout_s: float = 300.0,
        request_timeout_s: float = 120.0,
        settle_policy: SettlePolicy | None = None,
    ):
        if not url:
            raise UserError(
                "env=vm needs the VM server's address: env.vm.url=http://HOST:5000 "
                "(OSWorld's and WAA's servers listen on port 5000 inside the VM)"
            )
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
        self._await_desktop()
        self._check_screen()
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        self.cache_dir.mkdir(parents=True)
        self._upload_context(task)
        self.run_steps(task.setup)

    def _check_screen(self) -> None:
        size = self.server.screen_size()
        if size != (self.width, self.height):
            raise UserError(
                f"the VM's screen is {size[0]}x{size[1]}, the run's resolution is "
                f"{self.width}x{self.height}: choose the VM's (resolution.width={size[0]} "
                f"resolution.height={size[1]}) or change the VM's display"
            )

    def _run_reset_command(self) -> None:
        """The provider's reset, its output kept in a file: a command that leaves a process running (a VM
        started in the background) must not keep us waiting on its pipes."""
        log = self.workroot / "reset.log"
        with log.open("w") as out:
            try:
                proc = subprocess.run(
                    self.reset_command or "",
                    shell=True,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    timeout=self.ready_timeout_s,
                )
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

    def run_steps(self, steps: Sequence[object]) -> None:
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
            return home + path[len("/home/user") :].replace("/", sep)
        return path

    def resolve(self, path: str) -> Path:
        return Path(self.vm_path(path))

    # --- step host -------------------------------------------------------------------------------
    def launch(
        self, command: list[str] | str, shell: bool = False, window: str | None = None, timeout_s: float | None = None
    ) -> None:
        self.server.launch(command, shell)
        if window:
            self._await_window(window, timeout_s or 20)

    def _await_desktop(self) -> None:
        """Until the VM's window manager answers: its server answers as soon as it starts, while the
        desktop session it came back with (a reverted snapshot) may still be starting, and a setup
        step's window could not be awaited yet (OSWorld's own runner sleeps 60 s after a reset)."""
        if self.server.dialect.kind != "osworld":
            return
        deadline = time.monotonic() + self.ready_timeout_s
        while (wm := self.server.execute(["wmctrl", "-m"])).returncode != 0:
            if time.monotonic() > deadline:
                raise InfraError(
                    f"the VM's window manager did not answer within {self.ready_timeout_s:.0f}s after "
                    f"its reset (wmctrl -m: {wm.error.strip()[-200:]})"
                )
            time.sleep(0.5)

    def _await_window(self, name: str, timeout_s: float, gone: bool = False) -> None:
        """Until a window titled ``name`` is listed (wmctrl, as OSWorld's VM server activates windows),
        or with ``gone`` no longer listed."""
        if self.server.dialect.kind != "osworld":
            return
        deadline = time.monotonic() + timeout_s
        while True:
            listed = self.server.execute(["wmctrl", "-l"])
            if listed.returncode == 0 and (name.lower() in listed.output.lower()) != gone:
                return
            if gone and time.monotonic() > deadline:
                raise InfraError(
                    f"the window titled {name!r} was still open on the VM {timeout_s:.0f}s after it was asked to close"
                )
            if time.monotonic() > deadline:
                titles = [line.split(None, 3)[-1] for line in listed.output.splitlines() if len(line.split(None, 3)) == 4]
                seen = (
                    f"open: {', '.join(map(repr, titles))}"
                    if listed.returncode == 0 and titles
                    else "none open"
                    if listed.returncode == 0
                    else f"wmctrl: {listed.error.strip()[-200:]}"
                )
                raise MissingWindow(f"no window titled {name!r} appeared on the VM within {timeout_s:.0f}s ({seen})")
            time.sleep(0.5)

    def execute(
        self,
        command: list[str] | str,
        shell: bool = False,
        timeout_s: float = 60,
        env: dict[str, str] | None = None,
        task_code: bool = False,
    ) -> None:
        if env:  # the VM's server takes no variables, and a command line would show them
            raise InfraError(
                "env=vm cannot give a setup command variables of its own (a Klavis task's "
                "preprocess): run such tasks on env=local or env=docker"
            )
        result = self.server.execute(command, shell=shell, setup=True)
        if result.returncode != 0:
            logger.info("a setup command exited %s on the VM: %s", result.returncode, result.error.strip()[-300:])

    def open_path(self, path: str, app: str | None = None, window: str | None = None, timeout_s: float | None = None) -> None:
        self.server.open_file(self.vm_path(path))
        if window:
            self._await_window(window, timeout_s or 20)

    def activate_window(self, pattern: str, timeout_s: float = 5, strict: bool = False, by_class: bool = False) -> None:
        self.server.window("activate", pattern, strict, by_class)

    def close_window(
        self, pattern: str, timeout_s: float = 5, strict: bool = False, by_class: bool = False, wait: bool = False
    ) -> None:
        self.server.window("close", pattern, strict, by_class)
        if wait:  # the server shows no window's process: its window gone from wmctrl is the nearest sign
            self._await_window(pattern, timeout_s, gone=True)

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
        result = self.server.python(PREFIX + pyautogui_code(action, self.server.dialect.kind))
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
        return ShellResult(
            result.returncode, stdout[:max_output], stderr[:max_output], timed_out=result.returncode == 124, truncated=truncated
        )

    def read_file(self, path: str) -> bytes:
        return self.server.file(self.vm_path(path))

    def list_dir(self, path: str) -> list[str]:
        return self.server.list_directory(self.vm_path(path))

    def accessibility_tree(self, timeout_s: float = 60.0) -> str:
        return self.server.accessibility()

    def stat(self, path: str) -> PathStat | None:
        """What is at a task path on the VM, asked of the VM's Python (one /execute)."""
        result = self.server.execute([self.server.dialect.python, "-c", STAT_CODE, self.vm_path(path)])
        lines = result.output.strip().splitlines()
        if result.returncode != 0 or not lines:
            raise InfraError(f"the VM could not tell what is at {path}: {result.error.strip()[-300:]}")
        kind, _, mtime = lines[-1].partition(" ")  # the last line: python-xlib may warn before it
        return None if kind == "none" else PathStat(kind, int(mtime))

    # --- what only the VM's server can tell (OSWorld's getters ask it) -----------------------------
    def terminal_output(self) -> str | None:
        """The text of the VM's focused terminal (``GET /terminal``), read until it holds still: a
        command a postconfig step has just entered may still be drawing its output."""
        text = self.server.terminal()
        deadline = time.monotonic() + TERMINAL_SETTLE_MAX_S
        while text is not None and time.monotonic() < deadline:
            time.sleep(TERMINAL_SETTLE_S)
            again = self.server.terminal()
            if again == text:
                break
            text = again
        return text

    def window_size(self, app_class_name: str) -> dict[str, int] | None:
        return self.server.window_size(app_class_name)

    def wallpaper(self) -> bytes | None:
        return self.server.wallpaper()

    def clipboard(self, selection: str = "CLIPBOARD") -> str | None:
        """The text of an X selection on OSWorld's VM (python-xlib, as ``xsel`` reads it), or of the
        Windows clipboard on WAA's (pyperclip); None when it holds no text."""
        waa = self.server.dialect.kind == "waa"
        code = CLIPBOARD_WAA if waa else f"WHICH = {selection!r}\n" + CLIPBOARD_X11
        result = self.server.python(code)
        if result.returncode != 0:
            raise InfraError(f"the VM could not read its clipboard: {result.error.strip()[-300:]}")
        marker = result.output.rfind(CLIPBOARD_MARK)  # python-xlib may warn on stdout before it
        if marker < 0:
            return None
        value = json.loads(result.output[marker + len(CLIPBOARD_MARK) :])
        return str(value) or None
