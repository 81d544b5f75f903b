"""The desktop image (docker/desktop.Dockerfile) and what building it needs on this machine.

A Docker engine: where none answers, Debian's docker.io is installed and dockerd started (as root).
A base image: the user's (``ubuntu:22.04`` by default) when it can be pulled; where no registry is
reachable, a Debian rootfs made by debootstrap and imported (``mcpworld/debian-base:bookworm``,
kept for later builds). Then the build, whose layers Docker keeps between runs.

    python -m mcpworld.env.docker_image [--base IMAGE]     # build mcpworld/desktop, print its tag
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcpworld.errors import InfraError

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
CONTEXT = ROOT / "docker"  # the build context: the Dockerfile and the files it copies
DOCKERFILE = "desktop.Dockerfile"
DESKTOP_TAG = "mcpworld/desktop:dev"
LOCAL_BASE = "mcpworld/debian-base:bookworm"
MIRROR = "http://deb.debian.org/debian"


def _apt_install(*packages: str) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise InfraError(f"`{' '.join(argv)}` failed: {done.stderr.strip()[-300:]}")


def engine(timeout_s: float = 60.0) -> Any:
    """A docker client whose engine answers; installs docker.io and starts dockerd when this machine
    (as root) has none running."""
    import docker

    try:
        client = docker.from_env()
        client.ping()
        return client
    except docker.errors.DockerException as exc:
        if os.geteuid() != 0:
            raise InfraError(f"no Docker engine answers ({exc}); start dockerd or run as root") from None
    if shutil.which("dockerd") is None:
        _apt_install("docker.io")
    log_path = Path(tempfile.gettempdir()) / "mcpworld-dockerd.log"
    subprocess.Popen(["dockerd"], stdout=open(log_path, "ab"), stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            client = docker.from_env()
            client.ping()
            return client
        except docker.errors.DockerException:
            time.sleep(0.5)
    raise InfraError(f"dockerd did not answer within {timeout_s:.0f}s; see {log_path}")


def local_base(client: Any, tag: str = LOCAL_BASE, suite: str = "bookworm") -> str:
    """A Debian base made without a registry (debootstrap + import), built once and kept."""
    import docker

    try:
        client.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    if shutil.which("debootstrap") is None:
        _apt_install("debootstrap")
    with tempfile.TemporaryDirectory(prefix="mcpworld-rootfs-") as rootfs:
        done = subprocess.run(["debootstrap", "--variant=minbase", suite, rootfs, MIRROR], capture_output=True, text=True)
        if done.returncode != 0:
            raise InfraError(f"debootstrap {suite} failed: {done.stderr.strip()[-300:]}")
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["docker", "import", "-", tag], stdin=tar.stdout, capture_output=True, text=True)
        tar.wait()
        if imported.returncode != 0:
            raise InfraError(f"docker import of the {suite} rootfs failed: {imported.stderr.strip()[-300:]}")
    return tag


def build_desktop(client: Any, base: str, tag: str = DESKTOP_TAG) -> Any:
    """The desktop image on ``base``; Docker's layer cache makes a rebuild of an unchanged one quick."""
    import docker

    try:
        image, _ = client.images.build(path=str(CONTEXT), dockerfile=DOCKERFILE, buildargs={"BASE": base},
                                       tag=tag, rm=True, forcerm=True)
    except docker.errors.BuildError as exc:
        tail = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)[-800:]
        raise InfraError(f"building {tag} on {base} failed: {exc}\n{tail}") from None
    return image


def desktop_image(base: str | None = None) -> str:
    """Build (or reuse) the desktop image; ``base`` None: the locally imported Debian base."""
    client = engine()
    build_desktop(client, base or local_base(client))
    return DESKTOP_TAG


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.env.docker_image", description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the base image (default: a Debian base imported locally by debootstrap)")
    args = parser.parse_args(argv)
    try:
        print(desktop_image(args.base))
    except InfraError as exc:
        print(f"mcpworld.env.docker_image: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
