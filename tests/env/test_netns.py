"""A desktop's network namespace (env.network=isolated): what runs inside cannot reach the host's
loopback services nor another episode's, the harness still reaches the desktop's apps on their
ports, and a host port the episode names is open to it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcpworld.env.local import desktop_user, netns
from mcpworld.env.local.netns import NetNamespace
from tests.fakes.secret_server import SecretServer
from tests.helpers.netns import fetch_inside

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("nsenter"), reason="network namespaces need root and util-linux's nsenter"
)


@pytest.fixture
def host_service() -> Iterator[SecretServer]:
    server = SecretServer()
    yield server
    server.close()


@pytest.fixture
def make_ns() -> Iterator:
    made: list[NetNamespace] = []

    def make() -> NetNamespace:
        ns = NetNamespace.create(outbound=False)
        if ns is None:
            pytest.skip("no network namespace could be made here")
        made.append(ns)
        return ns

    yield make
    for ns in made:
        ns.close()


@pytest.fixture(scope="module")
def account() -> Iterator[desktop_user.DesktopUser]:
    """The desktop's account: its processes are the ones that live in the namespace."""
    slot = desktop_user.acquire()
    assert slot.user is not None
    yield slot.user
    slot.release()


def serve_inside(ns: NetNamespace, root: Path, port: int) -> subprocess.Popen:
    """``python -m http.server`` inside the namespace, once it listens there."""
    proc = subprocess.Popen(
        ns.wrap([sys.executable, "-m", "http.server", "-b", "127.0.0.1", "-d", str(root), str(port)]),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        probe = ns.socket_inside()
        try:
            probe.connect(("127.0.0.1", port))
            return proc
        except OSError:
            time.sleep(0.05)
        finally:
            probe.close()
    proc.kill()
    raise AssertionError("the server inside the namespace never listened")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_inside_the_host_loopback_service_is_out_of_reach(make_ns, host_service, account):
    assert httpx.get(host_service.url).text == host_service.secret  # the host itself reads it
    ns = make_ns()
    answer = fetch_inside(ns, host_service.url, account)  # the agent's shell runs as the desktop's account
    assert answer.startswith("FAILED") and host_service.secret not in answer
    assert fetch_inside(ns, f"http://localhost:{host_service.port}/", account).startswith("FAILED")


def test_another_episodes_service_and_sink_are_out_of_reach(make_ns, host_service, account, tmp_path):
    mine, theirs = make_ns(), make_ns()
    (tmp_path / "index.html").write_text("their app")
    port = free_port()
    server = serve_inside(theirs, tmp_path, port)
    try:
        theirs.forward(port)  # their harness reaches their app …
        assert httpx.get(f"http://127.0.0.1:{port}/index.html").text == "their app"
        theirs.expose(host_service.port)  # … and their app reaches their sink
        assert fetch_inside(theirs, host_service.url, account) == host_service.secret
        # from my namespace: neither their app, nor their sink, nor any host port
        assert fetch_inside(mine, f"http://127.0.0.1:{port}/index.html", account).startswith("FAILED")
        assert fetch_inside(mine, host_service.url, account).startswith("FAILED")
    finally:
        server.kill()
        server.wait()


def test_the_harness_reaches_the_desktops_app_and_the_desktop_its_exposed_port(make_ns, host_service, account, tmp_path):
    ns = make_ns()
    port = free_port()
    ns.forward(port)
    with pytest.raises(httpx.HTTPError):  # nothing listens inside yet: a closed connection, no hang
        httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
    (tmp_path / "page.html").write_text("x" * 300_000)
    server = serve_inside(ns, tmp_path, port)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/page.html").text == "x" * 300_000
    finally:
        server.kill()
        server.wait()
    ns.expose(host_service.port)
    assert fetch_inside(ns, host_service.url, account) == host_service.secret
    ns.unexpose(host_service.port)
    assert fetch_inside(ns, host_service.url, account).startswith("FAILED")


def test_a_killed_runs_namespace_is_swept_and_a_live_ones_is_not(make_ns):
    live = make_ns()
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"{netns.PREFIX}{dead.pid}-{int(time.time() * 1000)}-1"
    assert subprocess.run(["ip", "netns", "add", stale]).returncode == 0
    try:
        assert stale in netns.sweep()
        assert not (netns.NETNS_DIR / stale).exists()
        assert live.path.exists()
    finally:
        subprocess.run(["ip", "netns", "delete", stale], capture_output=True)


def test_closing_deletes_the_namespace_and_frees_the_forwarded_port():
    ns = NetNamespace.create(outbound=False)
    if ns is None:
        pytest.skip("no network namespace could be made here")
    port = free_port()
    ns.forward(port)
    ns.close()
    assert not ns.path.exists()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # nothing holds it any more


@pytest.mark.skipif(
    not shutil.which("slirp4netns") or not netns.fence_tools(), reason="outbound traffic needs slirp4netns, its fence iptables"
)
def test_with_outbound_traffic_the_hosts_own_addresses_stay_fenced_off(account):
    """slirp4netns connects from the host: without the namespace's firewall a service bound to
    0.0.0.0 would answer on the host's own address. (The service answers 200 with a secret: an
    error status would read as "blocked" too. tests/security/test_fence.py shows the same fetch
    reading the secret from a namespace without the fence.)"""
    server = SecretServer("0.0.0.0")
    secret = server.secret.encode()
    ns = NetNamespace.create(outbound=True)
    try:
        assert ns is not None and ns.outbound and ns.effective == "isolated"
        own = [t for t, _ in netns.fenced_targets() if "/" not in t]
        assert own, "this host has no address but loopback"
        port = server.port
        assert httpx.get(f"http://{own[0]}:{port}/").content == secret  # the host itself reaches it
        for address in [*own, "127.0.0.1", "10.0.2.2"]:  # 10.0.2.2: slirp4netns's gateway, the host
            answer = fetch_inside(ns, f"http://{address}:{port}/", account)
            assert answer.startswith("FAILED") and secret.decode() not in answer, address
    finally:
        server.close()
        if ns is not None:
            ns.close()


def test_a_drawn_port_taken_before_its_forward_is_drawn_again(monkeypatch):
    """Two jobs on one machine: a port drawn free may be bound elsewhere before the desktop's forward
    binds it; the desktop draws its ports again rather than failing the whole job."""
    from mcpworld.apps import programs as drawing
    from mcpworld.apps.catalog import programs
    from mcpworld.env.local.environment import LocalEnvironment

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        draws = iter([busy])
        real = drawing.free_port
        monkeypatch.setattr(drawing, "free_port", lambda: next(draws, None) or real())
        with LocalEnvironment(200, 200, programs=programs(), network="isolated") as env:
            assert env.ports and busy not in {int(p) for p in env.ports.values()}
            shims = " ".join(p.read_text(errors="replace") for p in env.bin_dir.iterdir() if p.is_file())
            assert str(busy) not in shims  # the shims name the ports drawn again
