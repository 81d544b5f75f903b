"""env.network=isolated for real: two episodes' desktop containers side by side, each on a bridge of
its own. From inside one (as the desktop account, and as root through sudo) nothing of the host's
is reachable — a secret served on the host's loopback, an MLflow-like server on all the host's
addresses (through every gateway and the host's own address) — nor anything of the other episode:
its container's VNC, its event sink, its desktop service's socket, its published noVNC port. The
outside still answers, each episode's own sink is reachable from inside it, and the host still
watches each desktop. Chromium tasks are still judged over its DevTools (relayed out of the
container) and MCP tasks still pass. With env.network=host the same secret is read (the old sharing,
by choice). Killed runs' networks are swept with their containers."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import psutil
import pytest

from mcpworld.core.task import Task
from mcpworld.env.docker import network as docker_network
from mcpworld.env.docker.environment import OWNER_LABEL, DockerEnvironment, owner_label, reap_containers
from mcpworld.probes.sink import EventSink

pytestmark = [pytest.mark.docker, pytest.mark.slow]
SECRET = "the-host-secret-4f1c"

# run inside: try each (name, host, port), say what came back (the first bytes, or the error's name)
PROBE = r"""
import json, socket, sys
out = {}
for name, host, port in json.loads(sys.argv[1]):
    try:
        with socket.create_connection((host, port), timeout=3) as s:
            s.settimeout(3)
            s.sendall(b"GET /socket.io/?EIO=4&transport=polling HTTP/1.0\r\nHost: x\r\n\r\n")
            got = b""
            while len(got) < 300:  # until the peer closes (HTTP/1.0) or 300 bytes: headers and body may come apart
                try:
                    chunk = s.recv(300 - len(got))
                except socket.timeout:
                    break
                if not chunk:
                    break
                got += chunk
            out[name] = "open:" + got.decode(errors="replace")
    except OSError as exc:
        out[name] = type(exc).__name__
print(json.dumps(out))
"""


class Secret(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = SECRET.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def servers():
    """The secret on the host's loopback, and an MLflow-like server on every address of the host."""
    made = [ThreadingHTTPServer(("127.0.0.1", 0), Secret), ThreadingHTTPServer(("0.0.0.0", 0), Secret)]
    for server in made:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield {"loopback": made[0].server_address[1], "everywhere": made[1].server_address[1]}
    for server in made:
        server.shutdown()


def host_addresses() -> list[str]:
    """The host's own IPv4 addresses but loopback: its LAN address and every bridge's gateway."""
    return sorted(
        {
            a.address
            for addrs in psutil.net_if_addrs().values()
            for a in addrs
            if a.family.name == "AF_INET" and not a.address.startswith("127.")
        }
    )


def xterm_task(tmp_path: Path) -> Task:
    return Task(
        id="t/x",
        app="xterm",
        instruction="-",
        dir=tmp_path,
        source=tmp_path / "task.yaml",
        setup=[{"launch": {"command": ["xterm"], "window": "xterm"}}],
    )


def probe(env: DockerEnvironment, targets: list[tuple[str, str, int]], root: bool = False) -> dict[str, str]:
    script = env.home / "probe.py"
    script.write_text(PROBE)
    env.user.own(script)
    sudo = "echo password | sudo -S -p '' " if root else ""
    done = env.shell(f"{sudo}python3 ~/probe.py {shlex.quote(json.dumps(targets))}", timeout=120)
    assert done.returncode == 0, done
    return json.loads(done.stdout)


def ip_of(env: DockerEnvironment) -> tuple[str, str]:
    """The container's address and its network's gateway."""
    env.container.reload()
    (net,) = env.container.attrs["NetworkSettings"]["Networks"].values()
    return net["IPAddress"], net["Gateway"]


