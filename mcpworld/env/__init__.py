"""Environments: where an episode's desktop lives. Backends are looked up by ``env.backend``."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

from mcpworld.apps.programs import Program
from mcpworld.core.errors import UserError
from mcpworld.env.base import Environment


def _local(cfg: Any, width: int, height: int, programs: Sequence[Program], apps: Sequence[str]) -> Environment:
    from mcpworld.env.local import LocalEnvironment
    from mcpworld.env.screen import SettlePolicy

    return LocalEnvironment(width, height, window_manager=cfg.env.window_manager,
                            settle_policy=SettlePolicy(**dict(cfg.agent.settle)),
                            app_timeout_s=cfg.env.app_timeout_s, programs=programs)


def _docker(cfg: Any, width: int, height: int, programs: Sequence[Program], apps: Sequence[str]) -> Environment:
    from mcpworld.env import docker_image
    from mcpworld.env.container import DockerEnvironment
    from mcpworld.env.screen import SettlePolicy

    chosen = list(cfg.env.apps or apps)
    image = docker_image.desktop_image(cfg.env.base_image, docker_image.app_packages(programs, chosen),
                                       docker_image.built_apps(programs, chosen))
    # the task folders, for setup commands that name their files (a PC-Canary app script, a hook)
    task_roots = [Path(r).expanduser().resolve() for r in (cfg.tasks.root, cfg.pccanary.root) if r]
    return DockerEnvironment(width, height, image=image, client=docker_image.engine(),
                             window_manager=cfg.env.window_manager, settle_policy=SettlePolicy(**dict(cfg.agent.settle)),
                             app_timeout_s=cfg.env.app_timeout_s, programs=programs, vnc_public=cfg.env.vnc.public,
                             start_timeout_s=cfg.env.start_timeout_s, pool=cfg.env.pool,
                             read_only=task_roots)


BACKENDS: dict[str, Callable[[Any, int, int, Sequence[Program], Sequence[str]], Environment]] = {
    "local": _local, "docker": _docker}


def make_environment(cfg: Any, programs: Sequence[Program] = (), apps: Sequence[str] = ()) -> Environment:
    """A desktop of the configured backend that can start ``programs`` (the app configs' ones);
    ``apps``: the app configs the run's tasks start (what a docker image must hold)."""
    backend = cfg.env.backend
    if backend not in BACKENDS:
        raise UserError(f"env.backend={backend!r} is unknown; known: {', '.join(sorted(BACKENDS))}")
    return BACKENDS[backend](cfg, cfg.resolution.width, cfg.resolution.height, programs, apps)


def make_environments(cfg: Any, programs: Sequence[Program], n: int, apps: Sequence[str] = ()) -> list[Environment]:
    """``n`` desktops, started side by side (containers take a moment each); all or none."""
    if n <= 1:
        return [make_environment(cfg, programs, apps) for _ in range(n)]
    with ThreadPoolExecutor(n) as workers:
        futures = [workers.submit(make_environment, cfg, programs, apps) for _ in range(n)]
    made = [f.result() for f in futures if f.exception() is None]
    failed = next((f.exception() for f in futures if f.exception() is not None), None)
    if failed is not None:
        for env in made:
            env.close()
        raise failed
    return made
