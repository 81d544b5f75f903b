"""A network of its own for each desktop container (``env.network=isolated``, the default).

On the host's network (``env.network=host``) the agent, root inside with sudo, could open every
service on the host's loopback: the MLflow server, Ollama, other episodes' desktop services, event
sinks and VNC, whatever else the researcher runs. Instead each container gets a Docker bridge of
its own: the outside stays reachable (NAT), nothing else of ours shares it.

A bridge alone is not enough: Docker does not filter what a container sends to the host itself,
so the host's addresses (its LAN address, every bridge's gateway, and the services bound to them)
would still answer. Every bridge made here is named ``mcpw…``, and one pair of firewall rules for
all of them (``INPUT -i mcpw+``) refuses whatever such a container opens towards the host; replies
to what the host opened (its published noVNC port) pass. Traffic to other containers' networks is
dropped by Docker's own isolation between bridges. Where the rules cannot be added (not root, no
iptables) ``env.network=isolated`` fails; ``env.network=isolated_unfenced`` keeps the bridges
without them, warned once. The rules stay in place (they match only our
bridges, so they cost nothing when none exist); the networks go with their containers, and a later
run removes those of runs that were killed.

Each network is a /28 of 172.16.0.0/16, a private range Docker's own default pools leave out (they
start at 172.17): Docker's defaults hold about 30 networks, too few for many desktops with their
spares, while this range holds 4096. Subnets the host already routes (a LAN in 172.16/16) are
skipped, and Docker refuses one another network holds, so the next is tried.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import random
import secrets
import shutil
import socket
import struct
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcpworld.core.errors import InfraError

log = logging.getLogger(__name__)

BRIDGE_PREFIX = "mcpw"  # + 11 hex characters: Linux allows interface names of 15
NETWORK_PREFIX = "mcpworld-net-"
CHAIN = "MCPWORLD-ISOLATION"
# what a container on one of our bridges may send to the host itself: replies only
CHAIN_RULES = (
    ["-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "RETURN"],
    ["-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"],  # refused at once, not timed out
    ["-j", "REJECT"],
)
JUMP = ["-i", BRIDGE_PREFIX + "+", "-j", CHAIN]
# the container's side: no IPv6 (a link-local address would reach the host's services bound to ::)
SUBNETS = ipaddress.IPv4Network("172.16.0.0/16")
SUBNET_PREFIX = 28  # the gateway, the container, room to spare
TRIES = 20
CONTAINER_SYSCTLS = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}

_firewall_lock = threading.Lock()
_firewall_ready = False
_warned_unfenced: list[bool] = []


def _iptables(binary: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, "-w", *args], capture_output=True, text=True)


def ensure_firewall(unfenced_ok: bool = False) -> bool:
    """The rules that keep our containers off the host's own addresses, added once (idempotent, and
    safe beside other runs adding them too); True when they hold. Where they cannot be added (not
    root, no iptables): an ``InfraError`` saying how to fix it, or with ``unfenced_ok``
    (``env.network=isolated_unfenced``) one warning and False: the containers keep their own bridges
    (no host loopback, no other episode) but reach services bound to the host's own addresses."""
    global _firewall_ready
    with _firewall_lock:
        if _firewall_ready:
            return True
        try:
            if os.geteuid() != 0:
                raise InfraError(
                    "env.network=isolated adds firewall rules (iptables) that keep desktop containers "
                    "off the host's own services, which needs root; run as root, or set "
                    "env.network=isolated_unfenced (a bridge of its own, without those rules) or "
                    "env.network=host to share the host's network (its loopback services included)"
                )
            for binary in ("iptables", "ip6tables"):
                path = shutil.which(binary)
                if path is None:
                    if binary == "iptables":
                        raise InfraError(
                            "env.network=isolated needs iptables (Debian: apt-get install iptables, or "
                            "`make apt`), or set env.network=isolated_unfenced or env.network=host"
                        )
                    continue  # no IPv6 firewall: the containers have IPv6 switched off anyway
                _install(path)
        except InfraError as exc:
            if not unfenced_ok:
                raise
            if not _warned_unfenced:
                _warned_unfenced.append(True)
                log.warning(
                    "env.network=isolated_unfenced: %s; desktop containers reach services bound to the "
                    "host's own addresses (network_effective=isolated_unfenced)",
                    exc,
                )
            return False
        _firewall_ready = True
        return True


