"""The desktop image (mcpworld/data/docker/desktop.Dockerfile) and what building it needs on this machine.

A Docker engine: where none answers, Debian's docker.io is installed and dockerd started (as root).
A base image: the user's (``ubuntu:22.04`` by default) when it can be pulled; where no registry is
reachable, a Debian rootfs made by debootstrap and imported (``mcpworld/debian-base:bookworm``,
kept for later builds). Then the build from the project's root, whose layers Docker keeps between
runs; the image holds the Debian packages of the chosen apps, and its tag names that choice.

    python -m mcpworld.env.docker.image [--base IMAGE] [APP ...]   # build, print its tag (all apps: all)
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcpworld.apps.programs import Program
from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.paths import APPS, DATA, DOCKER, PROJECT

log = logging.getLogger(__name__)

ROOT = PROJECT
DOCKERFILE = str(DOCKER.relative_to(PROJECT) / "desktop.Dockerfile")  # in the context
DESKTOP_REPO = "mcpworld/desktop"
LOCAL_BASE = "mcpworld/debian-base:bookworm"
MIRROR = "http://deb.debian.org/debian"


def _apt_install(*packages: str) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        done = subprocess.run(argv, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise InfraError(f"`{' '.join(argv)}` failed: {done.stderr.strip()[-300:]}")


def answering() -> tuple[Any | None, str]:
    """A docker client whose engine answers now, else None and why (nothing installed or started)."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
        return client, ""
    except Exception as exc:  # no docker package, no socket, engine down
        return None, f"{type(exc).__name__}: {str(exc)[:120]}"


def engine(timeout_s: float = 60.0) -> Any:
    """A docker client whose engine answers; installs docker.io and starts dockerd when this machine
    (as root) has none running."""
    import docker

    client, why = answering()
    if client is not None:
        return client
    if os.geteuid() != 0:
        raise InfraError(f"no Docker engine answers ({why}); start dockerd or run as root")
    if shutil.which("dockerd") is None:
        _apt_install("docker.io")
    log_path = Path(tempfile.gettempdir()) / "mcpworld-dockerd.log"
    subprocess.Popen(["dockerd"], stdout=open(log_path, "ab"), stderr=subprocess.STDOUT, start_new_session=True)  # noqa: SIM115 - kept open beyond this block
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


def desktop_tag(packages: list[str], base: str, built: Sequence[str] = ()) -> str:
    """The image's tag: the same apps on the same base are the same image (later builds reuse it)."""
    digest = hashlib.sha256(" ".join([base, *sorted(packages), *(f"built:{a}" for a in sorted(built))]).encode())
    return f"{DESKTOP_REPO}:{digest.hexdigest()[:12]}"


CONTEXT_PARTS = ("mcpworld",)  # what the Dockerfile copies from the project: the package, its data/ included …
# … but for the built-in tasks and the suites' oracle solutions: the agent, root inside with sudo, must not
# read a task file's expected values or a solution (issue 41); nothing in the container reads them
LEFT_OUT = (DATA / "tasks", DATA / "solutions")


APPS_DIR = APPS  # what our install scripts build (code-server, the VS Code probe's client)


