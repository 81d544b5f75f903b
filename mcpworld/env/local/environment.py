"""The local backend: a fresh Xvfb desktop on this host for each episode."""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from PIL.Image import Image

from mcpworld.apps.programs import Program, command_name, desktop_values, is_port_forwarder, program_for, wait_http, write_shims
from mcpworld.core.errors import InfraError, MissingWindow, UserError
from mcpworld.core.paths import APPS
from mcpworld.core.steps import parse_steps
from mcpworld.core.task import Task
from mcpworld.env import screen
from mcpworld.env.base import Action, Environment, ShellResult
from mcpworld.env.context import Goldens, copy_into_home, require_binary
from mcpworld.env.local import desktop_user, leftovers, mountns, office_registry, relay
from mcpworld.env.local.cgroup import DesktopCgroup
from mcpworld.env.local.confine import Confinement
from mcpworld.env.local.display import VirtualDisplay
from mcpworld.env.local.kill_commands import await_gone, kill_target
from mcpworld.env.local.netns import NetNamespace, require_fence
from mcpworld.env.local.pool import DesktopPool, PreparedDesktop
from mcpworld.env.local.processes import run_bounded, scrubbed_env
from mcpworld.env.local.windows import Windows
from mcpworld.env.local.xinput import XInput
from mcpworld.env.steps import run_steps

logger = logging.getLogger(__name__)