def _install(binary: str) -> None:
    _iptables(binary, "-N", CHAIN)  # fails when it exists: fine
    for rule in CHAIN_RULES:
        if _iptables(binary, "-C", CHAIN, *rule).returncode != 0:
            _check(binary, _iptables(binary, "-A", CHAIN, *rule))
    if _iptables(binary, "-C", "INPUT", *JUMP).returncode != 0:
        _check(binary, _iptables(binary, "-I", "INPUT", "1", *JUMP))


def _check(binary: str, done: subprocess.CompletedProcess[str]) -> None:
    if done.returncode != 0:
        raise InfraError(
            f"{binary} {' '.join(done.args[2:])} failed: {done.stderr.strip()[-300:]}; "
            "env.network=isolated_unfenced runs without these rules"
        )


def host_routes(route_table: Path = Path("/proc/net/route")) -> list[ipaddress.IPv4Network]:
    """The IPv4 networks this host routes to (its LAN, VPNs, bridges), but the default route."""
    routes: list[ipaddress.IPv4Network] = []
    try:
        lines = route_table.read_text().splitlines()[1:]
    except OSError:
        return routes
    for line in lines:
        fields = line.split()
        if len(fields) < 8:
            continue
        destination, mask = (socket.inet_ntoa(struct.pack("<I", int(f, 16))) for f in (fields[1], fields[7]))
        network = ipaddress.IPv4Network(f"{destination}/{mask}", strict=False)
        if network.prefixlen:
            routes.append(network)
    return routes


def free_subnets(taken: list[ipaddress.IPv4Network], tries: int = TRIES) -> list[ipaddress.IPv4Network]:
    """Up to ``tries`` subnets of SUBNETS, from a random place on, none overlapping ``taken``."""
    count = 1 << (SUBNET_PREFIX - SUBNETS.prefixlen)
    start = random.randrange(count)
    found: list[ipaddress.IPv4Network] = []
    for i in range(count):
        index = (start + i) % count
        subnet = ipaddress.IPv4Network((int(SUBNETS.network_address) + (index << (32 - SUBNET_PREFIX)), SUBNET_PREFIX))
        if not any(subnet.overlaps(t) for t in taken):
            found.append(subnet)
            if len(found) == tries:
                break
    return found


def create(client: Any, labels: dict[str, str], unfenced_ok: bool = False) -> Any:
    """A fresh bridge network for one container; its bridge is one the firewall rules cover (with
    ``unfenced_ok``, where they can be added)."""
    from docker.types import IPAMConfig, IPAMPool

    ensure_firewall(unfenced_ok)
    last = "no subnet of 172.16.0.0/16 is free of this host's routes"
    for subnet in free_subnets(host_routes()):
        suffix = secrets.token_hex(6)[:11]
        try:
            return client.networks.create(
                NETWORK_PREFIX + suffix,
                driver="bridge",
                labels=labels,
                check_duplicate=True,
                ipam=IPAMConfig(pool_configs=[IPAMPool(subnet=str(subnet))]),
                options={"com.docker.network.bridge.name": BRIDGE_PREFIX + suffix},
            )
        except Exception as exc:  # docker.errors.APIError: another network holds it (made since we looked)
            last = str(exc)
            if "overlap" not in last:
                break
    raise InfraError(f"creating a desktop network in 172.16.0.0/16 failed: {last}; env.network=host runs without one")


def remove(network: Any) -> None:
    """Remove a network whose container is gone (a container still attached keeps it: logged)."""
    try:
        network.remove()
    except Exception as exc:  # already gone (removed by hand, or by a sweep)
        log.info("removing network %s: %s", network.name, exc)


def reap(client: Any, label: str, owner_gone: Callable[[str], bool]) -> list[str]:
    """Remove our networks whose owning run has ended (``owner_gone`` of its ``label`` value); their
    names. Run after the containers on them are removed."""
    reaped = []
    for network in client.networks.list(filters={"label": label}):
        if network.name.startswith(NETWORK_PREFIX) and owner_gone(network.attrs["Labels"].get(label, "")):
            remove(network)
            reaped.append(network.name)
    return reaped
