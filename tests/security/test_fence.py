"""The host fence of an isolated env=local desktop (docs/isolation.md, docs/security.md): its network
namespace's own firewall rejects every address of this host and the subnets of its local bridges,
so a service bound to 0.0.0.0 (an Ollama or MLflow shared on a lab machine) is out of the agent's
reach. ``env.network=isolated`` refuses to run a desktop it cannot fence, with one line, before
any episode; ``env.network=isolated_unfenced`` runs it without the fence, warned, and
``network_effective`` says what each desktop got."""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from mcpworld.core.errors import UserError
from mcpworld.env.local import desktop_user, netns
from mcpworld.env.local.netns import NetNamespace
from tests.fakes.secret_server import SecretServer
from tests.helpers.netns import fetch_inside

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("nsenter") or not shutil.which("slirp4netns"),
    reason="a desktop's network namespace and its way out need root, nsenter and slirp4netns",
)
needs_iptables = pytest.mark.skipif(not netns.fence_tools(), reason="iptables is not installed (make apt)")
FENCE_TOOLS = ("iptables", "ip6tables", "xtables")


@pytest.fixture(scope="module")
def account() -> Iterator[desktop_user.DesktopUser]:
    slot = desktop_user.acquire()
    assert slot.user is not None
    yield slot.user
    slot.release()


@pytest.fixture(autouse=True)
def fresh_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the once-per-process fence check and warnings afresh."""
    monkeypatch.setattr(netns, "_fence_checked", [])
    monkeypatch.setattr(netns, "_warned", set())


@pytest.fixture
def no_fence_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without iptables (the fence's tool), as a fresh one was before `make setup` had it."""
    monkeypatch.setattr(netns, "fence_tools", lambda: [])


