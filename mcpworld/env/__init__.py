"""Environments: where an episode's desktop lives. Backends are looked up by ``env.backend`` in a
registry; each is built from the typed pieces of DesktopSettings, never from the whole run config."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpworld.apps.programs import Program
from mcpworld.core.registry import Registry
from mcpworld.env.base import Environment

if TYPE_CHECKING:  # the desktop service imports this package inside a container that has no Hydra
    from mcpworld.config.schema import EnvConfig, SettleConfig
    from mcpworld.core.task import Task
    from mcpworld.env.screen import SettlePolicy


@dataclass(frozen=True)
class DesktopSettings:
    """What a desktop is made from: the env section, the screen, the settle policy, and the task
    folders a container mounts read-only (setup commands name their files: an app script, a hook)."""

    env: EnvConfig
    width: int
    height: int
    settle: SettleConfig
    task_roots: tuple[Path, ...] = field(default=())  # tasks.root, pccanary.root …: out of the desktop's sight
    # the run's other folders the desktop must not see (tasks.solutions, the job's outputs)
    hidden: tuple[Path, ...] = field(default=())
    # files in those folders a task's setup runs on the desktop (a PC-Canary pre_process script)
    handed: tuple[Path, ...] = field(default=())
    slot: int = 0  # which of the run's desktops this is (env=vm: the slot-th VM of env.vm.urls)

    @classmethod
    def of(cls, cfg: Any) -> DesktopSettings:
        """The pieces of a run config (the one place that reads the root config)."""
        roots = tuple(Path(r).expanduser().resolve() for r in (cfg.tasks.root, cfg.pccanary.root) if r)
        toolathlon = getattr(cfg, "toolathlon", None)
        hidden = tuple(Path(r).expanduser().resolve() for r in (cfg.tasks.solutions, toolathlon and toolathlon.root) if r)
        return cls(
            env=cfg.env,
            width=int(cfg.resolution.width),
            height=int(cfg.resolution.height),
            settle=cfg.agent.settle,
            task_roots=roots,
            hidden=hidden,
        )

    def for_run(self, tasks: Sequence[Task], out: Path) -> DesktopSettings:
        """These settings with the job's output folder hidden too, and the files the tasks' setups run
        from the hidden folders handed (env.files=hidden)."""
        from dataclasses import replace

        return replace(
            self, hidden=(*self.hidden, Path(out).resolve()), handed=handed_files(tasks, (*self.task_roots, *self.hidden))
        )


def handed_files(tasks: Sequence[Task], folders: Sequence[Path]) -> tuple[Path, ...]:
    """The files under ``folders`` that the tasks' setup steps name (run on the desktop): the desktop
    sees these and nothing else of the task folders. Folders a step names are not handed (a task's
    folder holds its handler and solution)."""
    from mcpworld.core.paths import BUILTIN_TASKS, DATA

    found: set[Path] = set()
    under = [Path(os.path.realpath(f)) for f in (*folders, BUILTIN_TASKS, DATA / "solutions")]
    for task in tasks:
        for text in ABSOLUTE_PATH.findall(json.dumps([step.raw for step in task.setup], default=str)):
            path = Path(os.path.realpath(text))
            if path.is_file() and any(root == path or root in path.parents for root in under):
                found.add(path)
    return tuple(sorted(found))


ABSOLUTE_PATH = re.compile(r"(?<![\w.~])(/[^\s'\"<>|;&()`$]+)")


def settle_policy(settle: SettleConfig) -> SettlePolicy:
    """The config's settle section (a DictConfig at run time, or the dataclass) as the screen's policy."""
    from mcpworld.env.screen import SettlePolicy

    return SettlePolicy(
        interval_s=settle.interval_s, stable_frames=settle.stable_frames, idle_s=settle.idle_s, max_s=settle.max_s
    )


def check_network(settings: DesktopSettings) -> None:
    """Fail with one line, before anything is started, when ``env.network=isolated`` cannot be
    honoured on this machine (its desktops could not be fenced off the host); ``isolated_unfenced``
    and ``host`` run as the machine allows (docs/isolation.md)."""
    from mcpworld.core.errors import InfraError, UserError

    if str(settings.env.network) != "isolated":
        return
    if settings.env.backend == "local":
        from mcpworld.env.local.netns import require_fence

        require_fence()
    elif settings.env.backend == "docker":
        from mcpworld.env.docker import network as docker_network

        try:
            docker_network.ensure_firewall()
        except InfraError as exc:
            raise UserError(str(exc)) from exc


class Backend:
    """An env backend (``env.backend``): called, it builds one desktop; its attributes say what a run must
    know of it, so that the run names no backend. A plain build function registered from outside the
    package is a backend with these defaults (``backend_of``)."""

    stages: bool = True  # env.stage: it can reset one desktop while another runs an episode
    # its desktops are processes of this machine: a task's sudo would be root here, and the commands a
    # task's setup and grader run must be installed here
    on_host: bool = False

    def __call__(self, settings: DesktopSettings, programs: Sequence[Program], apps: Sequence[str]) -> Environment:
        raise NotImplementedError

    def programs_for(self, needed: Sequence[Program]) -> list[Program]:
        """Of the catalog programs a task starts, those this machine must have installed."""
        return list(needed)

    def check(self, settings: DesktopSettings, concurrency: int) -> None:
        """A UserError, before any desktop starts, for settings this backend cannot run ``concurrency`` desktops on."""

    def reap(self) -> int:
        """Remove what runs on this machine that were killed left behind (local desktops' processes and
        folders, whichever backend they ran); how many were removed."""
        from mcpworld.env.local import leftovers

        return len(leftovers.reap())


class BuildFunction(Backend):
    """A backend given as a plain build function (``package.module:build``, an entry point): the defaults."""

    def __init__(self, build: Callable[[DesktopSettings, Sequence[Program], Sequence[str]], Environment]):
        self.build = build

    def __call__(self, settings: DesktopSettings, programs: Sequence[Program], apps: Sequence[str]) -> Environment:
        return self.build(settings, programs, apps)


BACKENDS: Registry[Backend] = Registry("env.backend", group="mcpworld.env_backends")


class LocalBackend(Backend):
    """Desktops on this machine, each in its own cgroup, namespaces and account (env/local/environment.py)."""

    on_host = True

    def __call__(self, s: DesktopSettings, programs: Sequence[Program], apps: Sequence[str]) -> Environment:
        from mcpworld.env.local.environment import LocalEnvironment

        return LocalEnvironment(
            s.width,
            s.height,
            window_manager=s.env.window_manager,
            settle_policy=settle_policy(s.settle),
            app_timeout_s=s.env.app_timeout_s,
            programs=programs,
            network=str(s.env.network),
            pool=s.env.pool,
            files=str(getattr(s.env, "files", "hidden")),
            hidden=(*s.task_roots, *s.hidden),
            handed=s.handed,
        )


class DockerBackend(Backend):
    """Desktops in containers of an image built from the run's apps (env/docker/environment.py)."""

    def __call__(self, s: DesktopSettings, programs: Sequence[Program], apps: Sequence[str]) -> Environment:
        from mcpworld.env.docker import image as docker_image
        from mcpworld.env.docker.environment import DockerEnvironment

        chosen = list(s.env.apps or apps)
        image = docker_image.desktop_image(
            s.env.base_image, docker_image.app_packages(programs, chosen), docker_image.built_apps(programs, chosen)
        )
        return DockerEnvironment(
            s.width,
            s.height,
            image=image,
            client=docker_image.engine(),
            window_manager=s.env.window_manager,
            settle_policy=settle_policy(s.settle),
            app_timeout_s=s.env.app_timeout_s,
            programs=programs,
            vnc_public=s.env.vnc.public,
            start_timeout_s=s.env.start_timeout_s,
            pool=s.env.pool,
            read_only=list(s.handed),
            network=str(s.env.network),
            hidden=(*s.task_roots, *s.hidden),
        )

    def programs_for(self, needed: Sequence[Program]) -> list[Program]:
        """Debian's apps go into the image; those our scripts install it takes from this machine."""
        return [p for p in needed if p.packages.get("script")]

    def reap(self) -> int:
        """Local desktops' leftovers, then the containers and networks of killed runs."""
        from mcpworld.env.docker import image as docker_image
        from mcpworld.env.docker.environment import reap_containers

        return super().reap() + len(reap_containers(docker_image.engine()))


