"""Per-step overhead: in-process XTest + XShm grab vs xdotool + scrot; env=local vs env=docker.

Why this exists: every agent step is "act, then screenshot", so its fixed cost is paid hundreds of
times per episode. Two comparisons, each with its two paths alternated (A/B, then B/A) every
iteration so machine noise hits both equally:

1. mcpworld drives the display in-process (``mcpworld.env.local.xinput`` + ``mcpworld.env.screen``)
   instead of shelling out to xdotool/scrot; checked on one Xvfb display.
2. The same step through the Environment API, ``env.act(click)`` + ``env.screenshot()`` + JPEG
   encode, on a LocalEnvironment (env=local) and a DockerEnvironment (env=docker: the desktop in a
   container of the desktop image, driven over HTTP), each reset with a task that launches xterm.
   Target: docker ≤ 2× local and ≤ 20 ms median. Skipped, with a printed line, under --no-docker or
   when no Docker engine answers.

    python benchmarks/step_overhead.py [--n 100] [--size 1000x1000] [--no-docker]

Exits 0 whatever the figures (it is a benchmark, not a test); exits 2 only if a tool is missing.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from mcpworld.apps.catalog import programs
from mcpworld.core.errors import InfraError
from mcpworld.core.task import Task
from mcpworld.env import screen
from mcpworld.env.base import Environment
from mcpworld.env.docker import image as docker_image
from mcpworld.env.local.display import VirtualDisplay
from mcpworld.env.local.environment import LocalEnvironment, scrubbed_env
from mcpworld.env.local.windows import Windows
from mcpworld.env.local.xinput import XInput

TOOLS = {"Xvfb": "xvfb", "dbus-daemon": "dbus", "openbox": "openbox", "xterm": "xterm", "xdotool": "xdotool", "scrot": "scrot"}
TARGET_MS = 10.0
DOCKER_TARGET_MS = 20.0  # and at most DOCKER_TARGET_RATIO × env=local's median
DOCKER_TARGET_RATIO = 2.0
WARMUP = 5


def ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def in_process_step(inp: XInput, scr: screen.Screen, x: int, y: int) -> dict[str, float]:
    t = time.perf_counter()
    inp.click(x, y)
    action = ms(t)
    t = time.perf_counter()
    image = scr.grab()
    grab = ms(t)
    t = time.perf_counter()
    screen.encode(image, "jpeg")  # the default observation format (agent.image_format)
    jpeg = ms(t)
    t = time.perf_counter()
    screen.encode(image, "png")
    png = ms(t)
    return {
        "action": action,
        "grab": grab,
        "png": png,
        "jpeg": jpeg,
        "step": action + grab + jpeg,
        "step_png": action + grab + png,
    }


def subprocess_step(env: dict[str, str], shot: Path, x: int, y: int) -> dict[str, float]:
    t = time.perf_counter()
    subprocess.run(["xdotool", "mousemove", str(x), str(y), "click", "1"], env=env, check=True)
    action = ms(t)
    t = time.perf_counter()
    subprocess.run(["scrot", "-o", "-z", str(shot)], env=env, check=True)
    grab = ms(t)
    t = time.perf_counter()
    shot.read_bytes()
    read = ms(t)
    return {"action": action, "grab": grab, "read": read, "step": action + grab + read}


def env_step(env: Environment, x: int, y: int) -> dict[str, float]:
    """One agent step through the Environment API: the same calls and work for every backend."""
    t = time.perf_counter()
    env.act({"kind": "click", "x": x, "y": y})
    action = ms(t)
    t = time.perf_counter()
    image = env.screenshot()
    grab = ms(t)
    t = time.perf_counter()
    screen.encode(image, "jpeg")
    jpeg = ms(t)
    return {"action": action, "grab": grab, "jpeg": jpeg, "step": action + grab + jpeg}


def docker_client() -> object | None:
    """A client of a Docker engine that answers now, else None with the reason printed (this script
    does not install or start one, as ``docker_image.engine()`` would as root)."""
    client, why = docker_image.answering()
    if client is None:
        print(f"env=docker skipped: no Docker engine answers ({why})")
    return client


def environment_steps(width: int, height: int, n: int, use_docker: bool) -> dict[str, list[dict[str, float]]]:
    """env=local and (when it can) env=docker, both reset with an xterm, steps alternated A/B."""
    work = Path(tempfile.mkdtemp(prefix="mcpworld-bench-"))
    task = Task(
        id="bench/step-overhead",
        app="xterm",
        instruction="-",
        dir=work,
        source=work / "task.yaml",
        setup=[{"launch": {"command": ["xterm", "-geometry", "120x50+0+0"], "window": "xterm", "timeout": 30}}],
    )
    envs: dict[str, Environment] = {}
    samples: dict[str, list[dict[str, float]]] = {}
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, work, ignore_errors=True)
        envs["local"] = stack.enter_context(LocalEnvironment(width, height, programs=programs()))
        client = docker_client() if use_docker else None
        if client is not None:
            from mcpworld.env.docker.environment import DockerEnvironment

            try:
                image = docker_image.desktop_image()  # the image without apps: xterm is in it
                envs["docker"] = stack.enter_context(
                    DockerEnvironment(width, height, image=image, client=client, programs=programs())
                )
                size = client.images.get(image).attrs["Size"]
                print(f"env=docker image {image}: {size / 1e9:.2f} GB")
            except InfraError as exc:  # the image does not build, the container does not answer
                print(f"env=docker skipped: {str(exc)[:300]}")
        for name, env in envs.items():
            env.reset(task, work / name)
            samples[name] = []
        names = list(envs)
        for i in range(WARMUP + n):
            x, y = 100 + (i * 37) % 500, 100 + (i * 53) % 500
            for name in names if i % 2 == 0 else names[::-1]:
                sample = env_step(envs[name], x, y)
                if i >= WARMUP:
                    samples[name].append(sample)
        for env in envs.values():
            env.end_episode()
    return samples


def stats(samples: list[dict[str, float]], key: str) -> tuple[float, float]:
    values = sorted(s[key] for s in samples)
    return statistics.median(values), values[min(len(values) - 1, int(0.9 * len(values)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100, help="measured iterations per path")
    parser.add_argument("--size", default="1000x1000", help="display WIDTHxHEIGHT")
    parser.add_argument("--no-docker", action="store_true", help="skip the env=docker column")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.lower().split("x"))
    for tool, package in TOOLS.items():
        if not shutil.which(tool):
            print(f"error: '{tool}' is not installed: apt-get install -y {package}", file=sys.stderr)
            return 2

    work = Path(tempfile.mkdtemp(prefix="mcpworld-bench-"))
    (work / "home").mkdir()
    (work / "run").mkdir(mode=0o700)
    shot = work / "shot.png"
    display = VirtualDisplay(width, height)
    inp = windows = scr = None
    try:
        display.start(scrubbed_env(work / "home", work / "run"))
        display.procs.spawn(["xterm", "-geometry", "120x50+0+0"], env=display.env, cwd=str(work))
        windows = Windows(display.name)
        if windows.wait("xterm", 10) is None:
            print("error: xterm window did not appear", file=sys.stderr)
            return 2
        inp = XInput(display.name)
        scr = screen.Screen(display.name)
        ours: list[dict[str, float]] = []
        theirs: list[dict[str, float]] = []
        for i in range(WARMUP + args.n):
            x, y = 100 + (i * 37) % 500, 100 + (i * 53) % 500  # inside the xterm, a new spot each time
            if i % 2 == 0:  # A then B, next iteration B then A
                ra = in_process_step(inp, scr, x, y)
                rb = subprocess_step(display.env, shot, x, y)
            else:
                rb = subprocess_step(display.env, shot, x, y)
                ra = in_process_step(inp, scr, x, y)
            if i >= WARMUP:
                ours.append(ra)
                theirs.append(rb)
    finally:
        for part in (inp, windows, scr):
            if part:
                part.close()
        display.stop()
        shutil.rmtree(work, ignore_errors=True)

    table = Table(
        title=f"step = action + screenshot + encode, {width}x{height}, n={args.n} (+{WARMUP} warm-up), A/B alternated; ms"
    )
    for column in ("part", "in-proc med", "p90", "subproc med", "p90"):
        table.add_column(column, justify="left" if column == "part" else "right")
    rows = [
        ("action: move + click", "action", "action"),
        ("grab (XShm / scrot)", "grab", "grab"),
        ("encode JPEG q85 / read file", "jpeg", "read"),
        ("encode PNG", "png", None),
        ("STEP (JPEG, the default)", "step", "step"),
        ("STEP with PNG", "step_png", None),
    ]
    for label, a_key, b_key in rows:
        cells = [f"{v:.2f}" for v in stats(ours, a_key)]
        cells += [f"{v:.2f}" for v in stats(theirs, b_key)] if b_key else ["-", "-"]
        table.add_row(label, *cells)
    Console().print(table)

    a_med, b_med = stats(ours, "step")[0], stats(theirs, "step")[0]
    p_med = stats(ours, "step_png")[0]
    verdict = "PASS" if a_med <= TARGET_MS else "FAIL"
    print(
        f"in-process median {a_med:.1f} ms vs subprocess {b_med:.1f} ms ({b_med / a_med:.1f}x faster); "
        f"target in-process <= {TARGET_MS:.0f} ms: {verdict}  "
        f"[PNG variant {p_med:.1f} ms]"
    )

    if args.no_docker:
        print("env=docker skipped: --no-docker")
    by_env = environment_steps(width, height, args.n, use_docker=not args.no_docker)
    table = Table(
        title=f"step through the Environment API = env.act(click) + env.screenshot() + JPEG encode, "
        f"{width}x{height}, n={args.n} (+{WARMUP} warm-up), A/B alternated; ms"
    )
    table.add_column("part")
    for name in by_env:
        table.add_column(f"env={name} med", justify="right")
        table.add_column("p90", justify="right")
    for label, key in (("act: move + click", "action"), ("screenshot", "grab"), ("encode JPEG q85", "jpeg"), ("STEP", "step")):
        table.add_row(label, *(f"{v:.2f}" for name in by_env for v in stats(by_env[name], key)))
    Console().print(table)
    local_med = stats(by_env["local"], "step")[0]
    if "docker" in by_env:
        docker_med = stats(by_env["docker"], "step")[0]
        bound = min(DOCKER_TARGET_MS, DOCKER_TARGET_RATIO * local_med)
        verdict = "PASS" if docker_med <= bound else "FAIL"
        print(
            f"env=docker median {docker_med:.1f} ms vs env=local {local_med:.1f} ms "
            f"({docker_med / local_med:.1f}x); target docker <= {DOCKER_TARGET_RATIO:g}x local and "
            f"<= {DOCKER_TARGET_MS:.0f} ms (here <= {bound:.1f} ms): {verdict}"
        )
    else:
        print(f"env=local median {local_med:.1f} ms (no env=docker column)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
