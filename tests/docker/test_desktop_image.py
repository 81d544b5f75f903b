"""The desktop image, for real: a Docker engine (installed and started when missing), a Debian base
imported from debootstrap (no registry here), mcpworld/data/docker/desktop.Dockerfile built on it (layers cached
between runs), and a container whose noVNC page and VNC server answer on 127.0.0.1 only."""

from __future__ import annotations

import socket
import time

import httpx
import pytest

from mcpworld.env.docker.image import build_desktop, desktop_tag, local_base

pytestmark = pytest.mark.docker

LABEL = {"mcpworld.test": "desktop-image"}


def wait_http(url: str, timeout_s: float = 30.0) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return httpx.get(url, timeout=2)
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_desktop_image_serves_its_screen_over_vnc_and_novnc_on_loopback(client):
    base = local_base(client)
    image = build_desktop(client, base)
    assert desktop_tag([], base) in image.tags
    assert image.attrs["Config"]["User"] == "mcpworld-d0"  # the desktop runs unprivileged
    container = client.containers.run(
        desktop_tag([], base), detach=True, labels=LABEL, ports={"5904/tcp": ("127.0.0.1", None), "6080/tcp": ("127.0.0.1", None)}
    )
    try:
        container.reload()
        ports = container.attrs["NetworkSettings"]["Ports"]
        assert {b["HostIp"] for p in ("5904/tcp", "6080/tcp") for b in ports[p]} == {"127.0.0.1"}
        novnc = int(ports["6080/tcp"][0]["HostPort"])
        page = wait_http(f"http://127.0.0.1:{novnc}/vnc.html")
        assert page.status_code == 200 and "noVNC" in page.text
        vnc = int(ports["5904/tcp"][0]["HostPort"])
        deadline = time.monotonic() + 20
        while True:  # x11vnc comes up once Xvfb is there: it greets with its protocol version
            try:
                with socket.create_connection(("127.0.0.1", vnc), timeout=2) as s:
                    greeting = s.recv(12)
                if greeting.startswith(b"RFB "):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the VNC server never answered"
            time.sleep(0.2)
        shown = container.exec_run(["sh", "-c", "DISPLAY=:4 xdpyinfo | grep dimensions"], user="mcpworld-d0")
        assert b"1280x800" in shown.output
    finally:
        container.remove(force=True)
    assert client.containers.list(all=True, filters={"label": "mcpworld.test=desktop-image"}) == []