def test_an_isolated_episode_reaches_the_outside_but_nothing_of_the_host_or_another_episode(tmp_path, client, image, servers):
    sink = EventSink(lambda message: None).start()
    a = DockerEnvironment(640, 480, image=image, client=client)
    b = DockerEnvironment(640, 480, image=image, client=client)
    try:
        b.extra_env = sink.env()  # B's probe would report here
        b.reset(xterm_task(tmp_path), tmp_path / "b")
        a.reset(xterm_task(tmp_path), tmp_path / "a")
        _a_ip, a_gateway = ip_of(a)
        b_ip, b_gateway = ip_of(b)
        assert a_gateway != b_gateway and a_gateway in host_addresses()
        b_novnc = int(b.viewer_url.split(":")[2].split("/")[0])
        # controls: what the attempts aim at answers where it should
        assert httpx.get(f"http://127.0.0.1:{servers['loopback']}").text == SECRET
        assert all(httpx.get(f"http://{h}:{servers['everywhere']}").text == SECRET for h in host_addresses())
        for env in (a, b):  # the host watches each desktop through its published noVNC port
            assert "noVNC" in httpx.get(env.viewer_url.split("?")[0], timeout=10).text
        own = probe(b, [("own sink", "127.0.0.1", sink.port)])
        # B's probe reaches B's sink: the sink itself answers (its guard refuses the probe's Host: x)
        assert own["own sink"].startswith("open:HTTP/1.1 403") and "this server" in own["own sink"], own

        targets = [
            ("host loopback secret", "127.0.0.1", servers["loopback"]),
            ("host sink on loopback", "127.0.0.1", sink.port),
            ("B's noVNC on host loopback", "127.0.0.1", b_novnc),
            ("B's VNC", b_ip, 5900),
            ("B's noVNC", b_ip, 6080),
            ("B's sink in B", b_ip, sink.port),
            *[(f"MLflow-like at {h}", h, servers["everywhere"]) for h in host_addresses()],
            *[(f"host loopback secret at {h}", h, servers["loopback"]) for h in (a_gateway, b_gateway)],
            *[(f"B's noVNC at {h}", h, b_novnc) for h in host_addresses()],
            *[(f"host sink at {h}", h, sink.port) for h in host_addresses()],
        ]
        for root in (False, True):  # the desktop account, and root inside by sudo
            got = probe(a, targets, root=root)
            assert set(got) == {t[0] for t in targets}
            reached = {name: how for name, how in got.items() if how.startswith("open") or SECRET in how}
            assert reached == {}, (root, got)
        outside = probe(a, [("Debian's mirror", "deb.debian.org", 80)])
        assert outside["Debian's mirror"].startswith("open:HTTP/"), outside  # NAT to the outside stays

        shell = a.shell(f"ls {shlex.quote(str(b.workroot))}/.net; ls {shlex.quote(str(a.workroot))}/.net")
        assert shell.stdout == "" and shell.stderr.count("No such file") + shell.stderr.count("denied") == 2, shell
    finally:
        a.close()
        b.close()
        sink.stop()
    assert [
        n.name
        for n in client.networks.list(filters={"label": OWNER_LABEL})
        if owner_label() == n.attrs["Labels"].get(OWNER_LABEL)
    ] == []  # each went with its container


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "overrides, tasks",
    [
        (["task=[chromium/*]"], 3),  # judged over Chromium's DevTools, relayed out of each container
        (["task=[mousepad/*]", "modality=mcp"], 4),  # MCP servers on the host working on the episode's home
    ],
    ids=["chromium-cdp", "mousepad-mcp"],
)
def test_isolated_desktops_still_pass_their_tasks(tmp_path, client, overrides, tasks):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld",
            "env=docker",
            "env.network=isolated",
            "provider=oracle",
            *overrides,
            "concurrency=2",
            "tracking=none",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(p.read_text()) for p in (tmp_path / "run").rglob("result.json")]
    assert len(results) == tasks and all(r["status"] == "success" for r in results), {
        r["task_id"]: r["reason"] or r["metrics"] for r in results
    }


def test_on_the_hosts_network_the_same_secret_is_read(tmp_path, client, image, servers):
    """env.network=host keeps the old sharing: the reason isolated is the default."""
    env = DockerEnvironment(640, 480, image=image, client=client, network="host")
    try:
        env.reset(xterm_task(tmp_path), tmp_path / "episode")
        got = probe(env, [("host loopback secret", "127.0.0.1", servers["loopback"])])
        assert SECRET in got["host loopback secret"], got
    finally:
        env.close()


def test_a_killed_runs_networks_are_removed_and_a_live_runs_kept(client):
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = owner_label().split()[0]
    stale = docker_network.create(client, {OWNER_LABEL: f"{host} {dead.pid} 1.00"})
    live = docker_network.create(client, {OWNER_LABEL: owner_label()})
    try:
        reaped = reap_containers(client)
        assert stale.name in reaped and live.name not in reaped
        names = {n.name for n in client.networks.list()}
        assert stale.name not in names and live.name in names
    finally:
        for network in (stale, live):
            docker_network.remove(network)


def test_isolation_is_refused_clearly_without_root(monkeypatch, client):
    monkeypatch.setattr(docker_network, "_firewall_ready", False)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(Exception, match=r"env\.network=host"):
        docker_network.create(client, {})
