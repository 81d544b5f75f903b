"""The docker backend: each desktop in its own container of the desktop image (``env=docker``).

One container per concurrent desktop, kept for all the episodes it runs (a reset restarts the display
inside it, as ``env=local`` does, not the container). Inside, the desktop service
(``mcpworld.env.docker.service``) drives a LocalEnvironment; this class speaks to it over HTTP for whatever
needs the display or runs a program, and does the rest on the host:

- The work folder (home, golden copies, logs) is bind-mounted at the same path in the container, so
  the host restores the task's context straight into the home, getters and MCP servers read and
  write it directly, and a path means the same on both sides.
- The service listens on a unix socket in the work folder (``.net/``, closed to the desktop account).
- ``env.network=isolated`` (the default): the container is alone on a bridge network of its own
  (``mcpworld.env.docker.network``), so it reaches the outside but nothing on the host's loopback or
  addresses, nor another episode. The apps' control ports (Chromium's DevTools, VLC's HTTP …) are
  relayed to ports on the host's 127.0.0.1 (``self.ports``, where getters and MCP servers find them),
  the episode's event sink the other way (``mcpworld.env.local.relay``); VNC and noVNC are published on
  127.0.0.1 unless ``env.vnc.public``.
- ``env.network=isolated_unfenced``: the same bridge, without those firewall rules where they cannot
  be added (not root, no iptables; warned once): the container then reaches services bound to the
  host's own addresses. ``network_effective`` says which the desktops got.
- The relayed app ports admit only the harness's uid and the desktop account's (uid 61000, which runs
  the MCP servers that use them): ``relay.PeerGate``.
- ``env.network=host``: the container shares the host's network, as ``env=local`` does: app ports are
  host ports; VNC and noVNC listen on 127.0.0.1 unless ``env.vnc.public``. ``NET_RAW`` is dropped
  either way, so root inside cannot sniff.
- The desktop account inside may use sudo (password ``password``, as OSWorld's VMs): root in a
  container is not root on the host.
- Every container carries a label naming the process that made it; a later run removes those
  whose process is gone (a killed run), never a live run's.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
from PIL import Image

from mcpworld.apps.programs import Program, free_port
from mcpworld.core import errors
from mcpworld.core.errors import InfraError
from mcpworld.core.task import Task
from mcpworld.env.base import Action, Environment, ShellResult
from mcpworld.env.context import Goldens, copy_into_home
from mcpworld.env.docker import network as docker_network
from mcpworld.env.docker.service import SPEC_VARIABLE, host_paths, program_to_json
from mcpworld.env.local import desktop_user, leftovers, mountns
from mcpworld.env.local.cgroup import DesktopCgroup
from mcpworld.env.local.confine import Confinement
from mcpworld.env.local.environment import default_workroot
from mcpworld.env.local.processes import scrubbed_env
from mcpworld.env.local.relay import PeerGate, Relay, harness_uids, listen_tcp, listen_unix, through_service, to_tcp
from mcpworld.env.screen import SettlePolicy, to_image
from mcpworld.env.steps import run_steps

logger = logging.getLogger(__name__)
logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per action sent to the desktop

OWNER_LABEL = "mcpworld.owner"  # "<hostname> <pid> <process start time>" of the run that made it
SERVICE_PYTHON = "/opt/mcpworld/.venv/bin/python"
VNC_PORTS = {"port": 5900, "novnc_port": 6080}  # inside a container on its own network (published on the host)
LOOPBACK_URL = re.compile(r"^https?://(?:127\.0\.0\.1|localhost):(\d+)(?:/|$)")
ERRORS: dict[str, type[BaseException]] = {
    **{name: getattr(errors, name) for name in ("InfraError", "MissingWindow", "Unwatchable", "UserError", "TaskFileError")},
    "ValueError": ValueError,
    "FileNotFoundError": FileNotFoundError,
    "TimeoutError": TimeoutError,
}


def owner_label() -> str:
    me = psutil.Process()
    return f"{socket.gethostname()} {me.pid} {me.create_time():.2f}"


def _owner_gone(label: str) -> bool:
    """True when the run that made a container (on this host) has ended; other hosts' are never ours."""
    try:
        host, pid, started = label.split()
        if host != socket.gethostname():
            return False
        return abs(psutil.Process(int(pid)).create_time() - float(started)) >= 1.0
    except psutil.NoSuchProcess:
        return True
    except (ValueError, psutil.Error):
        return False


