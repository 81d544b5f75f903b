"""Reset-to-ready per application: restore the golden home (task context + app profiles), start
the desktop, launch the app by the command the suites use, and wait until it takes input (its
window answers a ping, its control interface answers). Cold: the first reset of a new desktop
(new work folder, the app's first start in that home); warm: the next resets of the same desktop.
Peak memory: the largest total PSS of the desktop's processes (X server, D-Bus, window manager,
the app) seen while it starts and settles. The anchor: OSWorld waits a fixed 60 s after a reset
(and 20 s before evaluating) instead of asking whether the app is ready.

env=docker beside env=local, in the same run: the same task on a DockerEnvironment (each desktop in a
container of the desktop image holding the app's Debian packages). Every docker episode gets a fresh
container; cold: the first reset after the environment is made (a fresh container, a new work folder,
the app's first start), warm: the next resets of the same environment, whose container was started
ahead in the background (the warm pool). Also: container start to ready (making the
DockerEnvironment: its first container's desktop service answers), the time a warm reset waited for
its pooled container, and the image's size. Targets (the issue): warm ≤ 3 s for LibreOffice, start to
ready ≤ 5 s hidden by the pool. Skipped, with a printed line, under --no-docker or when no Docker
engine answers.

With env.stage (the staged columns, env=local): each worker's next episode is set up whole on its
second desktop while one runs, so the reset a user perceives is the hand-over: from the end of the
episode before to the next episode's first observation (benchmarks/handover.py), through the real job
(`python -m mcpworld`, one task per app whose oracle waits --episode-s seconds, longer than its staging).
Target: ≤ 50 ms median for every app whose episode outlasts its staging.

    python benchmarks/reset_to_ready.py [--cold 3] [--warm 5] [--staged 5] [--apps vlc,gimp] [--no-docker]
    python benchmarks/reset_to_ready.py --cold 0 --no-docker   # the staged table only
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil
from handover import handovers  # (benchmarks/, beside this script)
from rich.console import Console
from rich.table import Table

from mcpworld.apps.catalog import programs
from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.task import Task
from mcpworld.env.base import Environment
from mcpworld.env.docker import image as docker_image
from mcpworld.env.local.display import MARKER
from mcpworld.env.local.environment import LocalEnvironment

# app → (launch command as a suite writes it, window title that means "it is there", target s)
APPS = {
    "mousepad": (["mousepad"], "Mousepad", 0.5),
    "xterm": (["xterm"], "xterm", 0.5),
    "pcmanfm": (["pcmanfm", "~"], "home", 0.5),
    "libreoffice_calc": (["libreoffice", "--calc"], "LibreOffice Calc", 2.0),
    "libreoffice_writer": (["libreoffice", "--writer"], "LibreOffice Writer", 2.0),
    "libreoffice_impress": (["libreoffice", "--impress"], "LibreOffice Impress", 2.0),
    "chromium": (["google-chrome"], "Chromium", 2.0),
    "gimp": (["gimp"], "GNU Image Manipulation Program", None),
    "vlc": (["vlc"], "VLC media player", None),
    "thunderbird": (["thunderbird"], "Thunderbird", None),
    "vscode": (["code"], "Visual Studio Code", None),
}
IN_DESKTOP_IMAGE = {"xterm", "mousepad", "pcmanfm"}  # mcpworld/data/docker/desktop.Dockerfile installs them: no packages
DOCKER_WARM_TARGET_S = {"libreoffice_calc": 3.0, "libreoffice_writer": 3.0, "libreoffice_impress": 3.0}
START_TARGET_S = 5.0  # container start to ready


class PeakMemory:
    """Samples the total PSS of one desktop's processes every 100 ms until stopped."""

    def __init__(self, desktop_id: str):
        self.desktop_id, self.peak = desktop_id, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            total = 0
            for proc in psutil.process_iter():
                try:
                    if proc.environ().get(MARKER) == self.desktop_id:
                        total += proc.memory_full_info().pss
                except (psutil.Error, OSError):
                    continue
            self.peak = max(self.peak, total)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def reset_once(env: Environment, task: Task, work: Path, n: int) -> tuple[float, int]:
    meter = PeakMemory(str(env.workroot))
    started = time.perf_counter()
    env.reset(task, work / f"ep{n}")
    seconds = time.perf_counter() - started
    time.sleep(1.0)  # the app settles (first paint, background work): part of its footprint
    peak = meter.stop()
    env.end_episode()
    return seconds, peak


