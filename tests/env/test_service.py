"""The desktop service's protocol without a container: token, calls, errors raised on the host as
the same kinds, programs carried over, and the image's Python pins kept equal to the project's."""

from __future__ import annotations

import re
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from PIL import Image

from mcpworld.apps.programs import Program
from mcpworld.core.errors import InfraError, MissingWindow
from mcpworld.core.paths import DATA, DOCKER, HOME, PROJECT
from mcpworld.env.docker.environment import DockerEnvironment
from mcpworld.env.docker.service import make_handler, program_from_json, program_to_json

TOKEN = "s3cret-token"


class StubEnv:
    def __init__(self):
        self.calls = []

    def activate_window(self, pattern, timeout_s):
        self.calls.append(("activate_window", pattern, timeout_s))
        raise MissingWindow(f"no window matching {pattern!r} to activate")

    def shell(self, command, timeout, max_output):
        from mcpworld.env.base import ShellResult

        self.calls.append(("shell", command))
        return ShellResult(0, "out\n", "")

    def act(self, action):
        self.calls.append(("act", action))
        if action["kind"] == "bogus":
            raise ValueError("unknown action kind 'bogus'")

    def kill(self):
        self.calls.append(("kill",))


class StubService:
    def __init__(self, workroot: Path):
        self.env = StubEnv()
        self.lock = threading.Lock()
        self.frame_path = workroot / ".frame"

    def info(self):
        return {"uid": 61000, "gid": 61000, "user": "mcpworld-d0"}

    def started(self):
        return self.env

    def call(self, method, kwargs):
        from mcpworld.env.docker.service import DesktopService

        return DesktopService.call(self, method, kwargs)

    def frame(self, settle, after_last):
        image = Image.new("RGB", (4, 3), (10, 20, 30) if settle else (1, 2, 3))
        return image.size, image.tobytes("raw", "BGRX")


@pytest.fixture
def served(tmp_path):
    service = StubService(tmp_path)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(service, TOKEN))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    env = object.__new__(DockerEnvironment)  # the host side, without starting a container
    env.container = None
    env.workroot = tmp_path
    env.http = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"})
    yield service, env, base
    env.http.close()
    server.shutdown()


def test_without_the_token_nothing_is_served(served):
    _, _, base = served
    assert httpx.get(f"{base}/health").status_code == 401
    assert httpx.post(f"{base}/call/shell", json={"command": "id"}, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(f"{base}/health", headers={"Authorization": f"Bearer {TOKEN}"}).json()["uid"] == 61000


def test_calls_run_on_the_environment_and_errors_come_back_as_the_same_kinds(served):
    service, env, _ = served
    assert env.shell("echo out", timeout=5).stdout == "out\n"
    with pytest.raises(MissingWindow, match="Save As"):
        env.activate_window("Save As", timeout_s=2)
    with pytest.raises(ValueError, match="bogus"):  # a bad action stays the caller's error, not infra
        env.act({"kind": "bogus"})
    assert ("activate_window", "Save As", 2) in service.env.calls
    env.kill()
    assert ("kill",) in service.env.calls


def test_only_the_environments_own_calls_can_be_made(served):
    _service, env, _ = served
    with pytest.raises(ValueError, match="no call '__init__'"):
        env._call("__init__")
    with pytest.raises(ValueError, match="no call 'close'"):
        env._call("close")  # the host closes a desktop by removing its container


def test_frames_arrive_whole(served):
    _, env, _ = served
    assert env.screenshot().getpixel((3, 2)) == (1, 2, 3)
    settled = env.settle(before=env.screenshot())
    assert settled.size == (4, 3) and settled.getpixel((0, 0)) == (10, 20, 30)


def test_a_desktop_that_stopped_answering_is_infra(served):
    _, env, _ = served
    env.http = httpx.Client(base_url="http://127.0.0.1:9", timeout=1)  # nothing listens
    with pytest.raises(InfraError, match="does not answer"):
        env.act({"kind": "key", "keys": "a"})


def test_programs_cross_over_with_project_paths_moved_to_the_image():
    program = Program(
        app="vscode",
        binary="/home/me/mcpworld/.apps/code-server/bin/code-server",
        names=("code", "code-server"),
        args=("--x",),
        ports=("vscode",),
        env={"A": "{port_vscode}"},
        profile=Path("/home/me/mcpworld/mcpworld/data/profiles/vscode"),
        launcher="/home/me/mcpworld/mcpworld/data/scripts/code.sh",
        ready={"http": "http://127.0.0.1:{port_vscode}/healthz"},
        packages={"apt": ["curl"]},
    )
    host = {"data": "/home/me/mcpworld/mcpworld/data", "home": "/home/me/mcpworld"}  # a checkout's
    back = program_from_json(program_to_json(program), host)
    assert back.launcher == str(DATA / "scripts" / "code.sh")
    assert back.binary == str(HOME / ".apps" / "code-server" / "bin" / "code-server")
    installed = {"data": "/venv/lib/python3.11/site-packages/mcpworld/data", "home": "/home/me/.local/share/mcpworld"}
    moved = program_from_json(
        program_to_json(
            Program(
                app="vscode",
                binary=f"{installed['home']}/.apps/code-server/bin/code-server",
                names=("code",),
                launcher=f"{installed['data']}/scripts/code.sh",
            )
        ),
        installed,
    )
    assert (moved.launcher, moved.binary) == (back.launcher, back.binary)
    assert back.profile is None  # the host lays profiles into the home
    assert (back.names, back.args, back.ports, back.env, back.ready) == (
        program.names,
        program.args,
        program.ports,
        program.env,
        program.ready,
    )
    system = program_from_json(program_to_json(Program(app="gimp", binary="gimp", names=("gimp",))), host)
    assert system.binary == "gimp"


def test_the_images_python_pins_are_the_projects():
    pins = dict(re.findall(r'"([A-Za-z0-9_.-]+)==([^"]+)"', (PROJECT / "pyproject.toml").read_text()))
    wanted = [
        line.split("==")
        for line in (DOCKER / "service-requirements.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert wanted and all(pins.get(name) == version for name, version in wanted), (wanted, pins)