class VmBackend(Backend):
    """A suite's own VM through its server, one VM per desktop slot (env/vm/environment.py)."""

    stages = False  # one VM per desktop slot: no second desktop to set up while one runs

    def __call__(self, s: DesktopSettings, programs: Sequence[Program], apps: Sequence[str]) -> Environment:
        from dataclasses import replace

        from mcpworld.core.errors import UserError
        from mcpworld.env.vm.environment import VmEnvironment, vm_slots

        vm = s.env.vm
        slots = vm_slots(vm)  # one VM per desktop of the run
        if s.slot >= len(slots):
            raise UserError(
                f"desktop {s.slot + 1} of the run has no VM: env=vm has {len(slots)} VM(s); set concurrency="
                f"{len(slots)} or name more VMs in env.vm.urls=[URL,…]"
            )
        policy = settle_policy(s.settle)  # each frame is an HTTP round trip: poll it less often
        policy = replace(policy, interval_s=max(policy.interval_s, 0.2), stable_frames=min(policy.stable_frames, 2))
        return VmEnvironment(
            s.width,
            s.height,
            url=slots[s.slot].url,
            kind=str(vm.kind),
            reset_command=slots[s.slot].reset_command,
            ready_timeout_s=vm.ready_timeout_s,
            request_timeout_s=vm.request_timeout_s,
            settle_policy=policy,
        )

    def programs_for(self, needed: Sequence[Program]) -> list[Program]:
        return []  # the suite's VM has its own programs

    def check(self, settings: DesktopSettings, concurrency: int) -> None:
        """The VMs named add up, and there is one for each concurrent episode."""
        from mcpworld.env.vm.environment import check_vm_pool

        check_vm_pool(settings.env.vm, concurrency)


