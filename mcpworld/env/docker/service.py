"""The desktop service inside a container (``env=docker``): one LocalEnvironment driven over HTTP.

The host's DockerEnvironment calls it for everything that needs the display or runs a program —
screenshots, input, settling, the agent's shell, app launches — so each action is one HTTP request
to a process that keeps its X connections open (the same in-process paths as ``env=local``), never a
``docker exec``. Files need no call: the episode's work folder is bind-mounted at the same path on
both sides, so the host reads and writes the home directly and paths mean the same everywhere.

It listens on a unix socket in the work folder, where only the host reaches it (on a network of its
own the container shares no loopback with the host), and answers only requests that pass
``mcpworld.core.listener``'s rule: the token the host gave it, JSON bodies, no foreign Host or
Origin. On a network of its own it also carries the host's connections to the apps' control
ports (an HTTP ``CONNECT`` to a port on its loopback) and the apps' to the episode's event sink on
the host (``mcpworld.env.local.relay``). Each desktop it starts is also
shown over VNC (x11vnc, password-protected) and noVNC (websockify), stopped with the desktop.

    MCPWORLD_SERVICE='{"port": …, "token": …, "workroot": …, …}' python -m mcpworld.env.docker.service
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
import traceback
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mcpworld.apps.programs import Program
from mcpworld.core import errors
from mcpworld.core.errors import InfraError
from mcpworld.core.listener import Guard, GuardedHandler
from mcpworld.core.paths import DATA, HOME
from mcpworld.core.task import Task
from mcpworld.env.base import ShellResult
from mcpworld.env.local import desktop_user
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.env.local.relay import Relay, listen_tcp, pipe, to_unix
from mcpworld.env.screen import SettlePolicy, to_image

log = logging.getLogger("mcpworld.env.docker.service")

SPEC_VARIABLE = "MCPWORLD_SERVICE"
NOVNC_WEB = "/usr/share/novnc"
# what the host may call by name: the step host's and the agent's methods of the environment
CALLS = {
    "launch",
    "execute",
    "open_path",
    "activate_window",
    "close_window",
    "act",
    "cursor_position",
    "shell",
    "app_exits",
    "relaunch",
    "app_pid",
    "end_episode",
    "kill",
}


def program_to_json(program: Program) -> dict[str, Any]:
    data = dataclasses.asdict(program)
    data["profile"] = None  # the host lays profiles into the home itself
    return data


def host_paths() -> dict[str, str]:
    """The host's package data and HOME (mcpworld.core.paths), which the spec carries."""
    return {"data": str(DATA), "home": str(HOME)}


def moved(value: str, host: dict[str, str]) -> str:
    """A path in the host's package data or HOME, in this copy's (``scripts/code.sh``, ``.apps/…``)."""
    for where, here in (("data", DATA), ("home", HOME)):  # data first: a checkout's HOME holds it
        prefix = host[where].rstrip("/") + "/"
        if value.startswith(prefix):
            return str(here / value[len(prefix) :])
    return value


def program_from_json(data: dict[str, Any], host: dict[str, str]) -> Program:
    """A program the host described, its project paths moved to this copy."""
    kwargs = {}
    for f in dataclasses.fields(Program):
        value = data.get(f.name, f.default)
        if isinstance(value, list):
            value = tuple(value)
        if f.name in ("binary", "launcher") and value:
            value = moved(value, host)
        kwargs[f.name] = value
    return Program(**kwargs)