def build_context(into: Path, built: Sequence[str] = ()) -> Path:
    """The build's files: the project's parts the image holds (never the built-in tasks and
    solutions: ``LEFT_OUT``), this machine's CA bundle (pip in the
    build trusts what this machine trusts, e.g. a proxy's own CA in front of PyPI), and, when the
    image holds apps our scripts built (``built``), this machine's ``.apps`` with the Node.js they
    run on: no Debian or Ubuntu release ships the Node 20 code-server needs, and the build cannot
    reach another source."""
    caches = shutil.ignore_patterns("__pycache__", "*.pyc")

    def ignore(folder: str, names: list[str]) -> set[str]:
        return set(caches(folder, names)) | {n for n in names if Path(folder) / n in LEFT_OUT}

    for part in CONTEXT_PARTS:
        shutil.copytree(ROOT / part, into / part, ignore=ignore)
    bundle = Path(ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt")
    (into / "host-ca.crt").write_bytes(bundle.read_bytes() if bundle.is_file() else b"")
    (into / ".apps").mkdir()
    if built:
        shutil.copytree(
            APPS_DIR, into / ".apps", symlinks=True, dirs_exist_ok=True, ignore=shutil.ignore_patterns("warm")
        )  # first-start files are made per desktop
        node = shutil.which("node")
        if node is None:
            raise UserError(f"the image's {', '.join(built)} runs on Node.js, which this machine lacks: `make servers`")
        (into / ".apps" / "node" / "bin").mkdir(parents=True)
        shutil.copy2(os.path.realpath(node), into / ".apps" / "node" / "bin" / "node")
    return into


def build_desktop(client: Any, base: str, packages: Sequence[str] = (), built: Sequence[str] = ()) -> Any:
    """The desktop image on ``base`` with the Debian ``packages`` of its apps and the ``built`` apps
    of this machine's ``.apps``; Docker's layer cache makes a rebuild of an unchanged one quick."""
    import docker

    tag = desktop_tag(list(packages), base, built)
    try:
        previous = client.images.get(tag).id
    except docker.errors.ImageNotFound:
        previous = None
    with tempfile.TemporaryDirectory(prefix="mcpworld-image-") as context:
        try:
            image, _ = client.images.build(
                path=str(build_context(Path(context), built)),
                dockerfile=DOCKERFILE,
                tag=tag,
                rm=True,
                forcerm=True,
                network_mode="host",
                buildargs={"BASE": base, "APT_PACKAGES": " ".join(sorted(packages))},
            )
        except docker.errors.BuildError as exc:
            tail = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)[-800:]
            raise InfraError(f"building {tag} on {base} failed: {exc}\n{tail}") from None
    if previous not in (None, image.id):  # the tag moved on: the old image would be left untagged
        with contextlib.suppress(docker.errors.APIError):  # a container still uses it: a later build removes nothing of it
            client.images.remove(previous)
    return image


def app_packages(programs: Sequence[Program], apps: Sequence[str]) -> list[str]:
    """The Debian packages of ``apps`` (app config names; ``all``: every app with a program)."""
    return sorted({pkg for p in _chosen(programs, apps) for pkg in p.packages.get("apt", [])})


def built_apps(programs: Sequence[Program], apps: Sequence[str]) -> list[str]:
    """Those of ``apps`` our own scripts install (VS Code): the image takes them from this machine,
    so they must be installed here (with ``all``, those that are; the others are left out)."""
    scripted = [p for p in _chosen(programs, apps) if p.packages.get("script")]
    missing = [p for p in scripted if not p.installed()]
    if missing and "all" not in apps:
        raise UserError(
            f"env.apps: the image takes {', '.join(p.app for p in missing)} from this machine, where "
            f"it is not installed: {'; '.join(p.install for p in missing)}"
        )
    return sorted(p.app for p in scripted if p.installed())


def _chosen(programs: Sequence[Program], apps: Sequence[str]) -> list[Program]:
    unknown = sorted(set(apps) - {p.app for p in programs} - {"all"})
    if unknown:
        raise UserError(
            f"env.apps: no app config with a program is named {', '.join(unknown)}; known: {', '.join(p.app for p in programs)}"
        )
    return [p for p in programs if "all" in apps or p.app in apps]


_built: dict[tuple[str, tuple[str, ...], tuple[str, ...]], str] = {}
_build_lock = threading.Lock()


def desktop_image(base: str | None = None, packages: Sequence[str] = (), built: Sequence[str] = ()) -> str:
    """Build (or reuse) the desktop image, once per process; ``base`` None: the locally imported
    Debian base."""
    with _build_lock:
        key = (base or "", tuple(sorted(packages)), tuple(sorted(built)))
        if key not in _built:
            client = engine()
            base = base or local_base(client)
            started = time.monotonic()
            build_desktop(client, base, list(packages), built)
            tag = desktop_tag(list(packages), base, built)
            log.info("desktop image %s ready in %.1fs", tag, time.monotonic() - started)
            _built[key] = tag
        return _built[key]


def main(argv: list[str] | None = None) -> int:
    from mcpworld.apps.catalog import programs

    parser = argparse.ArgumentParser(prog="python -m mcpworld.env.docker.image", description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="the base image (default: a Debian base imported locally by debootstrap)")
    parser.add_argument("apps", nargs="*", help="app configs whose Debian packages the image holds (all: every one)")
    args = parser.parse_args(argv)
    try:
        found = programs()
        print(desktop_image(args.base, app_packages(found, args.apps), built_apps(found, args.apps)))
    except (InfraError, UserError) as exc:
        print(f"mcpworld.env.docker.image: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