BACKENDS.register("local")(LocalBackend())
BACKENDS.register("docker")(DockerBackend())
BACKENDS.register("vm")(VmBackend())


def backend_of(name: str) -> Backend:
    """The backend ``env.backend=name`` names, with what it declares (a plain function: the defaults)."""
    entry = BACKENDS.get(name)
    return entry if isinstance(entry, Backend) else BuildFunction(entry)


def backend_stages(backend: str) -> bool:
    """Whether env.stage can hold on ``backend`` (``Backend.stages``), asked before any desktop starts."""
    return backend_of(backend).stages


def make_environment(settings: DesktopSettings, programs: Sequence[Program] = (), apps: Sequence[str] = ()) -> Environment:
    """A desktop of the configured backend that can start ``programs`` (the app configs' ones);
    ``apps``: the app configs the run's tasks start (what a docker image must hold)."""
    return backend_of(settings.env.backend)(settings, programs, apps)


def make_environments(
    settings: DesktopSettings, programs: Sequence[Program], n: int, apps: Sequence[str] = ()
) -> list[Environment]:
    """``n`` desktops, started side by side (containers take a moment each); all or none. Each gets
    its slot (0 … n-1): env=vm gives each its own VM."""
    from dataclasses import replace

    if n <= 1:
        return [make_environment(replace(settings, slot=i), programs, apps) for i in range(n)]
    with ThreadPoolExecutor(n) as workers:
        futures = [workers.submit(make_environment, replace(settings, slot=i), programs, apps) for i in range(n)]
    made = [f.result() for f in futures if f.exception() is None]
    failed = next((f.exception() for f in futures if f.exception() is not None), None)
    if failed is not None:
        for env in made:
            env.close()
        raise failed
    return made
