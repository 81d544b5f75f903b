"""App ports relayed onto the host's loopback (Chromium's DevTools, code-server, VLC's HTTP, OBS's
websocket) answer the harness only (docs/isolation.md, docs/security.md). On a shared machine (a
SLURM node) another user's process could otherwise drive an episode's browser or open a shell in
its code-server. The relay asks the kernel which uid made the socket at the other end
(``relay.PeerGate``); code-server, which runs without a login, serves on a 0600 unix socket only."""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from mcpworld.core.task import Task
from mcpworld.env.local import desktop_user, relay
from mcpworld.env.local.netns import NetNamespace

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv"), reason="connecting as another uid needs root and util-linux's setpriv"
)
BASE_PYTHON = "/usr/bin/python3"  # one any account may run (the venv's may sit under a closed folder)
# a request from another account's process: the status line that came back, "CLOSED" when the
# connection ended unanswered (a refusal), "TIMEOUT" when it neither answered nor ended
PROBE = """
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
port, path = sys.argv[1].encode(), sys.argv[2].encode()
s.sendall(b"GET %s HTTP/1.1\\r\\nHost: 127.0.0.1:%s\\r\\nConnection: close\\r\\n\\r\\n" % (path, port))
data, end = b"", "CLOSED"
try:
    while b"\\r\\n" not in data and (chunk := s.recv(4096)):
        data += chunk
except socket.timeout:
    end = "TIMEOUT"  # neither answered nor closed: not what a refusal looks like
except OSError:
    pass
print(data.decode(errors="replace").split("\\r\\n", 1)[0] if data else end)
"""


def as_uid(uid: int, port: int, path: str = "/") -> str:
    """An HTTP request to ``127.0.0.1:port`` from a process of ``uid``: its status line, or CLOSED."""
    entry = pwd.getpwuid(uid)
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={entry.pw_gid}",
            "--clear-groups",
            "--",
            BASE_PYTHON,
            "-c",
            PROBE,
            str(port),
            path,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def nobody() -> int:
    return pwd.getpwnam("nobody").pw_uid


class Echo:
    """A loopback TCP service answering every request with 200 (an app's control port)."""

    def __init__(self) -> None:
        self.sock = relay.listen_tcp()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def echo() -> Iterator[Echo]:
    service = Echo()
    yield service
    service.close()


@pytest.fixture
def account() -> Iterator[desktop_user.DesktopUser]:
    slot = desktop_user.acquire()
    if slot.user is None:
        pytest.skip("no desktop accounts (not root)")
    yield slot.user
    slot.release()


def test_the_kernel_names_the_uid_at_the_other_end_of_a_loopback_connection(tmp_path, echo):
    """peer_uid finds the connecting socket by its address pair, swapped; a TIME_WAIT row (uid 0, no
    owner) or a stranger's connection counts as unknown, never as root's."""
    listener = relay.listen_tcp()
    try:
        client = socket.create_connection(("127.0.0.1", listener.getsockname()[1]))
        server, _ = listener.accept()
        with client, server:
            assert relay.peer_uid(server) == os.getuid()
            here, there = server.getsockname(), server.getpeername()
            theirs, ours = relay._proc_forms(*there), relay._proc_forms(*here)
            heading = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
            row = "   0: {} {} {} 00000000:00000000 00:00000000 00000000  {}        0 1 1 0 20 4 30 10 -1\n"
            (tmp_path / "tcp").write_text(heading + row.format(theirs[0], ours[0], "01", 4242))
            (tmp_path / "tcp6").write_text(heading)
            assert relay.peer_uid(server, tmp_path) == 4242
            (tmp_path / "tcp").write_text(heading + row.format(theirs[0], ours[0], "06", 0))  # TIME_WAIT
            assert relay.peer_uid(server, tmp_path) is None
            (tmp_path / "tcp").write_text(heading)  # an IPv6 socket's connection, written as ::ffff:127.0.0.1
            (tmp_path / "tcp6").write_text(heading + row.format(theirs[1], ours[1], "01", 4343))
            assert relay.peer_uid(server, tmp_path) == 4343
    finally:
        listener.close()


@needs_root
def test_a_gated_relay_admits_the_harness_and_the_named_account_and_refuses_any_other_uid(echo, account, caplog):
    """The env=docker relays (and the host-network code-server relay) admit the harness and the
    desktop's account; another local user's connection is closed unanswered, logged once."""
    caplog.set_level(logging.WARNING, logger="mcpworld.env.local.relay")
    gate = relay.PeerGate(relay.harness_uids(account.uid), "the test's app port")
    made = relay.Relay(relay.listen_tcp(), relay.to_tcp(echo.port), "test", gate)
    try:
        assert httpx.get(f"http://127.0.0.1:{made.port}/").text == "ok"  # the harness
        assert as_uid(os.getuid(), made.port) == "HTTP/1.1 200 OK"
        assert as_uid(account.uid, made.port) == "HTTP/1.1 200 OK"  # the desktop's account
        assert as_uid(nobody(), made.port) == "CLOSED"
        assert as_uid(nobody(), made.port) == "CLOSED"
    finally:
        made.close()
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 1 and f"uid {nobody()} (nobody)" in refusals[0]