class DesktopService:
    """The environment and its viewer; one call at a time except ``kill`` (any thread). The
    environment is made at the first ``start``: a spare container waiting for its episode writes
    nothing into the shared work folder (the shims of the desktop in use stay its own)."""

    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.programs = [program_from_json(p, spec["host_paths"]) for p in spec.get("programs", [])]
        self.env: LocalEnvironment | None = None
        self.lock = threading.Lock()
        self._last_frame: tuple[tuple[int, int], bytes] | None = None
        # frames go to the host through this file on the bind-mounted work folder (tmpfs where
        # /dev/shm is): a memory copy each way instead of 3 MB through HTTP (≈3 ms a screenshot)
        self.frame_path = Path(spec["workroot"]) / ".frame"
        self._websockify: subprocess.Popen | None = None
        self._relays: list[Relay] = []
        vnc = spec.get("vnc")
        if vnc:  # noVNC's page from the start (a spare container is ready before its episode)
            self._websockify = subprocess.Popen(
                ["websockify", "--web", NOVNC_WEB, f"{vnc['listen']}:{vnc['novnc_port']}", f"127.0.0.1:{vnc['port']}"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

    def info(self) -> dict[str, Any]:
        """Who the desktop's programs run as (the host makes the home theirs before the start)."""
        user = desktop_user.ensure_account(f"{desktop_user.NAME_PREFIX}0") if os.geteuid() == 0 else None
        return {
            "uid": user.uid if user else os.getuid(),
            "gid": user.gid if user else os.getgid(),
            "user": user.name if user else None,
            "pid": os.getpid(),
        }

    def start(
        self, log_dir: str, task: dict[str, Any], extra_env: dict[str, str], relays: dict[str, str] | None = None
    ) -> dict[str, Any]:
        spec = self.spec
        for port, path in (relays or {}).items():  # the episode's sink: this loopback's port → the host's
            self._relays.append(Relay(listen_tcp(int(port)), to_unix(Path(path)), f"sink-{port}"))
        if self.env is None:
            self.env = LocalEnvironment(
                int(spec["width"]),
                int(spec["height"]),
                window_manager=spec["window_manager"],
                settle_policy=SettlePolicy(**spec.get("settle", {})),
                workroot=Path(spec["workroot"]),
                app_timeout_s=float(spec["app_timeout_s"]),
                programs=self.programs,
            )
        source = Path(task["source"])
        self.env.task = Task(id=task["id"], app=task["app"], instruction="-", dir=source.parent, source=source)
        self.env.extra_env = {k: moved(v, spec["host_paths"]) for k, v in extra_env.items()}  # a probe's client
        self.env.start_desktop(Path(log_dir))
        display = self.env.display
        assert display is not None  # start_desktop made it
        self._show(display)
        return {"display": display.name, "ports": self.env.ports, "password": self.env.app_password}

    def started(self) -> LocalEnvironment:
        if self.env is None:
            raise InfraError("the desktop service has not started a desktop yet (/start first)")
        return self.env

    def _show(self, display: Any) -> None:
        """VNC of this display on the host's chosen port (x11vnc ends with the desktop); noVNC, on its
        own port since the service started, connects to it anew for each viewer."""
        vnc = self.spec.get("vnc")
        if not vnc:
            return
        passwd = Path(self.started().runtime_dir) / "vnc.passwd"
        subprocess.run(["x11vnc", "-storepasswd", vnc["password"], str(passwd)], capture_output=True, check=True)
        display.procs.spawn(
            [
                "x11vnc",
                "-display",
                display.name,
                "-rfbport",
                str(vnc["port"]),
                "-listen",
                vnc["listen"],
                "-rfbauth",
                str(passwd),
                "-forever",
                "-shared",
                "-quiet",
                "-nossl",
            ],
            env=display.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def call(self, method: str, kwargs: dict[str, Any]) -> Any:
        if method not in CALLS:
            raise ValueError(f"the desktop service has no call {method!r}")
        result = getattr(self.started(), method)(**kwargs)
        if isinstance(result, ShellResult):
            return dataclasses.asdict(result)
        return result

    def frame(self, settle: bool, after_last: bool) -> tuple[tuple[int, int], bytes]:
        """The screen as BGRX bytes: as grabbed, or the frame it settled on after the last one sent
        (kept as bytes: a screenshot is not converted here unless a settle compares with it)."""
        env = self.started()
        if settle:
            before = to_image(*self._last_frame) if after_last and self._last_frame else None
            image = env.settle(before)
            self._last_frame = (image.size, image.tobytes("raw", "BGRX"))
        else:
            self._last_frame = env.raw_frame()
        return self._last_frame

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
        if self._websockify is not None:
            self._websockify.terminate()
        for relay in self._relays:
            relay.close()


def error_payload(exc: BaseException) -> dict[str, Any]:
    return {"error": {"type": type(exc).__name__, "message": str(exc)}}


HOST_NAME = "desktop"  # the host's client names the unix socket's server so (environment.py's base_url)


def make_handler(service: DesktopService, token: str) -> type[GuardedHandler]:
    """Every request, CONNECT included, passes the listener rule (token, Host, Origin, JSON) first."""

    class Handler(GuardedHandler):
        guard = Guard(token, names=(HOST_NAME,))
        protocol_version = "HTTP/1.1"  # keep-alive: one connection for a whole episode

        def setup(self) -> None:
            super().setup()  # small replies at once, not after the peer's delayed ACK (40 ms a call)
            if self.connection.family != socket.AF_UNIX:
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # requests are not worth a line each
            pass

        def _reply(
            self, status: int, body: bytes, content_type: str = "application/json", headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, value: Any) -> None:
            self._reply(status, json.dumps(value).encode())

        def do_GET(self) -> None:
            self._serve({})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except json.JSONDecodeError as exc:
                self._json(400, error_payload(exc))
                return
            self._serve(body)

        def do_CONNECT(self) -> None:
            """A tunnel to a port on this container's loopback (an app's control port), for the host."""
            host, _, port = self.path.rpartition(":")
            if host not in ("127.0.0.1", "localhost") or not port.isdigit():
                self._json(400, {"error": {"type": "ValueError", "message": f"no tunnel to {self.path}"}})
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
            except OSError as exc:
                self._json(502, error_payload(exc))
                return
            upstream.settimeout(None)
            self.send_response(200, "Connection established")
            self.end_headers()
            self.wfile.flush()
            self.close_connection = True
            pipe(self.connection, upstream)  # the host sent nothing after its request: none is buffered

        def _serve(self, body: dict[str, Any]) -> None:
            try:
                if self.path == "/health":
                    self._json(200, service.info())
                elif self.path == "/kill":  # from another thread while a call may be running
                    if service.env is not None:
                        service.env.kill()
                    self._json(200, {"result": None})
                elif self.path in ("/screenshot", "/settle"):
                    with service.lock:
                        size, raw = service.frame(self.path == "/settle", bool(body.get("after_last")))
                        fd = os.open(service.frame_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                        with os.fdopen(fd, "wb") as frame:  # root's, in a folder the desktop account cannot list
                            frame.write(raw)
                    self._json(200, {"size": list(size)})
                elif self.path == "/start":
                    with service.lock:
                        self._json(
                            200,
                            {
                                "result": service.start(
                                    body["log_dir"], body["task"], body.get("extra_env", {}), body.get("relays")
                                )
                            },
                        )
                elif self.path.startswith("/call/"):
                    with service.lock:
                        self._json(200, {"result": service.call(self.path[len("/call/") :], body)})
                else:
                    self._json(404, {"error": {"type": "ValueError", "message": f"no such path {self.path}"}})
            except Exception as exc:  # handed to the host, which raises it as the same kind of error
                if not isinstance(exc, (errors.InfraError, errors.UserError, ValueError, FileNotFoundError)):
                    log.error("%s failed:\n%s", self.path, traceback.format_exc())
                self._json(500, error_payload(exc))

    return Handler


class UnixHTTPServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a peer that hung up is not worth a traceback
            super().handle_error(request, client_address)


SUITE_HOMES = ("/home/user", "/home/agent")  # the suites' homes: the episode's (issue 37)
SUITE_LINKS = {"/workspace": "/home/user/workspace", "/FreeCAD": "/home/user/FreeCAD"}


def make_suite_paths(home: Path, root: Path = Path("/")) -> None:
    """The paths the suites' instructions name, in this container: /home/user and /home/agent are the
    episode's home (links in place of the image's account home), /workspace and /FreeCAD its folders."""
    os.chdir(root)  # (the image's WORKDIR is /home/user)
    for name in SUITE_HOMES:
        path = root / name.lstrip("/")
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(home)
    for name, target in SUITE_LINKS.items():
        path = root / name.lstrip("/")
        if not path.exists() and not path.is_symlink():
            path.symlink_to(target)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    spec = json.loads(os.environ.pop(SPEC_VARIABLE))
    token = spec.pop("token", "")
    if not token:  # never served without one, on a socket or a port
        print(
            f"mcpworld.env.docker.service: error: ${SPEC_VARIABLE} holds no token; the host gives the service one "
            "(mcpworld.env.docker.environment), and it answers only requests carrying it",
            file=sys.stderr,
        )
        return 2
    if os.geteuid() == 0:  # (root in its own container)
        make_suite_paths(Path(spec["workroot"]) / "home")
    service = DesktopService(spec)
    handler = make_handler(service, token)
    server: socketserver.BaseServer
    if spec.get("socket"):  # only the host reaches it (the socket's folder is closed to the desktop account)
        Path(spec["socket"]).unlink(missing_ok=True)
        server = UnixHTTPServer(spec["socket"], handler)
        os.chmod(spec["socket"], 0o666)  # the host's harness, whoever it runs as, may connect
        log.info("desktop service on %s", spec["socket"])
    else:
        server = ThreadingHTTPServer((spec.get("listen", "127.0.0.1"), int(spec["port"])), handler)
        server.daemon_threads = True
        log.info("desktop service on %s:%s", spec.get("listen", "127.0.0.1"), spec["port"])
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