@pytest.fixture
def bridge() -> Iterator[tuple[str, ipaddress.IPv4Network]]:
    """A local bridge with a subnet of its own (docker0's or a VM network's kind): (its address, subnet)."""
    name = f"mcpwt{secrets.token_hex(4)}"
    taken = [
        ipaddress.ip_network(f"{a.address}/{a.netmask}", strict=False)
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family == socket.AF_INET and a.netmask
    ]
    subnet = next(
        s for s in ipaddress.ip_network("198.18.0.0/16").subnets(new_prefix=24) if not any(s.overlaps(t) for t in taken)
    )
    address = str(next(subnet.hosts()))
    for command in (
        ["link", "add", name, "type", "bridge"],
        ["addr", "add", f"{address}/24", "dev", name],
        ["link", "set", name, "up"],
    ):
        done = subprocess.run(["ip", *command], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    yield address, subnet
    subprocess.run(["ip", "link", "delete", name], capture_output=True)


def host_addresses() -> list[str]:
    return [
        a.address
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family == socket.AF_INET
        and not ipaddress.ip_address(a.address).is_loopback
        and not ipaddress.ip_address(a.address).is_link_local
    ]


def rejected(rules: list[str]) -> list[ipaddress.IPv4Network]:
    """The destinations ``-A OUTPUT -d X -j REJECT`` rules reject."""
    out = []
    for rule in rules:
        words = rule.split()
        if words[:2] == ["-A", "OUTPUT"] and "-d" in words and words[words.index("-j") + 1] == "REJECT":
            out.append(ipaddress.ip_network(words[words.index("-d") + 1]))
    return out


def namespaces() -> set[str]:
    return {p.name for p in netns.NETNS_DIR.glob(netns.PREFIX + "*")} if netns.NETNS_DIR.is_dir() else set()


@needs_iptables
def test_a_desktops_namespace_rules_reject_every_host_address_and_each_bridges_subnet(bridge):
    bridge_address, subnet = bridge
    ns = NetNamespace.create()
    assert ns is not None
    try:
        assert ns.outbound and ns.effective == "isolated" and ns.fence_tool
        rules = ns.rules()
        fenced = rejected(rules)
        assert len(fenced) == len(rules), rules  # nothing but the fence
        for address in host_addresses():  # the uplink's own address, the bridge's, any other
            assert any(ipaddress.ip_address(address) in net for net in fenced), (address, rules)
        assert subnet in fenced, rules  # a bridge's whole subnet: its containers' and VMs' addresses too
        assert ipaddress.ip_address(bridge_address) in subnet
    finally:
        ns.close()


@needs_iptables
def test_behind_the_fence_a_service_bound_to_every_host_address_is_out_of_reach(account, bridge, monkeypatch):
    """The same fetch from a namespace without the fence reads the secret: what the fence is for,
    and proof that this test would see the fence go missing."""
    bridge_address, _ = bridge
    service = SecretServer("0.0.0.0")
    fenced = NetNamespace.create()
    with monkeypatch.context() as hidden:
        hidden.setattr(netns, "fence_tools", lambda: [])
        unfenced = NetNamespace.create(unfenced_ok=True)
    assert fenced is not None and unfenced is not None
    try:
        assert (fenced.effective, unfenced.effective) == ("isolated", "isolated_unfenced")
        for address in [*host_addresses(), bridge_address]:
            url = f"http://{address}:{service.port}/"
            assert fetch_inside(unfenced, url, account) == service.secret, address
            answer = fetch_inside(fenced, url, account)
            assert answer.startswith("FAILED") and service.secret not in answer, (address, answer)
        # and the host's loopback (slirp4netns --disable-host-loopback), through its gateway too
        for address in ("127.0.0.1", "10.0.2.2"):
            assert service.secret not in fetch_inside(fenced, f"http://{address}:{service.port}/", account)
    finally:
        service.close()
        fenced.close()
        unfenced.close()


def test_isolated_without_the_fence_tool_refuses_the_desktop_with_one_line(no_fence_tool):
    before = namespaces()
    with pytest.raises(UserError) as refused:
        NetNamespace.create()
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("env.network=isolated: iptables is not installed")
    assert "env.network=isolated_unfenced" in message and "make apt" in message
    assert namespaces() == before  # the half-made namespace is gone
    with pytest.raises(UserError, match="iptables is not installed"):
        netns.require_fence()  # the job's check before any desktop


def test_isolated_refuses_a_local_desktop_before_making_anything(no_fence_tool, tmp_path):
    from mcpworld.env.local.environment import LocalEnvironment

    work_bases = set(Path("/dev/shm").glob("mcpworld-*"))
    for pool in (1, 2):  # a pool's desktops start later, in the background: refused up front all the same
        with pytest.raises(UserError, match=r"^env\.network=isolated: iptables is not installed"):
            LocalEnvironment(200, 200, network="isolated", pool=pool)
    assert set(Path("/dev/shm").glob("mcpworld-*")) <= work_bases


def test_isolated_unfenced_falls_back_with_the_warning(no_fence_tool, caplog, tmp_path):
    from mcpworld.env.local.environment import LocalEnvironment

    caplog.set_level(logging.WARNING, logger="mcpworld.env.local.netns")
    ns = NetNamespace.create(unfenced_ok=True)
    assert ns is not None
    try:
        assert ns.outbound and ns.effective == "isolated_unfenced" and ns.rules() == []
        if shutil.which("iptables"):  # (hidden from the harness only): the namespace's firewall holds nothing
            listed = subprocess.run(ns.wrap(["iptables", "-w", "-S", "OUTPUT"]), capture_output=True, text=True)
            assert listed.returncode == 0 and "-A OUTPUT" not in listed.stdout
    finally:
        ns.close()
    warned = [r.getMessage() for r in caplog.records if "isolated_unfenced" in r.getMessage()]
    assert len(warned) == 1 and "iptables is not installed" in warned[0] and "0.0.0.0" in warned[0]
    with LocalEnvironment(200, 200, network="isolated_unfenced") as env:
        assert env.network_effective == "isolated_unfenced"
        assert env.notes == [
            "env.network=isolated_unfenced was asked; this desktop's network: isolated_unfenced (docs/isolation.md)"
        ]
    assert len([r for r in caplog.records if "isolated_unfenced" in r.getMessage()]) == 1  # once per run


@needs_iptables
def test_a_fenced_desktop_has_no_note_and_says_isolated():
    from mcpworld.env.local.environment import LocalEnvironment

    with LocalEnvironment(200, 200, network="isolated") as env:
        assert env.network_effective == "isolated" and env.notes == []
        assert env.netns is not None and rejected(env.netns.rules())


def path_without_the_fence_tool(folder: Path) -> str:
    """A PATH on which iptables is missing and every other system command is found."""
    folder.mkdir()
    for source in Path("/usr/sbin").iterdir():
        if not source.name.startswith(FENCE_TOOLS):
            (folder / source.name).symlink_to(source)
    return f"{folder}:/usr/local/bin:/usr/bin:/bin"


def run_cli(tmp_path: Path, *overrides: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **({"PATH": path} if path else {}))
    return subprocess.run(
        [sys.executable, "-m", "mcpworld", "provider=oracle", "tracking=none", *overrides, f"hydra.run.dir={tmp_path}/run"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_the_job_fails_with_one_line_before_any_episode_when_the_fence_tool_is_missing(tmp_path):
    proc = run_cli(tmp_path, "env=local", "task=xterm/set_theme", path=path_without_the_fence_tool(tmp_path / "bin"))
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mcpworld: error:")]
    assert len(errors) == 1 and errors[0].startswith("mcpworld: error: env.network=isolated: iptables is not installed")
    assert "Traceback" not in proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "FAILED" and "iptables" in summary["reason"]
    assert not (tmp_path / "run" / "episodes").exists()


@pytest.mark.desktop
@pytest.mark.slow
@needs_iptables
def test_episodes_say_which_network_their_desktop_got(tmp_path):
    """On a machine with the fence no episode warns that it is off, and result.json (the labels the
    episode's MLflow run takes as params) says isolated; asked for isolated_unfenced on one without
    it, the episode runs, warned, and says isolated_unfenced."""
    fenced = run_cli(tmp_path / "fenced", "env=local", "task=xterm/set_theme")
    assert fenced.returncode == 0, fenced.stderr[-3000:]
    said = fenced.stderr + (tmp_path / "fenced" / "run" / "main.log").read_text()  # (warnings go to the job's log)
    assert "iptables" not in said and "isolated_unfenced" not in said and "0.0.0.0" not in said
    (result,) = [json.loads(p.read_text()) for p in (tmp_path / "fenced").rglob("result.json")]
    assert result["labels"]["network_effective"] == "isolated" and result["status"] == "success"
    assert json.loads(next((tmp_path / "fenced").rglob("desktop.json")).read_text())["network"] == "isolated"

    (tmp_path / "open").mkdir()
    unfenced = run_cli(
        tmp_path / "open",
        "env=local",
        "env.network=isolated_unfenced",
        "task=xterm/set_theme",
        path=path_without_the_fence_tool(tmp_path / "bin"),
    )
    assert unfenced.returncode == 0, unfenced.stderr[-3000:]
    warned = [
        line
        for line in (tmp_path / "open" / "run" / "main.log").read_text().splitlines()
        if "env.network=isolated_unfenced: iptables is not installed" in line
    ]
    assert len(warned) == 1 and "[WARNING]" in warned[0]
    (result,) = [json.loads(p.read_text()) for p in (tmp_path / "open").rglob("result.json")]
    assert result["labels"]["network_effective"] == "isolated_unfenced"
    assert any("isolated_unfenced" in note for note in result["task_notes"])


def test_env_docker_isolated_needs_its_firewall_and_isolated_unfenced_goes_on_without(monkeypatch, caplog):
    """env=docker: each container's own bridge plus host firewall rules (INPUT from mcpw+ bridges);
    without iptables, isolated fails the job with one line and isolated_unfenced keeps the bridges,
    warned once (no engine needed: the rules come before any container)."""
    from mcpworld.config.schema import EnvConfig
    from mcpworld.core.errors import InfraError
    from mcpworld.env import DesktopSettings, check_network
    from mcpworld.env.docker import network as docker_network

    real_which = shutil.which
    monkeypatch.setattr(
        docker_network.shutil, "which", lambda name, *a, **k: None if name.startswith(FENCE_TOOLS) else real_which(name, *a, **k)
    )
    monkeypatch.setattr(docker_network, "_firewall_ready", False)
    monkeypatch.setattr(docker_network, "_warned_unfenced", [])
    caplog.set_level(logging.WARNING, logger="mcpworld.env.docker.network")
    with pytest.raises(InfraError, match=r"env\.network=isolated needs iptables.*isolated_unfenced"):
        docker_network.ensure_firewall()
    settings = DesktopSettings(env=EnvConfig(backend="docker"), width=100, height=100, settle=None)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"^env\.network=isolated needs iptables") as refused:
        check_network(settings)
    assert "\n" not in str(refused.value)
    assert docker_network.ensure_firewall(unfenced_ok=True) is False
    assert docker_network.ensure_firewall(unfenced_ok=True) is False
    warned = [r.getMessage() for r in caplog.records if "isolated_unfenced" in r.getMessage()]
    assert len(warned) == 1 and "host's own addresses" in warned[0]