@needs_root
@pytest.mark.skipif(not shutil.which("nsenter"), reason="network namespaces need util-linux's nsenter")
def test_an_isolated_desktops_forwarded_port_answers_the_harness_only(account, tmp_path):
    """env=local, isolated: the host side of each app port admits the harness's uid alone (the
    desktop's own processes use the port inside their namespace)."""
    ns = NetNamespace.create(outbound=False)
    assert ns is not None
    port = relay.listen_tcp().getsockname()[1]  # (closed at once: a free number)
    server = subprocess.Popen(
        ns.wrap([sys.executable, "-m", "http.server", "-b", "127.0.0.1", "-d", str(tmp_path), str(port)]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        ns.forward(port)
        deadline = time.monotonic() + 20
        while True:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the server in the namespace never answered"
                time.sleep(0.1)
        assert as_uid(os.getuid(), port) == "HTTP/1.0 200 OK"  # the same probe, from the harness's uid
        assert as_uid(nobody(), port) == "CLOSED"
        assert as_uid(account.uid, port) == "CLOSED"  # even the desktop's account, from the host's side
    finally:
        server.kill()
        server.wait()
        ns.close()


# --- real apps on a real desktop --------------------------------------------------------------------


def app_task(tmp_path: Path, app: str, *setup: dict) -> Task:
    return Task(id=f"t/{app}", app=app, instruction="x", dir=tmp_path, source=tmp_path / "task.yaml", setup=list(setup))


def installed(app: str) -> bool:
    from mcpworld.apps.catalog import programs

    return any(p.app == app and p.installed() for p in programs())


def code_server_processes(socket_path: Path) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if str(socket_path) in (p.info["cmdline"] or [])]


def listening_tcp(pid: int) -> list[str]:
    """The TCP ports ``pid`` listens on, in its own network namespace (``/proc/<pid>/net``, which
    psutil does not read: it would look in the caller's)."""
    inodes, found = set(), []
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
        for table in ("tcp", "tcp6"):
            for row in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = row.split()
                if fields[3] == relay.LISTEN and fields[9] in inodes:
                    found.append(fields[1])
    except FileNotFoundError:  # it has exited meanwhile (a short-lived helper)
        pass
    return found


@needs_root
@pytest.mark.desktop
@pytest.mark.skipif(not installed("vscode"), reason="code-server is not installed (make apps APPS=vscode)")
@pytest.mark.parametrize("network", ["isolated", "host"])
def test_code_server_serves_on_its_own_socket_and_its_port_answers_the_harness_and_desktop_only(tmp_path, network):
    """code-server runs with --auth none (its window opens without a login, as VS Code's does), so no
    TCP port of its own: a 0600 unix socket of the desktop's account. Its window (the desktop's own
    Chromium) still reaches it on the vscode port, as do the harness's readiness check; another
    user's process gets nothing, on the port or the socket."""
    from mcpworld.apps.catalog import programs
    from mcpworld.env.local.environment import LocalEnvironment

    with LocalEnvironment(1000, 800, programs=programs(), network=network) as env:
        assert env.user is not None
        env.reset(
            app_task(
                tmp_path,
                "vscode",
                {"execute": {"command": "mkdir -p ~/project", "shell": True}},
                {"launch": {"command": ["code", "~/project"], "timeout": 90}},
            ),
            tmp_path / "ep",
        )
        assert env.windows.find("project - Visual Studio Code") is not None  # its window got through
        port = int(env.ports["vscode"])
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=5).status_code == 200  # the harness
        assert as_uid(os.getuid(), port, "/healthz") == "HTTP/1.1 200 OK"  # the same probe, from the harness's uid
        assert as_uid(nobody(), port, "/healthz") == "CLOSED"
        socket_path = env.runtime_dir / "vscode.sock"
        servers = code_server_processes(socket_path)
        assert servers and all(p.username() == env.user.name for p in servers)
        assert not any("--bind-addr" in (p.info["cmdline"] or []) for p in servers)
        family = {q.pid for p in servers for q in [p, *p.children(recursive=True)]}  # its node workers too
        assert [port for pid in family for port in listening_tcp(pid)] == []  # no TCP port, in whichever network
        mode = socket_path.stat()
        assert mode.st_mode & 0o777 == 0o600 and mode.st_uid == env.user.uid
        stranger = subprocess.run(
            [
                "setpriv",
                f"--reuid={nobody()}",
                "--regid=nogroup",
                "--clear-groups",
                "--",
                "curl",
                "-s",
                "-m",
                "5",
                "--unix-socket",
                str(socket_path),
                "http://localhost/healthz",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert stranger.returncode != 0 and stranger.stdout == ""


@needs_root
@pytest.mark.desktop
@pytest.mark.skipif(not installed("chromium"), reason="Chromium is not installed (make apps APPS=chromium)")
def test_an_isolated_desktops_devtools_port_drives_nothing_for_another_user(tmp_path):
    from mcpworld.apps.catalog import programs
    from mcpworld.env.local.environment import LocalEnvironment

    with LocalEnvironment(1000, 800, programs=programs(), network="isolated") as env:
        env.reset(app_task(tmp_path, "chromium", {"launch": {"command": ["google-chrome", "about:blank"]}}), tmp_path / "ep")
        port = int(env.ports["cdp"])
        assert "Browser" in httpx.get(f"http://127.0.0.1:{port}/json/version", timeout=5).json()  # the harness
        assert as_uid(os.getuid(), port, "/json/version") == "HTTP/1.1 200 OK"  # the same probe, from the harness's uid
        assert as_uid(nobody(), port, "/json/version") == "CLOSED"
        assert as_uid(nobody(), port, "/json/new?about:blank") == "CLOSED"
