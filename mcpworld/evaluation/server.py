"""``python -m mcpworld.evaluation.server``: the /evaluate HTTP service, for harnesses other than mcpworld's.

``--home DIR`` grades a directory standing in for the episode's home (file and shell getters).
``--live`` starts a desktop (``--env local`` or ``docker``), or drives a suite's own VM (``--env vm
--vm-url URL``, its size the VM's), and grades it as it is at each request, with every getter (see
``mcpworld.evaluation.live``); ``POST /reset`` sets it up for a task first.

``POST /evaluate`` with a task (an OSWorld/WAA JSON, a native task mapping, or ``{"task_file": PATH}``;
optionally ``"final_action": "FAIL"``) answers ``{score, success, status, actual, expected, metrics}``,
the verdict an episode would get. Bad JSON or a bad task → 400 with the reason; a desktop that
failed → 503. It runs shell getters, so both modes take the one rule of ``mcpworld.core.listener``:
only requests carrying the run's token (``Authorization: Bearer …``; ``MCPWORLD_EVAL_TOKEN`` when set,
else a fresh one in the served folder's 0600 ``token`` file), JSON bodies only (415), no foreign
``Host``/``Origin`` (403), 127.0.0.1 unless told otherwise, and never another address without a
token the researcher chose (docs/security.md).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.listener import Guard, GuardedHandler, listen_token
from mcpworld.core.task import Task
from mcpworld.evaluation.client import TOKEN_VARIABLE

if TYPE_CHECKING:
    from mcpworld.evaluation.live import LiveDesktop

MAX_BODY = 5_000_000
DEFAULT_PORT = 8765
PROG = "mcpworld.evaluation.server"

# (method, path) → what answers it: the request's JSON body (None for GET) → the reply's body
Route = Callable[[Any], dict[str, Any]]


def task_from_request(data: dict[str, Any]) -> tuple[Task, str | None]:
    """The task a request body carries and how the agent ended (``final_action``, default DONE).
    A native mapping is read as a task.yaml in a scratch folder (files it names relative to its
    folder are not there: send ``{"task_file": PATH}`` for such a task)."""
    from mcpworld.tasks.load import load_task_file
    from mcpworld.tasks.native import load_task
    from mcpworld.tasks.osworld import is_osworld_task, load_osworld

    data = dict(data)
    final_action = data.pop("final_action", "DONE")
    if final_action not in ("DONE", "FAIL", None):
        raise UserError(f'final_action {final_action!r}: use "DONE" or "FAIL"')
    if "task_file" in data:
        if set(data) != {"task_file"}:
            raise UserError(f"'task_file' comes alone (or with 'final_action'); drop {sorted(set(data) - {'task_file'})}")
        return load_task_file(Path(str(data["task_file"])).expanduser()), final_action
    if "app" in data and not is_osworld_task(data):
        with tempfile.TemporaryDirectory(prefix="mcpworld-request-") as scratch:
            path = Path(scratch) / "task.yaml"
            path.write_text(json.dumps(data))  # JSON is YAML
            return load_task(path), final_action
    return load_osworld(Path.cwd() / "request.json", data), final_action


def _serve(routes: dict[tuple[str, str], Route], host: str, port: int, token: str) -> ThreadingHTTPServer:
    class Handler(GuardedHandler):  # token, Host, Origin and JSON checked before any route runs
        guard = Guard(token)

        def do_GET(self) -> None:
            self._answer("GET", None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > MAX_BODY:
                return self._reply(400, {"error": f"body must be a task JSON of 1..{MAX_BODY} bytes"})
            try:
                data = json.loads(self.rfile.read(length))
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                return self._reply(400, {"error": f"body is not valid JSON: {exc}"})
            if not isinstance(data, dict):
                return self._reply(400, {"error": "body must be a JSON object (a task)"})
            self._answer("POST", data)

        def _answer(self, method: str, data: dict[str, Any] | None) -> None:
            route = routes.get((method, self.path.rstrip("/")))
            if route is None:
                known = ", ".join(f"{m} {p}" for m, p in routes)
                return self._reply(404, {"error": f"no {method} {self.path} here; use {known}"})
            try:
                self._reply(200, route(data))
            except UserError as exc:
                self._reply(400, {"error": str(exc)})
            except InfraError as exc:  # the desktop's failure, not the task's: no verdict
                self._reply(503, {"status": "infra_error", "error": str(exc)})
            except Exception as exc:  # a defect here: said to the caller, the traceback on the service's stderr
                traceback.print_exc()
                self._reply(500, {"error": f"{type(exc).__name__}: {exc}"})

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body, default=str).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # request lines carry nothing worth keeping
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server


def make_server(home: Path, token: str, host: str = "127.0.0.1", port: int = 0, threshold: float = 1.0) -> ThreadingHTTPServer:
    """/evaluate over a home directory; every request must carry ``token``."""
    from mcpworld.evaluation.standalone import grade

    def evaluate(data: dict[str, Any]) -> dict[str, Any]:
        task, final_action = task_from_request(data)
        return grade(task, home, final_action, threshold)

    return _serve({("POST", "/evaluate"): evaluate}, host, port, token)


def make_live_server(desktop: LiveDesktop, token: str, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """/evaluate, /reset and /health over a running desktop; every request must carry ``token``."""

    def evaluate(data: dict[str, Any]) -> dict[str, Any]:
        return desktop.evaluate(*task_from_request(data))

    def reset(data: dict[str, Any]) -> dict[str, Any]:
        return desktop.reset(task_from_request(data)[0])

    return _serve(
        {("POST", "/evaluate"): evaluate, ("POST", "/reset"): reset, ("GET", "/health"): lambda _: desktop.describe()},
        host,
        port,
        token,
    )


def _blank_task(folder: Path) -> Task:
    """A desktop with no app started, for a harness that sets up its own task (or calls /reset)."""
    return Task(id="live/blank", app="-", instruction="-", dir=folder, source=folder / "blank")


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def serve_live(args: argparse.Namespace) -> int:
    from mcpworld.apps.catalog import programs
    from mcpworld.config.schema import SettleConfig
    from mcpworld.env import DesktopSettings, make_environment
    from mcpworld.evaluation.live import LiveDesktop, apps_started_by, write_endpoint
    from mcpworld.tasks.load import load_task_file

    env_config = _env_config(args)
    token = listen_token(args.host, TOKEN_VARIABLE, args.port)  # before a desktop is started for nothing
    width, height = _screen(args)
    folder = (args.dir or Path(tempfile.mkdtemp(prefix="mcpworld-live-"))).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    task = load_task_file(args.task) if args.task else _blank_task(folder)
    apps = list(args.apps or apps_started_by(task, programs()))
    settings = DesktopSettings(
        env=env_config, width=width, height=height, settle=SettleConfig(), task_roots=(task.dir.resolve(),) if args.task else ()
    )
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops the desktop too, not only the server
    what = f"the {args.vm_kind} VM at {args.vm_url}" if args.env == "vm" else f"an env={args.env} desktop"
    print(f"starting {what} ({width}x{height}) …", flush=True)
    env = make_environment(settings, programs(), apps)
    try:
        desktop = LiveDesktop(env, folder, args.threshold, display_here=args.env == "local")
        about = desktop.reset(task)
        server = _listen(lambda: make_live_server(desktop, token, args.host, args.port), args)
        url = f"http://{args.host}:{server.server_address[1]}"
        endpoint = write_endpoint(folder, url, token, {k: about.get(k) for k in ("display", "xauthority", "viewer_url")})
        where = f"DISPLAY={about['display']}" if about["display"] else f"VM at {args.vm_url}" if args.vm_url else ""
        watch = f", watch at {about['viewer_url']}" if about["viewer_url"] else ""
        print(f"desktop ready ({where or 'no display'}{watch}), task {about['task']}", flush=True)
        print(
            f"serving POST {url}/evaluate, POST {url}/reset, GET {url}/health; token and URL in {endpoint.parent}"
            f" (endpoint.json, token)",
            flush=True,
        )
        serve(server)
    finally:
        env.close()
    return 0


def _env_config(args: argparse.Namespace) -> Any:
    """The env section of ``--env`` (and, for a VM, ``--vm-*``); UserError naming the flag to fix."""
    from mcpworld.config.schema import EnvConfig, VmConfig, VmKind

    vm_flags = {"--vm-url": args.vm_url, "--vm-reset-command": args.vm_reset_command}
    if args.env != "vm":
        given = [flag for flag, value in vm_flags.items() if value]
        if given:
            raise UserError(f"{', '.join(given)} only go with --env vm (the suite's own VM)")
        return EnvConfig(backend=args.env)
    if not args.vm_url:
        raise UserError("--env vm needs the VM server's address: --vm-url http://HOST:5000")
    from mcpworld.env.vm.environment import vm_slots

    vm = VmConfig(url=args.vm_url, kind=VmKind(args.vm_kind), reset_command=args.vm_reset_command or None)
    vm_slots(vm)  # a URL it can reach
    return EnvConfig(backend="vm", vm=vm)


def _screen(args: argparse.Namespace) -> tuple[int, int]:
    """``--width``/``--height``; on a VM, what its server says its screen is unless they are given."""
    if args.env == "vm" and (args.width is None or args.height is None):
        from mcpworld.env.vm.server import VmServer

        server = VmServer(args.vm_url, args.vm_kind, timeout_s=30.0)
        try:
            if not server.answers():
                raise UserError(
                    f"--vm-url {args.vm_url}: the VM server does not answer; start the VM (or give "
                    "--width and --height, and a --vm-reset-command that starts it)"
                )
            width, height = server.screen_size()
        finally:
            server.close()
        return args.width or width, args.height or height
    return args.width or 1280, args.height or 800


def _listen(make: Callable[[], ThreadingHTTPServer], args: argparse.Namespace) -> ThreadingHTTPServer:
    try:
        return make()
    except OSError as exc:
        raise UserError(
            f"--host {args.host} --port {args.port}: cannot listen there ({exc.strerror}); choose another port (0: any free one)"
        ) from None


def serve_home(args: argparse.Namespace) -> int:
    from mcpworld.evaluation.live import write_endpoint

    home = args.home.resolve()
    if not home.is_dir():
        raise UserError(f"--home {args.home} is not a directory")
    token = listen_token(args.host, TOKEN_VARIABLE, args.port)
    folder = (args.dir or Path(tempfile.mkdtemp(prefix="mcpworld-eval-"))).resolve()
    if folder == home or home in folder.parents:
        raise UserError(
            f"--dir {args.dir} is inside --home {args.home}: the token would lie among the graded "
            "files; choose a folder outside it"
        )
    server = _listen(lambda: make_server(home, token, args.host, args.port, args.threshold), args)
    url = f"http://{args.host}:{server.server_address[1]}"
    endpoint = write_endpoint(folder, url, token, {"home": str(home)})
    print(f"serving POST {url}/evaluate for {args.home}; token and URL in {endpoint.parent} (endpoint.json, token)", flush=True)
    serve(server)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.evaluation.server", description=(__doc__ or "").splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--home", type=Path, help="grade this directory (standing in for the episode's home)")
    mode.add_argument("--live", action="store_true", help="start a desktop and grade it live (every getter)")
    parser.add_argument(
        "--env",
        default="local",
        choices=["local", "docker", "vm"],
        help="--live: where the desktop runs (vm: a suite's own VM, driven through its server)",
    )
    parser.add_argument("--vm-url", help="--live --env vm: the VM server's URL (http://HOST:5000)")
    parser.add_argument(
        "--vm-kind",
        default="osworld",
        choices=["osworld", "waa"],
        help="--live --env vm: whose server the VM runs (OSWorld's Ubuntu, WAA's Windows)",
    )
    parser.add_argument(
        "--vm-reset-command",
        help="--live --env vm: run on this host before each /reset (revert the VM's snapshot …); {url} in it is the VM's URL",
    )
    parser.add_argument("--task", type=Path, help="--live: set the desktop up for this task file first")
    parser.add_argument("--apps", nargs="*", help="--live --env docker: the apps the image holds (default: the task's)")
    parser.add_argument("--width", type=int, help="--live: screen width (default 1280; --env vm: the VM's)")
    parser.add_argument("--height", type=int, help="--live: screen height (default 800; --env vm: the VM's)")
    parser.add_argument(
        "--dir",
        type=Path,
        help="folder for endpoint.json, the token (0600) and, --live, the desktop's logs (default: a new temporary folder)",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help=f"listen address; another than 127.0.0.1 only with ${TOKEN_VARIABLE} set (docs/security.md)",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0: any free port")
    parser.add_argument("--threshold", type=float, default=1.0, help="score that counts as success")
    args = parser.parse_args(argv)
    try:
        return serve_live(args) if args.live else serve_home(args)
    except (UserError, InfraError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, UserError) else 1


def serve(server: ThreadingHTTPServer) -> None:
    """Until Ctrl-C (or SIGTERM, which the caller turns into KeyboardInterrupt)."""
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