def _exited(pid: int) -> bool:
    """The process is gone or a zombie (it has quit; its parent has not reaped it yet)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def default_workroot() -> Path:
    """A fresh work folder owned by this process (a killed run's folders are reaped by a later one)."""
    workroot = Path(tempfile.mkdtemp(prefix=leftovers.PREFIX, dir=leftovers.work_bases()[0]))
    leftovers.claim(workroot)
    return workroot


def require_open_to_desktops(workroot: Path) -> None:
    """The desktop accounts (apps and the agent's shell run as one when the harness is root) must
    reach their home inside ``workroot``: a folder above it closed to others (a root-only TMPDIR,
    pytest's /tmp/pytest-of-root) would otherwise fail later, obscurely, as a bus that never starts."""
    if os.geteuid() != 0:
        return  # no accounts: the desktop runs as the harness's own user
    for folder in reversed(workroot.parents):
        mode = folder.stat().st_mode
        if not mode & 0o001:
            raise UserError(
                f"the desktop work folder {workroot} is under {folder} (mode {mode & 0o7777:o}), "
                "which the unprivileged desktop accounts cannot enter: set "
                f"{leftovers.WORK_BASE_VARIABLE} (or TMPDIR) to a folder others may enter, e.g. /tmp"
            )


WARM_ROOT = APPS / "warm"
# a site on the host's loopback that a step or the episode's own settings name (a test's file
# server, the event sink): reachable from an isolated desktop, unlike every other host port
LOOPBACK_URL = re.compile(r"https?://(?:127\.0\.0\.1|localhost):(\d+)")
# env.network: a namespace behind the fence, or refused; a namespace as far as the machine allows
# (warned); the host's network (docs/isolation.md)
NETWORKS = ("isolated", "isolated_unfenced", "host")
UNIX_PATH_MAX = 107  # bytes of a unix socket's path (sun_path holds 108 with its NUL)


def warm_layer(program: Program, programs: Sequence[Program], root: Path = WARM_ROOT) -> Path | None:
    """The files ``program`` writes on its first start that make later starts fast (its ``warm``
    paths, e.g. GIMP's plug-in registry: ≈ 2.4 s to ready instead of 4–8 s), made once per machine
    and program version by starting it on a scratch desktop, then laid into every home."""
    binary = shutil.which(program.binary) if program.warm else None
    if binary is None:  # nothing to warm, or the program is not installed
        return None
    real = Path(os.path.realpath(binary))
    target = root / f"{program.app}-{real.stat().st_size}-{real.stat().st_mtime_ns}"
    if target.is_dir():
        return target
    task = Task(
        id=f"warm/{program.app}",
        app=program.app,
        instruction="-",
        dir=root,
        source=root,
        setup=parse_steps(
            [{"launch": {"command": [program.names[0]], "window": program.window or program.names[0], "timeout": 120}}], "warm"
        ),
    )
    with LocalEnvironment(1000, 1000, programs=programs) as scratch:
        scratch.goldens = Goldens(
            scratch.workroot / "golden", lambda: [p.profile for p in programs if p.profile and p.app == program.app]
        )
        scratch.reset(task, scratch.workroot / "warm-episode")
        time.sleep(1.0)  # let it finish writing what it writes at start
        scratch.end_episode()
        root.mkdir(parents=True, exist_ok=True)
        made = Path(tempfile.mkdtemp(prefix=f".{program.app}-", dir=root))
        for rel in program.warm:
            source = scratch.home / rel
            if source.exists():
                copy_into_home(source, made / rel)
        keep_golden_settings(made, program.profile)
    try:
        made.rename(target)
    except OSError:  # another desktop made it meanwhile
        shutil.rmtree(made, ignore_errors=True)
    return target


def keep_golden_settings(made: Path, profile: Path | None) -> None:
    """A warm LibreOffice settings file over the golden one: the golden items and the first start's
    additions (env/local/office_registry.py), not the first start's file alone, which drops some."""
    if profile is None:
        return
    for warm_file in made.rglob(office_registry.FILE_NAME):
        golden_file = profile / warm_file.relative_to(made)
        if golden_file.is_file():
            started = warm_file.read_text(encoding="utf-8")
            warm_file.write_text(office_registry.merged(golden_file.read_text(encoding="utf-8"), started), encoding="utf-8")


@dataclass
class Launched:
    """An app a setup step launched: watched so its exit during the episode is reported."""

    argv: list[str]
    proc: subprocess.Popen
    window: int
    pattern: str
    reported: bool = False


class LocalEnvironment(Environment):
    def __init__(
        self,
        width: int,
        height: int,
        *,
        window_manager: str = "openbox",
        settle_policy: screen.SettlePolicy | None = None,
        workroot: Path | None = None,
        app_timeout_s: float = 20.0,
        programs: Sequence[Program] = (),
        network: str = "host",
        pool: int = 1,
        files: str = "open",
        hidden: Sequence[Path] = (),
        handed: Sequence[Path] = (),
    ):
        """``files``: ``hidden`` gives the desktop's processes a mount namespace in which the
        benchmark's files (the built-in tasks and solutions, and ``hidden``: the run's task roots,
        solutions, outputs) are not there, and the suites' paths (/home/user, /workspace …) are
        views of its home (env/local/mountns.py); ``handed``: files a task's setup runs from its folder,
        kept in view. ``open``: the host's files as the account's permissions allow."""
        if pool < 1:
            raise UserError(
                f"env.pool={pool}: must be 1 or more (1: each reset starts its desktop; "
                "2: the next desktop is prepared while an episode runs)"
            )
        if network not in NETWORKS:
            raise UserError(f"env.network={network}: must be one of {', '.join(NETWORKS)}")
        if network == "isolated":  # refused before any desktop starts when it cannot be fenced (pooled ones too)
            require_fence()
        if files not in mountns.FILES:
            raise UserError(f"env.files={files}: must be one of {', '.join(mountns.FILES)}")
        if files == "hidden":  # the same: one line before any desktop starts
            mountns.require()
        self._files = files
        self.suite_paths = files == "hidden"  # the suites' paths (/home/user, /workspace …) are its namespace's views
        self._hidden, self._handed_files = tuple(hidden), tuple(handed)
        self.width, self.height = width, height
        self.window_manager = window_manager
        self.settle_policy = settle_policy or screen.SettlePolicy()
        self.app_timeout_s = app_timeout_s
        self._own_workroot = workroot is None
        self.workroot = workroot or default_workroot()
        self.workroot.chmod(0o711)  # the desktop account reaches its home inside, lists nothing
        try:
            require_open_to_desktops(self.workroot)
        except UserError:
            if self._own_workroot:
                shutil.rmtree(self.workroot, ignore_errors=True)
            raise
        self.home = self.workroot / "home"
        self.home.mkdir(mode=0o700, exist_ok=True)  # (a view of it may be made before the first restore)
        self.runtime_dir = self.workroot / "run"
        self.cache_dir = self.workroot / "cache"
        # env.pool ≥ 2: each episode's desktop (its account, cgroup, network and display) comes ready
        # from the pool (env/local/pool.py); 1: one account, cgroup and network for this one's lifetime
        self._network = network
        self._slot = desktop_user.acquire() if pool == 1 else desktop_user.UserSlot(None, None)
        self.user = self._slot.user  # apps, setup commands and the agent's shell run as this account
        self.programs = list(programs)
        self.bin_dir = self.workroot / "bin"  # first on PATH: google-chrome, libreoffice, vlc … as tasks name them
        self.values = desktop_values(self.programs, self.home)
        write_shims(self.programs, self.bin_dir, self.values)
        # per-desktop ports of the apps' control interfaces (Chromium's DevTools, VLC's HTTP …), for getters
        self.ports = {k[len("port_") :]: v for k, v in self.values.items() if k.startswith("port_")}
        self.app_password = self.values["password"]
        # every process the desktop starts lands in its cgroup (killed whole at teardown) and, with
        # env.network=isolated, in a network namespace of its own (see docs/isolation.md)
        self._host_relays: list[relay.Relay] = []  # on the host's network: the app ports served on unix sockets
        self.netns: NetNamespace | None = None
        files_ns: mountns.MountNamespace | None = None
        try:
            self.netns = (
                NetNamespace.create(unfenced_ok=network == "isolated_unfenced") if network != "host" and pool == 1 else None
            )
            files_ns = mountns.MountNamespace.create(self._file_view(None)) if files == "hidden" and pool == 1 else None
        except BaseException:
            if self.netns:
                self.netns.close()
            self._slot.release()
            if self._own_workroot:
                shutil.rmtree(self.workroot, ignore_errors=True)
            raise
        self._note_network()
        self.confinement = Confinement(DesktopCgroup.create(self.workroot.name) if pool == 1 else None, self.netns, files_ns)
        if pool == 1:
            self._bind_ports()
        self._exposed: set[int] = set()
        self.display: VirtualDisplay | None = None
        self.input: XInput | None = None
        self.windows: Windows | None = None
        self.screen: screen.Screen | None = None
        self.log_dir: Path | None = None
        self.task: Task | None = None
        self.goldens = Goldens(self.workroot / "golden", self._app_layers)
        self._launches = 0
        self.launched: list[Launched] = []
        self._prepared: PreparedDesktop | None = None  # env.pool ≥ 2: this episode's desktop
        self._pool_wait_s = 0.0
        self._pool = DesktopPool(self._prepare_desktop, pool - 1) if pool > 1 else None

    def _file_view(self, folder: Path | None) -> mountns.FileView:
        """What this desktop's processes see (env.files=hidden); ``folder``: a pooled desktop's own."""
        own = [self.workroot, *([folder] if folder else [])]
        return mountns.desktop_view(self.home, own, self._hidden, self._handed_files)

    @property
    def files_effective(self) -> str:
        """``hidden`` when this desktop's processes see only what it hands them (env/local/mountns.py)."""
        return "hidden" if self.confinement.mountns or (self._pool is not None and self._files == "hidden") else "open"

    def _note_network(self) -> None:
        self.network_effective = self.netns.effective if self.netns else "host"
        self.notes = []
        if self._network != "host" and self.network_effective != "isolated":  # each result says what it got
            self.notes = [
                f"env.network={self._network} was asked; this desktop's network: {self.network_effective} (docs/isolation.md)"
            ]

    # --- lifecycle ---------------------------------------------------------------------------
    def reset(self, task: Task, episode_dir: Path) -> None:
        self.end_episode()
        self.task = task
        try:
            if self._pool is not None:  # first: the home is restored for the account it runs as
                self._install(self._take_desktop())
            self.goldens.restore(task, self.home, owner=(self.user.uid, self.user.gid) if self.user else None)
            shutil.rmtree(self.cache_dir, ignore_errors=True)
            self.cache_dir.mkdir(parents=True, mode=0o700)
            self._expose_named_sites(json.dumps(task.evaluator.spec if task.evaluator else {}, default=str))  # its getters' sites
            self.start_desktop(episode_dir / "logs")
            self.run_steps(task.setup)
        finally:
            if self._pool is not None:  # the next desktop starts while this episode runs
                self._pool.refill()

    # --- env.pool ≥ 2 ------------------------------------------------------------------------------
    def _prepare_desktop(self, extra_env: dict[str, str] | None = None) -> PreparedDesktop:
        return PreparedDesktop.start(
            self.width,
            self.height,
            self.window_manager,
            self._network,
            lambda runtime_dir: self._desktop_env(runtime_dir, extra_env or {}),
            self._file_view if self._files == "hidden" else None,
        )

    def _take_desktop(self) -> PreparedDesktop:
        assert self._pool is not None
        began = time.monotonic()
        # an episode's own variables (a live hook's sink, a grant's credentials) reach its bus and
        # window manager too (a terminal opened by ctrl+alt+t has them): that desktop is its own
        desktop = self._prepare_desktop(dict(self.extra_env)) if self.extra_env else self._pool.take()
        self._pool_wait_s = time.monotonic() - began
        return desktop

    def _bind_ports(self, tries: int = 5) -> None:
        """Bind the host's side of the apps' ports (``_serve_ports``). A number drawn free can be
        taken before it is bound (another job's desktop, an outgoing connection's local port): then
        every port is drawn again, and the shims rewritten, before anything used them."""
        for attempt in range(tries):
            try:
                self._serve_ports()
                return
            except OSError as exc:
                self._unserve_ports()
                if exc.errno != errno.EADDRINUSE or attempt == tries - 1:
                    raise InfraError(f"the desktop's ports could not be forwarded from the host: {exc}") from exc
                logger.info("a drawn port was taken before its forward (%s); drawing the ports again", exc)
                self.values = desktop_values(self.programs, self.home)
                write_shims(self.programs, self.bin_dir, self.values)
                self.ports = {k[len("port_") :]: v for k, v in self.values.items() if k.startswith("port_")}
                self.app_password = self.values["password"]

    def _socket_paths(self) -> dict[str, Path]:
        """The app ports served on a unix socket (``Program.sockets``: code-server's), each at
        ``$XDG_RUNTIME_DIR/<port name>.sock``, in the desktop's runtime folder (0700, its account's)."""
        paths = {
            name: self.runtime_dir / f"{name}.sock" for program in self.programs for name in program.sockets if name in self.ports
        }
        for path in paths.values():
            if len(os.fsencode(path)) > UNIX_PATH_MAX:
                raise UserError(
                    f"the desktop's socket {path} is longer than a unix socket's path may be "
                    f"({UNIX_PATH_MAX} bytes): set {leftovers.WORK_BASE_VARIABLE} to a shorter folder"
                )
        return paths

    def _serve_ports(self) -> None:
        """Where the harness reaches this desktop's apps, and nobody else on the machine does. With a
        namespace, each app port is forwarded from the host's loopback, for the harness's uid only
        (``NetNamespace.forward``), and a port served on a unix socket is relayed to that socket inside
        the namespace too (the app's own window connects by TCP). On the host's network, the apps
        listen on the host's loopback themselves; a port served on a unix socket gets a relay there
        that admits the harness and the desktop's account only (``relay.PeerGate``)."""
        sockets = self._socket_paths()
        if self.netns:
            for name, port in self.ports.items():
                path = sockets.get(name)
                self.netns.forward(int(port), relay.to_unix(path) if path else None)
                if path:
                    self.netns.serve_unix(int(port), path)
            return
        uids = relay.harness_uids(self.user.uid if self.user else None)
        for name, path in sockets.items():
            port = int(self.ports[name])
            gate = relay.PeerGate(uids, f"the desktop's {name} port {port}")
            self._host_relays.append(relay.Relay(relay.listen_tcp(port), relay.to_unix(path), f"{name}-{port}", gate))

    def _unserve_ports(self) -> None:
        if self.netns:
            self.netns.close_ports()
        for made in self._host_relays:
            made.close()
        self._host_relays = []

    def _install(self, desktop: PreparedDesktop) -> None:
        """Make ``desktop`` this one's: its account, runtime folder, cgroup and network."""
        self._prepared = desktop
        self.user, self.runtime_dir = desktop.user, desktop.runtime_dir
        self.netns, self.confinement = desktop.netns, desktop.confinement
        self._note_network()
        try:
            self._serve_ports()
        except OSError as exc:
            self._retire()
            raise InfraError(f"the desktop's ports could not be forwarded from the host: {exc}") from exc

    def _retire(self) -> None:
        """Stop the episode's desktop for good (its removal goes on in the background); until the
        next is installed no command can run as its account, which another desktop may take now."""
        desktop, self._prepared = self._prepared, None
        for made in self._host_relays:  # (the namespace's forwards go with desktop.stop)
            made.close()
        self._host_relays = []
        self.user, self.netns, self.confinement = None, None, Confinement()
        self.runtime_dir = self.workroot / "run"
        if desktop is None or self._pool is None:
            return
        try:
            desktop.stop()
        finally:
            self._pool.retire(desktop)

    def spares(self) -> list[PreparedDesktop]:
        """env.pool ≥ 2: the desktops ready for the next resets (none while still being started)."""
        return self._pool.spares() if self._pool else []

    # --- the desktop -----------------------------------------------------------------------------

    def _app_layers(self) -> list[Path]:
        """The apps' golden profiles, then their first-start files (see ``warm_layer``)."""
        profiles = list(dict.fromkeys(p.profile for p in self.programs if p.profile))
        return profiles + [w for w in (warm_layer(p, self.programs) for p in self.programs) if w]

    def start_desktop(self, log_dir: Path) -> None:
        """A fresh display (X server, session bus, window manager) over the home as it is now: with
        env.pool ≥ 2 the one the reset took, else one started now."""
        if self._pool is None or self._prepared is None or self.display is not None:
            self.end_episode()
            if self._pool is not None:  # not from reset: a desktop taken now, the next one started after
                self._install(self._take_desktop())
                self._pool.refill()
        self.log_dir = log_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.launched = []
        if self._prepared is not None:
            self.display = self._prepared.display
            self._expose_named_sites(json.dumps(self.extra_env))
        else:
            shutil.rmtree(self.runtime_dir, ignore_errors=True)
            self.runtime_dir.mkdir(parents=True, mode=0o700)
            if self.user:
                self.user.own(self.runtime_dir)
            self.display = VirtualDisplay(
                self.width, self.height, self.window_manager, desktop_id=str(self.workroot), confinement=self.confinement
            )
            self._expose_named_sites(json.dumps(self.extra_env))
            self.display.start(self._base_env(), user=self.user)
            if self._own_workroot:
                leftovers.record_display(self.workroot, self.display.number)
        pooled = {"pool_wait_s": round(self._pool_wait_s, 4)} if self._pool is not None else {}
        (self.log_dir / "desktop.json").write_text(
            json.dumps(
                {
                    "display": self.display.name,
                    "xauthority": self.display.env.get("XAUTHORITY"),
                    "user": self.user.name if self.user else None,
                    "ports": self.ports,
                    "network": self.network_effective,
                    "files": self.files_effective,
                    "cgroup": str(self.confinement.cgroup.path) if self.confinement.cgroup else None,
                    **pooled,
                }
            )
        )
        self.input = XInput(self.display.name)
        self.windows = Windows(self.display.name)
        self.screen = screen.Screen(self.display.name)

    def run_steps(self, steps: Sequence[object]) -> None:
        self._expose_named_sites(json.dumps(steps, default=str))
        run_steps(self, steps, where=str(self.task.source) if self.task else "steps")

    def _expose_named_sites(self, text: str) -> None:
        """Open to an isolated desktop the host loopback ports ``text`` names and the host serves
        now (the episode's sink, a test's web server); a port nothing on the host serves is the
        desktop's own (a server its setup starts) and stays inside."""
        if self.netns is None:
            return
        for port in {int(p) for p in LOOPBACK_URL.findall(text)} - self._exposed - {int(p) for p in self.ports.values()}:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            except OSError:
                continue
            try:
                self.netns.expose(port)
            except OSError as exc:  # the desktop itself listens there already
                logger.info("host port %d not opened to the desktop: %s", port, exc)
                continue
            self._exposed.add(port)
            logger.info("host port %d (named by the episode) is open to the isolated desktop", port)

    def confined(self, argv: list[str]) -> list[str]:
        """``argv`` as the desktop runs it: its account, its cgroup, its network (MCP servers)."""
        if self._pool is not None and self._prepared is None:
            raise InfraError("the desktop is not running (reset() first)")
        return self.confinement.wrap(argv, self.user)

    def end_episode(self) -> None:
        for part in (self.input, self.windows, self.screen):
            if part:
                part.close()
        self.input = self.windows = self.screen = None
        self.launched = []
        if self.display:
            if self._pool is None:  # (a pooled desktop's is stopped by _retire)
                self.display.stop()
            self.display = None
        self.confinement.kill()  # what a shell command left running without a display
        if self.netns:
            for port in self._exposed:
                self.netns.unexpose(port)
        self._exposed.clear()
        if self._pool is not None:  # a desktop serves one episode
            self._retire()

    def kill(self) -> None:
        """Stop the desktop's processes now, from any thread (an interrupt whose episode does not
        end by itself): the episode's next X or shell call fails and it ends."""
        display = self.display
        if display and display.procs:
            display.procs.stop(grace_s=0.2)

    def close(self) -> None:
        self.end_episode()
        if self._pool is not None:
            self._pool.close()
        self._unserve_ports()
        if self.netns:
            self.netns.close()
        if self.confinement.mountns:
            self.confinement.mountns.close()
        if self.confinement.cgroup:
            self.confinement.cgroup.remove()
        if self._own_workroot:
            shutil.rmtree(self.workroot, ignore_errors=True)
        self._slot.release()

    @property
    def env(self) -> dict[str, str]:
        if not self.display:
            raise InfraError("the desktop is not running (reset() first)")
        return self.display.env

    # --- step host -----------------------------------------------------------------------------
    def _argv(self, command: list[str] | str, shell: bool) -> list[str]:
        if shell:
            return ["bash", "-c", self.map_paths(command if isinstance(command, str) else shlex.join(command))]
        argv = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
        return [str(self.resolve(a)) if a.startswith("~") else self.map_paths(a) for a in argv]

    def launch(
        self, command: list[str] | str, shell: bool = False, window: str | None = None, timeout_s: float | None = None
    ) -> None:
        argv = self._argv(command, shell)
        if is_port_forwarder(shlex.split(argv[-1]) if shell else argv):
            logger.info("not starting %s: this desktop serves its apps' ports itself", shlex.join(argv)[:200])
            return
        name = command_name(argv[-1]) if shell else argv[0]
        program = program_for(self.programs, name)
        if program and program.missing_reason():
            raise InfraError(f"cannot start {name}: {program.missing_reason()}")
        if not shell:
            require_binary(argv[0], search=self._base_env()["PATH"])
        procs, windows, log_dir = self.display.procs if self.display else None, self._windows(), self.log_dir
        assert procs is not None and log_dir is not None, "the desktop is not running (reset() first)"
        self._launches += 1
        log = open(log_dir / f"{self._launches:02d}-{Path(argv[0]).name}.log", "wb")  # noqa: SIM115 - kept open beyond this block
        proc = procs.spawn(argv, env=self.env, cwd=str(self.home), stdout=log, stderr=log, user=self.user)
        log.close()
        # a suite's launch names no window: the program's own main window, else one named like it
        pattern = window or (program.window if program and program.window else Path(name).name)
        deadline = time.monotonic() + (timeout_s or self.app_timeout_s)
        # a command that is no app of ours and ends without a window was a command (OSWorld's
        # `launch: pkill vlc`), not an app that failed to start: its launch is done
        is_command = window is None and program is None
        closed: set[int] = set()  # matching windows that closed while awaited: an old instance's, going
        while True:
            wid = windows.wait(
                pattern,
                max(0.0, deadline - time.monotonic()),
                give_up=(lambda: proc.poll() is not None) if is_command else None,
                ignore=closed,
            )
            if wid is None and is_command and proc.poll() is not None:
                logger.info("launch of %s ended (exit %s) without a window: a command", name, proc.returncode)
                self._await_killed(shlex.split(argv[-1]) if shell else argv, deadline)
                return
            if wid is None:
                tail = (log_dir / Path(log.name).name).read_text(errors="replace")[-400:].strip()
                state = f"exited with {proc.returncode}" if proc.poll() is not None else "is running"
                raise InfraError(
                    f"{argv[0]} {state} but no window matching {pattern!r} appeared within "
                    f"{timeout_s or self.app_timeout_s:.0f}s" + (f"; its output: {tail}" if tail else "")
                )
            windows.activate(wid)
            if self._await_ready(Path(name).name, program, wid, deadline):
                break
            closed.add(wid)  # e.g. `pkill chrome; google-chrome`: the killed browser's window, found first
        if program and "cdp" in program.ports:  # chrome:// pages, which Chromium ignores on its command line
            from mcpworld.env.chrome_steps import open_command_line_pages

            open_command_line_pages(self.ports.get("cdp"), argv)
        self.launched.append(Launched(argv, proc, wid, pattern))

    def _await_killed(self, argv: list[str], deadline: float) -> None:
        """A ``pkill``/``killall`` step is done when what it stopped is gone (env/local/kill_commands.py)."""
        target = kill_target(argv)
        cgroup = self.confinement.cgroup
        if target is None or cgroup is None:
            return
        if not await_gone(target, cgroup.pids, max(5.0, deadline - time.monotonic())):
            logger.warning("%s: processes matching %r still run; the next step goes on", shlex.join(argv), target.pattern)

    def app_pid(self) -> int | None:
        for app in reversed(self.launched):
            pid = self.windows.pid(app.window) if self.windows else None
            if pid or app.proc.poll() is None:
                return pid or app.proc.pid
        return None

    def _await_ready(self, name: str, program: Program | None, wid: int, deadline: float) -> bool:
        """Ready means it takes input: its window answers a ping, and the program's own control
        interface (Chromium's DevTools, VLC's HTTP) answers when it has one. False: the window
        closed meanwhile (another window is to be awaited)."""
        windows = self._windows()
        if not windows.responds(wid, max(0.5, deadline - time.monotonic())):
            if wid not in {w for w, _, _ in windows.list()} and time.monotonic() < deadline:
                return False
            raise InfraError(f"{name}'s window appeared but does not answer input")
        if program and program.maximized:
            windows.maximize(wid)
        url = program.ready.get("http") if program else None
        if url and not wait_http(url.format(**self.values), deadline):
            raise InfraError(f"{name}'s window answers but {url.format(**self.values)} did not")
        return True

    def restore_access(self) -> bool:
        return bool(self.windows and self.windows.restore_access_control())

    def app_exits(self) -> list[dict[str, Any]]:
        """Launched apps that exited since the last call: their process ended and their window is gone."""
        if not self.launched or not self.windows:
            return []
        exits = []
        open_windows = None
        for app in self.launched:
            if app.reported or app.proc.poll() is None:
                continue
            if open_windows is None:
                open_windows = {wid for wid, _, _ in self.windows.list()}
            if app.window in open_windows:  # the launcher handed over to a process that still runs
                continue
            app.reported = True
            exits.append(
                {
                    "app": Path(app.argv[0]).name,
                    "command": shlex.join(app.argv)[:300],
                    "returncode": app.proc.returncode,
                    "window": app.pattern,
                    "argv": app.argv,
                }
            )
        return exits

    def relaunch(self, exited: dict[str, Any]) -> None:
        self.launch(exited["argv"], window=exited["window"])

    def execute(
        self,
        command: list[str] | str,
        shell: bool = False,
        timeout_s: float = 60,
        env: dict[str, str] | None = None,
        task_code: bool = False,
    ) -> None:
        """``env``: variables for this command only (a task's preprocess), never the desktop's.
        ``task_code``: the task's own preprocess, run (before the agent's first step) with the host's
        files in view, as its code imports from its task folder (env.files=hidden hides that folder)."""
        result = self._run(self._argv(command, shell), timeout_s, 4000, env, task_code)
        if result.returncode != 0:
            raise InfraError(f"setup command {command!r} exited {result.returncode}: {result.stderr.strip()[-300:]}")

    def open_path(self, path: str, app: str | None = None, window: str | None = None, timeout_s: float | None = None) -> None:
        app = app or (self.task.app if self.task else None)
        if app is None:
            raise InfraError(f"no app to open {path!r} with: the step names none and no task is set (reset() first)")
        # a catalog app (libreoffice_calc) opens through its command (libreoffice), awaiting its window
        program = next((p for p in self.programs if p.app == app), None)
        command = program.names[0] if program else app
        self.launch([command, str(self.resolve(path))], window=window or (None if program else app), timeout_s=timeout_s)

    def activate_window(self, pattern: str, timeout_s: float = 5, strict: bool = False, by_class: bool = False) -> None:
        windows = self._windows()
        wid = windows.wait_named(pattern, timeout_s, strict, by_class)  # as OSWorld's wmctrl finds it
        if wid is None:
            raise MissingWindow(f"no window matching {pattern!r} to activate")
        windows.activate(wid)

    def close_window(
        self, pattern: str, timeout_s: float = 5, strict: bool = False, by_class: bool = False, wait: bool = False
    ) -> None:
        """``wait``: until the window's process has exited (it wrote what it held back), within timeout_s."""
        windows = self._windows()
        deadline = time.monotonic() + timeout_s
        wid = windows.wait_named(pattern, timeout_s, strict, by_class)
        if wid is None:
            raise MissingWindow(f"no window matching {pattern!r} to close")
        pid = windows.pid(wid) if wait else None
        windows.close_window(wid)
        if not wait:
            return
        while not _exited(pid) if pid else windows.find_named(pattern, strict, by_class) is not None:
            if time.monotonic() > deadline:
                raise InfraError(f"the app of window {pattern!r} still ran {timeout_s:.0f}s after it was asked to close")
            time.sleep(0.05)

    def copy_in(self, src: str, dest: str) -> None:
        target = self.resolve(dest)
        copy_into_home(Path(src), target)
        if self.user:  # the copy and any folder made for it
            self.user.own(target, *(p for p in target.parents if self.home in p.parents))

    # --- agent-facing ----------------------------------------------------------------------------
    def screenshot(self) -> Image:
        with self._display_checked():
            return self._screen().grab()

    def raw_frame(self) -> tuple[tuple[int, int], bytes]:
        """The screen as grabbed (BGRX bytes), for a caller that builds the image elsewhere."""
        with self._display_checked():
            return self._screen().raw()

    def settle(self, before: Image | None = None) -> Image:
        with self._display_checked():
            frame, _ = screen.settle(self._screen(), before, self.settle_policy)
        return frame

    def _screen(self) -> screen.Screen:
        assert self.screen is not None, "the desktop is not running (reset() first)"
        return self.screen

    def _input(self) -> XInput:
        assert self.input is not None, "the desktop is not running (reset() first)"
        return self.input

    def _windows(self) -> Windows:
        assert self.windows is not None, "the desktop is not running (reset() first)"
        return self.windows

    @contextmanager
    def _display_checked(self) -> Iterator[None]:
        """An X call that fails because the X server died is the environment's failure, not the agent's."""
        try:
            yield
        except InfraError:
            raise
        except Exception as exc:
            if self.display is None or not self.display.alive():
                name = self.display.name if self.display else "the display"
                raise InfraError(f"the X server {name} died ({type(exc).__name__}: {exc})".replace(" ()", "")) from exc
            raise

    def act(self, action: Action) -> None:
        with self._display_checked():
            self._act(action)

    def _act(self, action: Action) -> None:
        kind = action["kind"]
        inp = self._input()
        if kind == "move":
            inp.move(self._x(action["x"]), self._y(action["y"]))
        elif kind == "click":
            x, y = action.get("x"), action.get("y")
            inp.click(
                None if x is None else self._x(x),
                None if y is None else self._y(y),
                int(action.get("button", 1)),
                int(action.get("count", 1)),
            )
        elif kind in ("down", "up"):
            inp.button(int(action.get("button", 1)), kind == "down")
        elif kind == "drag":
            inp.drag(self._x(action["x0"]), self._y(action["y0"]), self._x(action["x"]), self._y(action["y"]))
        elif kind == "scroll":
            x, y = action.get("x"), action.get("y")
            inp.scroll(
                action["direction"],
                int(action.get("amount", 3)),
                None if x is None else self._x(x),
                None if y is None else self._y(y),
            )
        elif kind == "key":
            inp.key(action["keys"])
        elif kind == "type":
            inp.type(action["text"])
        elif kind in ("key_down", "key_up"):
            inp.hold(action["keys"], kind == "key_down")
        else:
            raise ValueError(f"unknown action kind {kind!r}")

    def _x(self, x: float) -> int:
        return min(max(round(x), 0), self.width - 1)

    def _y(self, y: float) -> int:
        return min(max(round(y), 0), self.height - 1)

    def cursor_position(self) -> tuple[int, int]:
        with self._display_checked():
            return self._input().pointer()

    def shell(self, command: str, timeout: float = 30.0, max_output: int = 20_000) -> ShellResult:
        return self._run(["bash", "-c", command], timeout, max_output)

    def window_rows(self) -> list[tuple[str, str, str]]:
        """Read from the X server in-process, on a connection of the caller's own (wait_for polls from
        a worker thread): ≈ 1 ms, where the shell's listing costs ≈ 40 ms of CPU a poll."""
        if self.display is None:
            raise InfraError("the desktop is not running (reset() first)")
        with self._display_checked():
            lister = Windows(self.display.name)
            try:
                return lister.rows()
            finally:
                lister.close()

    def _base_env(self) -> dict[str, str]:
        return self._desktop_env(self.runtime_dir, self.extra_env)

    def _desktop_env(self, runtime_dir: Path, extra_env: dict[str, str]) -> dict[str, str]:
        env = scrubbed_env(self.home, runtime_dir)
        env["PATH"] = f"{self.bin_dir}:{env['PATH']}"
        env["TMPDIR"] = str(runtime_dir)  # the desktop's own temp folder, fresh with each desktop
        env.update(extra_env)
        return env

    def _run(
        self, argv: list[str], timeout: float, max_output: int, extra: dict[str, str] | None = None, task_code: bool = False
    ) -> ShellResult:
        if self._pool is not None and self._prepared is None:  # its account may be another desktop's by now
            raise InfraError("the desktop is not running (reset() first)")
        env = self.display.env if self.display else self._base_env()
        env = {**env, **extra} if extra else env
        confinement = self.confinement.files_open() if task_code else self.confinement
        return run_bounded(argv, env, self.home, timeout, max_output, user=self.user, confinement=confinement)

    def read_file(self, path: str) -> bytes:
        return self.resolve(path).read_bytes()

    def list_dir(self, path: str) -> list[str]:
        return sorted(os.listdir(self.resolve(path)))