def app_task(app: str, work: Path) -> Task:
    command, window, _ = APPS[app]
    return Task(
        id=f"bench/{app}",
        app=app,
        instruction="-",
        dir=work,
        source=work / "task.yaml",
        setup=[{"launch": {"command": command, "window": window, "timeout": 90}}],
    )


def measure(app: str, cold: int, warm: int, work: Path) -> dict:
    task = app_task(app, work)
    colds, warms, peaks = [], [], []
    n = 0
    for _ in range(cold):
        with LocalEnvironment(1000, 1000, programs=programs()) as env:
            seconds, peak = reset_once(env, task, work, n := n + 1)
            colds.append(seconds)
            peaks.append(peak)
            for _ in range(warm if not warms else 0):  # the warm series on the first desktop
                seconds, peak = reset_once(env, task, work, n := n + 1)
                warms.append(seconds)
                peaks.append(peak)
    return {"cold": colds, "warm": warms, "peak": max(peaks)}


ROOT = Path(__file__).resolve().parents[1]
HANDOVER_TARGET_S = 0.05


def staged_task(app: str, folder: Path, episode_s: float) -> None:
    """A task that starts ``app`` as the suites do and whose oracle only waits ``episode_s``."""
    command, window, _ = APPS[app]
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(
        json.dumps(
            {
                "app": app,
                "instruction": "-",
                "setup": [{"launch": {"command": command, "window": window, "timeout": 90}}],
                "evaluator": {
                    "func": "exact_match",
                    "result": {"type": "vm_command_line", "command": "echo ok"},
                    "expected": {"type": "rule", "rules": {"expected": "ok"}},
                },
                "solution": {"gui": [{"computer": {"action": "wait", "duration": episode_s}}]},
            }
        )
    )


def measure_staged(app: str, episodes: int, episode_s: float, work: Path) -> dict:
    """The perceived resets of ``episodes`` episodes of one worker with env.stage=true."""
    root = work / f"staged-{app}"
    staged_task(app, root / "tasks" / app / "hold", episode_s)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld",
            "env=local",
            "env.stage=true",
            "provider=oracle",
            f"tasks.root={root / 'tasks'}",
            f"attempts={episodes}",
            "tracking=none",
            f"hydra.run.dir={root / 'job'}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    if proc.returncode != 0:
        print(f"env.stage {app}: the job failed: {proc.stderr.strip()[-300:]}")
    found = [h for h in handovers(root / "job") if h.staged]
    return {"perceived": [h.perceived_s for h in found], "outlasted": bool(found) and all(h.outlasted for h in found)}


def docker_client() -> object | None:
    """A client of a Docker engine that answers now, else None with the reason printed (this script
    does not install or start one, as ``docker_image.engine()`` would as root)."""
    client, why = docker_image.answering()
    if client is None:
        print(f"env=docker skipped: no Docker engine answers ({why})")
    return client


def docker_image_for(app: str) -> str:
    """The desktop image holding ``app`` (built on first use; the image without apps for those the
    desktop image has anyway)."""

    packages = [] if app in IN_DESKTOP_IMAGE else docker_image.app_packages(programs(), [app])
    return docker_image.desktop_image(None, packages)


def time_pool_waits(env: Any, waits: list[float]) -> None:
    """Record how long each reset waits for its container (the pooled spare: ≈ 0 when the pool hides
    the start); measured around the backend's own step, where it has one."""
    inner = getattr(env, "_next_container", None)
    if inner is None:
        return

    def timed() -> None:
        started = time.perf_counter()
        inner()
        waits.append(time.perf_counter() - started)

    env._next_container = timed


def measure_docker(app: str, cold: int, warm: int, work: Path, client: Any, image: str) -> dict:
    from mcpworld.env.docker.environment import DockerEnvironment

    task = app_task(app, work / "docker")
    starts, colds, warms, waits, peaks = [], [], [], [], []
    n = 0
    for _ in range(cold):
        with contextlib.ExitStack() as stack:
            started = time.perf_counter()
            env = stack.enter_context(DockerEnvironment(1000, 1000, image=image, client=client, programs=programs()))
            starts.append(time.perf_counter() - started)
            seconds, peak = reset_once(env, task, work / "docker", n := n + 1)
            colds.append(seconds)
            peaks.append(peak)
            if not warms:  # the warm series on the first environment
                time_pool_waits(env, waits)
                for _ in range(warm):
                    seconds, peak = reset_once(env, task, work / "docker", n := n + 1)
                    warms.append(seconds)
                    peaks.append(peak)
    return {"start": starts, "cold": colds, "warm": warms, "wait": waits, "peak": max(peaks)}


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10, method="inclusive")[-1] if len(values) > 1 else values[0]