def reap_containers(client: Any) -> list[str]:
    """Remove the desktop containers of runs on this host that were killed, then their networks;
    the names of both."""
    reaped = []
    for container in client.containers.list(all=True, sparse=True, filters={"label": OWNER_LABEL}):
        if _owner_gone(container.attrs["Labels"].get(OWNER_LABEL, "")):  # sparse: no inspect per container
            _remove(container)
            reaped.append(container.attrs["Names"][0].lstrip("/"))
    return reaped + docker_network.reap(client, OWNER_LABEL, _owner_gone)


def _await_service(container: Any, http: httpx.Client, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            reply = http.get("/health", timeout=2.0)
            if reply.status_code == 200:
                return reply.json()
        except httpx.HTTPError:
            pass
        container.reload()
        if container.status in ("exited", "dead") or time.monotonic() > deadline:
            tail = container.logs(tail=20).decode(errors="replace").strip()[-800:]
            raise InfraError(
                f"the desktop container {container.name} ({container.status}) did not answer within "
                f"{timeout_s:.0f}s" + (f"; its output: {tail}" if tail else "")
            )
        time.sleep(0.05)


def _remove(container: Any, network: Any = None) -> None:
    try:
        container.remove(force=True)
    except Exception as exc:  # already gone (docker rm by hand): nothing is left to stop
        logger.info("removing %s: %s", container.name, exc)
    if network is not None:  # once its container is gone
        docker_network.remove(network)


def viewer_url(host: str, port: int, password: str) -> str:
    return f"http://{host}:{port}/vnc.html?autoconnect=1&resize=scale&password={password}"


@dataclass
class Started:
    """A container whose desktop service answers, not yet given an episode."""

    container: Any
    http: httpx.Client
    viewer_url: str
    info: dict[str, Any]
    network: Any  # its own network (env.network=isolated), else None
    socket: Path  # the desktop service's
    token: str

    def remove(self) -> None:
        _remove(self.container, self.network)
        self.http.close()


def volumes(workroot: Path, handed: Sequence[Path]) -> dict[str, dict[str, str]]:
    """The container's bind mounts, at the same paths: the work folder (rw), and read-only the files
    a task's setup runs from its folder (``DesktopSettings.handed``), each file alone: never a task
    root, whose task files, handlers and solutions the agent must not read (docs/isolation.md)."""
    return {
        str(workroot): {"bind": str(workroot), "mode": "rw"},
        **{str(p): {"bind": str(p), "mode": "ro"} for p in handed if Path(p).is_file()},
    }


class DockerEnvironment(Environment):
    """Every episode gets a container of its own, fresh from the image (the agent may use sudo
    inside, so nothing it changed outside the home may reach the next episode); ``pool`` containers
    are started ahead in the background, so a reset does not wait for one (about 0.3 s each here)."""

    def __init__(
        self,
        width: int,
        height: int,
        *,
        image: str,
        client: Any,
        window_manager: str = "openbox",
        settle_policy: SettlePolicy | None = None,
        app_timeout_s: float = 20.0,
        programs: Sequence[Program] = (),
        vnc_public: bool = False,
        start_timeout_s: float = 60.0,
        pool: int = 1,
        read_only: Sequence[Path] = (),
        network: str = "isolated",
        hidden: Sequence[Path] = (),
    ):
        """``read_only``: files a task's setup runs from its folder, mounted alone; ``hidden``: the run's
        task roots, solutions and outputs, out of the sight of the MCP servers this desktop's episodes
        start on the host (``confined``)."""
        if network not in ("isolated", "isolated_unfenced", "host"):
            raise ValueError(f"env.network: {network!r} is not one of isolated, isolated_unfenced, host")
        self._isolated = network != "host"
        self._unfenced_ok = network == "isolated_unfenced"
        # what the desktops get: the bridge's firewall rules are added once, here, before any container
        self.network_effective = (
            "host"
            if not self._isolated
            else "isolated"
            if docker_network.ensure_firewall(self._unfenced_ok)
            else "isolated_unfenced"
        )
        self.width, self.height = width, height
        self.programs = list(programs)
        self.workroot = default_workroot()
        self.workroot.chmod(0o711)
        self.home = self.workroot / "home"
        self.cache_dir = self.workroot / "cache"
        self.runtime_dir = self.workroot / "run"
        self.log_dir = self.workroot / "logs"  # the service's; copied into the episode's folder
        self.goldens = Goldens(
            self.workroot / "golden", lambda: list(dict.fromkeys(p.profile for p in self.programs if p.profile))
        )
        self.task: Task | None = None
        self._episode_logs: Path | None = None
        self._client, self._image = client, image
        self._vnc_public, self._start_timeout_s, self._pool = vnc_public, start_timeout_s, max(0, pool)
        self._net_dir = self.workroot / ".net"  # the unix sockets between host and containers: root's only
        self._net_dir.mkdir(mode=0o700)
        self._relays: list[Relay] = []  # the episode's, host side
        self._volumes = volumes(self.workroot, read_only)
        self._view = mountns.desktop_view(self.home, [self.workroot], hidden, read_only)
        self._servers_ns: mountns.MountNamespace | None = None  # made at the first server's start
        self._spec = {
            "workroot": str(self.workroot),
            "width": width,
            "height": height,
            "window_manager": window_manager,
            "app_timeout_s": app_timeout_s,
            "settle": (settle_policy or SettlePolicy()).__dict__,
            "host_paths": host_paths(),
            "programs": [program_to_json(p) for p in self.programs],
        }
        self.container: Any = None
        self._current: Started | None = None
        self.http: httpx.Client | None = None
        self.ports: dict[str, int] = {}
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="desktop-containers")
        self._spares: list[Future[Started]] = [self._starter.submit(self._start_container)]
        try:  # the first at once: a broken image or engine fails before any episode
            info = self._spares[0].result().info
        except BaseException:
            self.close()
            raise
        self.user = desktop_user.DesktopUser(info["user"] or "root", info["uid"], info["gid"])
        self._spares += [self._starter.submit(self._start_container) for _ in range(self._pool - 1)]

    def _start_container(self) -> Started:
        listen = "0.0.0.0" if self._vnc_public else "127.0.0.1"
        name = f"mcpworld-{self.workroot.name.removeprefix(leftovers.PREFIX)}-{secrets.token_hex(3)}"
        token, service_socket = secrets.token_urlsafe(32), self._net_dir / f"{name}.sock"
        password = secrets.token_hex(4)  # VNC passwords are at most 8 characters
        labels = {OWNER_LABEL: owner_label()}
        network: Any = None
        if self._isolated:  # VNC on the container's interface, published on the host's loopback (or all)
            vnc: dict[str, Any] = {**VNC_PORTS, "listen": "0.0.0.0", "password": password}
            network = docker_network.create(self._client, labels, self._unfenced_ok)
            where: dict[str, Any] = {
                "network": network.name,
                "sysctls": docker_network.CONTAINER_SYSCTLS,
                "ports": {f"{p}/tcp": (listen, None) for p in VNC_PORTS.values()},
            }
        else:
            vnc = {"port": free_port(), "novnc_port": free_port(), "listen": listen, "password": password}
            where = {"network_mode": "host"}
        spec = {**self._spec, "socket": str(service_socket), "token": token, "vnc": vnc}
        http = httpx.Client(
            base_url="http://desktop",
            transport=httpx.HTTPTransport(uds=str(service_socket)),
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(300.0, connect=5.0),
        )
        try:
            container = self._client.containers.run(
                self._image,
                [SERVICE_PYTHON, "-m", "mcpworld.env.docker.service"],
                user="0",
                detach=True,
                init=True,
                name=name,
                shm_size="1g",
                cap_drop=["NET_RAW"],
                labels=labels,
                environment={SPEC_VARIABLE: json.dumps(spec)},
                volumes=self._volumes,
                **where,
            )
        except BaseException:
            if network is not None:
                docker_network.remove(network)
            http.close()
            raise
        try:
            info = _await_service(container, http, self._start_timeout_s)
            novnc = published_port(container, vnc["novnc_port"]) if self._isolated else vnc["novnc_port"]
        except BaseException:
            _remove(container, network)
            http.close()
            raise
        host = socket.gethostname() if self._vnc_public else "127.0.0.1"
        return Started(container, http, viewer_url(host, novnc, password), info, network, service_socket, token)

    def _next_container(self) -> None:
        """Put a fresh container in place of the last episode's (removed in the background)."""
        old = self._current
        spare = self._spares.pop(0) if self._spares else self._starter.submit(self._start_container)
        if len(self._spares) < self._pool:
            self._spares.append(self._starter.submit(self._start_container))
        self._close_relays()
        if old is not None:
            self._starter.submit(old.remove)
        self._current = self.container = self.http = self.viewer_url = None
        started = spare.result()
        self._current = started
        self.container, self.http, self.viewer_url = started.container, started.http, started.viewer_url

    def _close_relays(self) -> None:
        for relay in self._relays:
            relay.close()
        self._relays = []

    def _sink_relays(self) -> dict[str, str]:
        """The host's loopback ports the episode's programs are told of (its event sink's URL), each
        relayed from the same port on the container's loopback through a socket of the work folder."""
        assert self._current is not None
        relays = {}
        for value in self.extra_env.values():
            found = LOOPBACK_URL.match(value)
            if found and found.group(1) not in relays:
                port = int(found.group(1))
                path = self._net_dir / f"{self._current.container.name}-{port}.sock"
                self._relays.append(Relay(listen_unix(path), to_tcp(port), f"sink-{port}"))
                relays[str(port)] = str(path)
        return relays

    def _app_port_relays(self, ports: dict[str, int]) -> dict[str, int]:
        """A port on the host's 127.0.0.1 for each app control port on the container's loopback (the same
        number where it is free here), tunnelled through the service; where getters find them."""
        assert self._current is not None
        mapped = {}
        for name, port in ports.items():
            # the harness, and the desktop account that runs the MCP servers using them (playwright on cdp)
            gate = PeerGate(harness_uids(self.user.uid), f"the desktop container's {name} port")
            relay = Relay(
                listen_tcp(prefer=port), through_service(self._current.socket, self._current.token, port), f"{name}-{port}", gate
            )
            self._relays.append(relay)
            mapped[name] = relay.port
        return mapped

    # --- talking to the service ---------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any] | None = None, timeout: float | None = None) -> httpx.Response:
        if self.http is None:
            raise InfraError("no desktop container is running (reset() first)")
        try:
            reply = self.http.post(path, json=body or {}, timeout=timeout if timeout else httpx.USE_CLIENT_DEFAULT)
        except httpx.HTTPError as exc:
            raise InfraError(f"the desktop container {self._name()} does not answer ({type(exc).__name__}: {exc})") from None
        if reply.status_code == 500:
            error = reply.json()["error"]
            raise ERRORS.get(error["type"], InfraError)(error["message"])
        if reply.status_code != 200:
            raise InfraError(f"the desktop container {self._name()} refused {path}: {reply.status_code} {reply.text[:200]}")
        return reply

    def _call(self, method: str, http_timeout: float | None = None, **kwargs: Any) -> Any:
        return self._post(f"/call/{method}", kwargs, http_timeout).json()["result"]

    def _name(self) -> str:
        return self.container.name if self.container else "(none)"

    def _frame(self, path: str, body: dict[str, Any] | None = None) -> Image.Image:
        """A frame the service wrote to the shared work folder (see DesktopService.frame_path)."""
        size = self._post(path, body).json()["size"]
        return to_image(tuple(size), (self.workroot / ".frame").read_bytes())

    # --- lifecycle ---------------------------------------------------------------------------
    def reset(self, task: Task, episode_dir: Path) -> None:
        try:
            self.end_episode()
        except InfraError as exc:  # the last episode's container died: the next one is fresh anyway
            logger.info("ending the last episode: %s", exc)
        self.task = None
        self._next_container()
        self.task = task
        self.goldens.restore(task, self.home, owner=(self.user.uid, self.user.gid))
        shutil.rmtree(self.cache_dir, ignore_errors=True)
        self.cache_dir.mkdir(parents=True, mode=0o700)
        shutil.rmtree(self.log_dir, ignore_errors=True)
        self._episode_logs = episode_dir / "logs"
        started = self._post(
            "/start",
            {
                "log_dir": str(self.log_dir),
                "extra_env": self.extra_env,
                "task": {"id": task.id, "app": task.app, "source": str(task.source)},
                "relays": self._sink_relays() if self._isolated else {},
            },
        )
        self.ports, self.app_password = started.json()["result"]["ports"], started.json()["result"]["password"]
        if self._isolated:
            self.ports = self._app_port_relays(self.ports)
        try:
            self.run_steps(task.setup)
        finally:
            self._copy_logs()

    def run_steps(self, steps: Sequence[object]) -> None:
        run_steps(self, steps, where=str(self.task.source) if self.task else "steps")

    def _copy_logs(self) -> None:
        """The service's logs of this episode (app output, desktop.json) into the episode's folder."""
        if self._episode_logs and self.log_dir.is_dir():
            shutil.copytree(self.log_dir, self._episode_logs, dirs_exist_ok=True)

    def end_episode(self) -> None:
        if self.http is not None and self.task is not None:
            self._call("end_episode")
            self._copy_logs()

    def kill(self) -> None:
        if self.http is not None:
            with contextlib.suppress(httpx.HTTPError):
                self.http.post("/kill", timeout=5.0)

    def confined(self, argv: list[str]) -> list[str]:
        """``argv`` as an MCP server of this desktop runs on the host: as the desktop's account, in a mount
        namespace where it sees what an env=local desktop sees (its home, its work folder, the programs),
        never the benchmark's files (env/local/mountns.py); refused in one line where none can be made."""
        if self._servers_ns is None:
            mountns.require()
            self._servers_ns = mountns.MountNamespace.create(self._view)
        return Confinement(None, None, self._servers_ns).wrap(argv, self.user)

    def close(self) -> None:
        self._starter.shutdown(wait=True)  # starts and removals under way end first
        if self._servers_ns is not None:
            self._servers_ns.close()
            self._servers_ns = None
        self._close_relays()
        for spare in self._spares:
            if spare.exception() is None:
                spare.result().remove()
        self._spares = []
        if self._current is not None:
            self._current.remove()
        self._current = self.container = self.http = None
        shutil.rmtree(self.workroot, ignore_errors=True)

    # --- step host ---------------------------------------------------------------------------
    def launch(
        self, command: list[str] | str, shell: bool = False, window: str | None = None, timeout_s: float | None = None
    ) -> None:
        self._call(
            "launch", http_timeout=(timeout_s or 60) + 60, command=command, shell=shell, window=window, timeout_s=timeout_s
        )

    def execute(
        self,
        command: list[str] | str,
        shell: bool = False,
        timeout_s: float = 60,
        env: dict[str, str] | None = None,
        task_code: bool = False,
    ) -> None:
        if task_code:
            self._run_task_code(command, shell, timeout_s, env)
            return
        extra = {"env": env} if env else {}  # (over the service's socket, closed to the desktop account)
        self._call("execute", http_timeout=timeout_s + 60, command=command, shell=shell, timeout_s=timeout_s, **extra)

    def _run_task_code(self, command: list[str] | str, shell: bool, timeout_s: float, env: dict[str, str] | None) -> None:
        """A task's own preprocess (Toolathlon's ``cd <checkout> && python -m tasks.….preprocess.main
        --agent_workspace ~/workspace``), run on the host's side: its code imports from its task folder
        and runs on an interpreter of this machine, and the container holds neither (it must not see
        the task folder). The episode's home is the one both sides share (the work folder is mounted at
        the same path), so it writes where the agent will work: as the desktop account's uid, with
        that home as HOME, before the agent's first step, in a cgroup of its own that is killed when
        the command returns (nothing it started outlives it); ``env`` (an episode's Klavis
        credentials) goes to this command only and never into the container."""
        text = command if isinstance(command, str) else shlex.join(command)
        argv = (
            ["bash", "-c", self.map_paths(text)]
            if shell
            else [str(self.resolve(a)) if a.startswith("~") else self.map_paths(a) for a in shlex.split(text)]
        )
        variables = {**scrubbed_env(self.home, self.runtime_dir), "TMPDIR": str(self.runtime_dir), **(env or {})}
        cgroup = DesktopCgroup.create(f"{self.workroot.name}-preprocess")
        started = time.monotonic()
        # its output to files, not pipes: a process it left behind holding them must not keep the step waiting
        with tempfile.TemporaryFile() as err:
            launch, account = Confinement(cgroup=cgroup).command(argv, self.user, self.home)
            proc = subprocess.Popen(
                launch,
                env=variables,
                cwd=self.home,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
                **account,
            )
            try:
                returncode = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                returncode = -9
            finally:  # what it started goes with it: its cgroup (or, without one, its process group)
                if cgroup is not None:
                    cgroup.remove()
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            err.seek(0)
            stderr = err.read().decode(errors="replace").strip()
        logger.info("the task's preprocess ran on the host's side in %.1fs (exit %s)", time.monotonic() - started, returncode)
        if returncode != 0:
            why = f"timed out after {timeout_s:.0f}s" if returncode == -9 else f"exited {returncode}"
            raise InfraError(f"setup command {command!r} {why}: {stderr[-300:]}")

    def open_path(self, path: str, app: str | None = None, window: str | None = None, timeout_s: float | None = None) -> None:
        self._call("open_path", http_timeout=(timeout_s or 60) + 60, path=path, app=app, window=window, timeout_s=timeout_s)

    def activate_window(self, pattern: str, timeout_s: float = 5, strict: bool = False, by_class: bool = False) -> None:
        options = {k: True for k, v in (("strict", strict), ("by_class", by_class)) if v}
        self._call("activate_window", pattern=pattern, timeout_s=timeout_s, **options)

    def close_window(
        self, pattern: str, timeout_s: float = 5, strict: bool = False, by_class: bool = False, wait: bool = False
    ) -> None:
        options = {k: True for k, v in (("strict", strict), ("by_class", by_class), ("wait", wait)) if v}
        self._call("close_window", http_timeout=timeout_s + 60, pattern=pattern, timeout_s=timeout_s, **options)

    def copy_in(self, src: str, dest: str) -> None:
        """Straight into the bind-mounted home, owned by the desktop account inside."""
        target = self.resolve(dest)
        copy_into_home(Path(src), target)
        self.user.own(target, *(p for p in target.parents if self.home in p.parents))

    def app_exits(self) -> list[dict[str, Any]]:
        return self._call("app_exits") if self.task is not None else []

    def relaunch(self, exited: dict[str, Any]) -> None:
        self._call("relaunch", exited=exited)

    def app_pid(self) -> int | None:
        """The app's process as the host numbers it (probes attach from the host)."""
        pid = self._call("app_pid")
        return None if pid is None else host_pid(self.container, pid)

    # --- agent-facing ----------------------------------------------------------------------------
    def screenshot(self) -> Image.Image:
        return self._frame("/screenshot")

    def settle(self, before: Image.Image | None = None) -> Image.Image:
        return self._frame("/settle", {"after_last": before is not None})

    def act(self, action: Action) -> None:
        self._call("act", action=action)

    def cursor_position(self) -> tuple[int, int]:
        x, y = self._call("cursor_position")
        return x, y

    def shell(self, command: str, timeout: float = 30.0, max_output: int = 20_000) -> ShellResult:
        return ShellResult(
            **self._call("shell", http_timeout=timeout + 30, command=command, timeout=timeout, max_output=max_output)
        )

    def read_file(self, path: str) -> bytes:
        return self.resolve(path).read_bytes()

    def list_dir(self, path: str) -> list[str]:
        return sorted(os.listdir(self.resolve(path)))


def published_port(container: Any, port: int) -> int:
    """The host's port Docker published the container's ``port`` on."""
    container.reload()
    bindings = (container.attrs["NetworkSettings"]["Ports"] or {}).get(f"{port}/tcp") or []
    if not bindings:
        raise InfraError(f"the desktop container {container.name} has no published port for {port}")
    return int(bindings[0]["HostPort"])


def host_pid(container: Any, pid: int) -> int | None:
    """The host's number of the container's process ``pid`` (its last NSpid entry is ``pid``)."""
    container.reload()
    init = container.attrs["State"]["Pid"]
    try:
        candidates = [psutil.Process(init), *psutil.Process(init).children(recursive=True)]
    except psutil.Error:
        return None
    for proc in candidates:
        try:
            status = Path(f"/proc/{proc.pid}/status").read_text()
        except OSError:
            continue
        nspids = next((line.split()[1:] for line in status.splitlines() if line.startswith("NSpid:")), [])
        if nspids and int(nspids[-1]) == pid:
            return proc.pid
    return None