def median(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f}" if values else "-"


def verdict(target: float | None, values: list[float]) -> str:
    if target is None or not values:
        return "-"
    return f"≤ {target:g} {'met' if statistics.median(values) <= target else 'MISSED'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", type=int, default=3)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--apps", default=",".join(APPS))
    parser.add_argument("--no-docker", action="store_true", help="skip the env=docker columns")
    parser.add_argument("--staged", type=int, default=5, help="episodes per app with env.stage (0: skip)")
    parser.add_argument("--episode-s", type=float, default=8.0, help="how long each staged episode lasts")
    args = parser.parse_args()
    client = None
    if args.no_docker:
        print("env=docker skipped: --no-docker")
    else:
        client = docker_client()
    table = Table(
        title="reset-to-ready (restore + desktop + launch + takes input), seconds, env=local | env=docker; OSWorld waits 60 s"
    )
    columns = ["app", "local cold med", "cold p90", "local warm med", "warm p90", "target (local warm)", "local peak PSS MiB"]
    if client is not None:
        columns += [
            "docker cold med",
            "cold p90",
            "docker warm med",
            "warm p90",
            "target (docker warm)",
            "docker peak PSS MiB",
            f"start→ready med (≤ {START_TARGET_S:g})",
            "pool wait med (warm)",
            "image GB",
        ]
    for column in columns:
        table.add_column(column, justify="left" if column == "app" else "right", no_wrap=column == "app")
    images: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="mcpworld-bench-") as tmp:
        for app in args.apps.split(",") if args.cold else []:  # (--cold 0: the staged table only)
            m = measure(app, args.cold, args.warm, Path(tmp))
            row = [
                app,
                median(m["cold"]),
                f"{p90(m['cold']):.2f}",
                median(m["warm"]),
                f"{p90(m['warm']):.2f}",
                verdict(APPS[app][2], m["warm"]),
                f"{m['peak'] / 2**20:.0f}",
            ]
            if client is not None:
                try:
                    image = docker_image_for(app)
                    images[image] = client.images.get(image).attrs["Size"]
                    d = measure_docker(app, args.cold, args.warm, Path(tmp), client, image)
                    row += [
                        median(d["cold"]),
                        f"{p90(d['cold']):.2f}",
                        median(d["warm"]),
                        f"{p90(d['warm']):.2f}" if d["warm"] else "-",
                        verdict(DOCKER_WARM_TARGET_S.get(app), d["warm"]),
                        f"{d['peak'] / 2**20:.0f}" if d["peak"] else "-",
                        f"{median(d['start'])} {'met' if statistics.median(d['start']) <= START_TARGET_S else 'MISSED'}",
                        median(d["wait"]),
                        f"{images[image] / 1e9:.2f}",
                    ]
                except (InfraError, UserError) as exc:  # no image for it, or its container fails
                    print(f"env=docker {app}: not measured: {str(exc)[:300]}")
                    row += ["-"] * 9
            table.add_row(*row)
    if args.cold:
        Console(width=max(Console().width, 240)).print(table)
    for image, size in images.items():
        print(f"env=docker image {image}: {size / 1e9:.2f} GB ({size} bytes)")
    if args.staged:
        staged = Table(
            title=f"perceived reset with env.stage (previous end → first observation), env=local, "
            f"episodes of {args.episode_s:g} s, seconds"
        )
        for column in ("app", "handovers", "median", "p90", f"target ≤ {HANDOVER_TARGET_S:g}", "episode outlasted staging"):
            staged.add_column(column, justify="left" if column == "app" else "right")
        with tempfile.TemporaryDirectory(prefix="mcpworld-bench-") as tmp:
            for app in args.apps.split(","):
                m = measure_staged(app, args.staged, args.episode_s, Path(tmp))
                seen = m["perceived"]
                staged.add_row(
                    app,
                    str(len(seen)),
                    median(seen, 3),
                    f"{p90(seen):.3f}" if seen else "-",
                    verdict(HANDOVER_TARGET_S, seen) if seen else "-",
                    "yes" if m["outlasted"] else "no",
                )
        Console(width=max(Console().width, 160)).print(staged)


if __name__ == "__main__":
    main()
