"""A long faulty sweep that must lose nothing: hundreds of episodes of the built-in suite at
concurrency 4 while faults are injected on a schedule, then checks that every episode is there
once, that each fault's episode got the status that blames what failed (never the agent), that
nothing of ours is left on the machine, and that the harness's memory stayed flat.

Faults (each one real: real processes, a real MLflow server over HTTP, a real tmpfs, a real
OpenAI-compatible endpoint, tests/fakes/oracle_replay_server.py, replaying the oracle's calls):

    app_kill         the task's app is killed mid-episode           → infra_error, an app_exit event
    x_kill           a desktop's X server is killed mid-episode      → infra_error
    provider_errors  one-off HTTP 500s and streams cut mid-reply     → retried: never a failure
    provider_outage  every request answers 500 for longer than the provider retries → infra_error
    tracking_down    the MLflow server is stopped for 30 s, then started again → every episode logged once
    disk_full        the desktops' work folder disk (a tmpfs) is filled up → infra_error, never failure
    sigterm          SIGTERM to the whole run, then the same command    → interrupted, then resumed
    container_kill   (env=docker, when an engine answers) a desktop container is killed → infra_error

    python benchmarks/soak.py                         # 9 light tasks × 34 attempts = 306 episodes
    python benchmarks/soak.py --attempts 2 --faults x_kill,sigterm --docker off   # a short one
    python benchmarks/soak.py --check DIR             # the checks again, on a finished soak's folder

Exits 1 when a check fails. ``soak.json`` in the folder holds what was injected where.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.fakes

from mcpworld.core.paths import BUILTIN_TASKS  # noqa: E402
from mcpworld.env.local import cgroup, leftovers  # noqa: E402
from mcpworld.env.local.display import MARKER, socket_answers  # noqa: E402
from mcpworld.tasks.select import discover, select  # noqa: E402
from tests.fakes.oracle_replay_server import OracleReplayServer  # noqa: E402

LOCAL_FAULTS = ("app_kill", "x_kill", "provider_errors", "provider_outage", "tracking_down", "disk_full", "sigterm")
ALL_FAULTS = (*LOCAL_FAULTS, "container_kill")
AGENT_BLAMED = {"failure", "timeout", "agent_error"}
PROGRESS = re.compile(r"^\s*\[(\d+)/(\d+)\]")
EXPERIMENT = "soak"
MEMORY_TOLERANCE = 0.10
RSS_BASELINE_AFTER = 20
NETNS_DIR = Path("/run/netns")


def log(message: str) -> None:
    print(f"soak {time.strftime('%H:%M:%S')} {message}", flush=True)


# ------------------------------------------------------------------------ the harness, as a user runs it


class HarnessRun:
    """One ``python -m mcpworld`` process (its own process group, as from a terminal): progress
    counted from its output, its RSS sampled every second."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path):
        self.log_path = log_path
        self._log = log_path.open("a")
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
        )
        self.pid = self.proc.pid
        LIVE.append(self)
        self.done = 0
        self.rss: list[tuple[float, int, int]] = []  # (time, episodes done, bytes)
        self.output: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._sample, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._log.write(line)
            self._log.flush()
            self.output.append(line)
            if m := PROGRESS.match(line):
                with self._changed:
                    self.done = int(m.group(1))
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _sample(self) -> None:
        try:
            me = psutil.Process(self.pid)
            while self.proc.poll() is None:
                self.rss.append((time.time(), self.done, me.memory_info().rss))
                time.sleep(1.0)
        except psutil.Error:
            pass

    def wait_done(self, episodes: int, timeout_s: float = 3600) -> bool:
        """Until ``episodes`` have finished (True) or the run ended first (False)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self.done < episodes and self.proc.poll() is None and time.monotonic() < deadline:
                self._changed.wait(timeout=1.0)
        return self.done >= episodes

    def stop(self) -> None:
        """SIGTERM to its process group, as Ctrl-C in a terminal; SIGKILL if it is still there after 2 min."""
        if self.proc.poll() is None:
            os.killpg(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)

    def wait(self, timeout_s: float = 3600) -> int:
        code = self.proc.wait(timeout=timeout_s)
        time.sleep(0.2)  # the reader's last lines
        return code


LIVE: list[HarnessRun] = []  # every harness run started: stopped if the soak itself is stopped


@dataclass
class Soak:
    """Everything a soak made: where, which processes, what was injected (saved as soak.json)."""

    folder: Path
    work_base: Path
    tmp: Path
    mlflow_db: Path
    runs: list[dict[str, Any]] = field(default_factory=list)  # job dir, expected keys, pids, exit codes
    faults: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)

    def save(self) -> None:
        data = {
            "folder": str(self.folder),
            "work_base": str(self.work_base),
            "tmp": str(self.tmp),
            "mlflow_db": str(self.mlflow_db),
            "runs": self.runs,
            "faults": self.faults,
            "figures": self.figures,
        }
        (self.folder / "soak.json").write_text(json.dumps(data, indent=2))

    @classmethod
    def load(cls, folder: Path) -> Soak:
        data = json.loads((folder / "soak.json").read_text())
        return cls(
            Path(data["folder"]),
            Path(data["work_base"]),
            Path(data["tmp"]),
            Path(data["mlflow_db"]),
            data["runs"],
            data["faults"],
            data["figures"],
        )

    def pids(self) -> set[int]:
        return {pid for run in self.runs for pid in run["pids"]}


# ------------------------------------------------------------------------ the tracking server


class MlflowServer:
    """``mlflow server`` over HTTP on a fixed port, so it can be stopped and started again."""

    def __init__(self, db: Path, artifacts: Path, log_path: Path):
        from tests.fakes.scripted_server import free_port

        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.argv = [
            str(Path(sys.executable).with_name("mlflow")),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{db}",
            "--artifacts-destination",
            str(artifacts),
        ]
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 180) -> None:
        import httpx

        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with self.log_path.open("ab") as out:
            self.proc = subprocess.Popen(self.argv, env=env, stdout=out, stderr=out, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.uri}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None:
                raise SystemExit(f"mlflow server exited {self.proc.returncode}: see {self.log_path}")
            time.sleep(0.5)
        raise SystemExit(f"mlflow server did not answer {self.uri}/health in {timeout_s:.0f}s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


# ------------------------------------------------------------------------ finding a running episode


def trace_events(episode: Path) -> list[dict[str, Any]]:
    try:
        lines = (episode / "trace.jsonl").read_text().splitlines()
    except OSError:
        return []
    events = []
    for line in lines:
        with contextlib.suppress(ValueError):  # a line being written
            events.append(json.loads(line))
    return events


def running_episodes(job: Path, before_first_action: bool = False) -> dict[str, Path]:
    """Episodes of ``job`` inside their agent's turn (set up, not yet judged; with
    ``before_first_action``, not one tool call made yet), by the name of their desktop's work folder
    (from the episode's logs/desktop.json cgroup)."""
    found: dict[str, Path] = {}
    episodes = job / "episodes"
    if not episodes.is_dir():
        return found
    for trace in episodes.rglob("trace.jsonl"):
        folder = trace.parent
        if (folder / "result.json").exists():
            continue
        kinds = {e.get("type") for e in trace_events(folder)}
        if "setup_done" not in kinds or kinds & {"evaluation", "episode_end", "error"}:
            continue
        if before_first_action and "tool_call" in kinds:
            continue
        try:
            desktop = json.loads((folder / "logs" / "desktop.json").read_text())
        except (OSError, ValueError):
            desktop = {}
        where = str(desktop.get("cgroup") or desktop.get("workroot") or "")
        name = where.rsplit(".", 1)[-1] if where else ""
        found[name or str(folder)] = folder
    return found


def desktop_processes(work_base: Path) -> dict[str, list[psutil.Process]]:
    """Processes marked with a desktop under ``work_base``, by work folder name."""
    out: dict[str, list[psutil.Process]] = {}
    for proc in psutil.process_iter(["name"]):
        marker = _environ(proc).get(MARKER, "")
        if marker.startswith(str(work_base) + "/"):
            out.setdefault(Path(marker).name, []).append(proc)
    return out


def _environ(proc: psutil.Process) -> dict[str, str]:
    try:
        return proc.environ()
    except (psutil.Error, OSError):
        return {}


def episode_key(job: Path, folder: Path) -> str:
    return str(folder.relative_to(job / "episodes"))


class Injector:
    """Runs the faults against the live run; each records what it hit in ``soak.faults``."""

    def __init__(self, soak: Soak, server: OracleReplayServer, job: Path, run: HarnessRun):
        self.soak, self.server, self.job, self.run = soak, server, job, run

    def _frozen(
        self,
        act: Callable[[dict[str, Path]], tuple[str, Path] | None],
        kind: str,
        timeout_s: float = 120,
        before_first_action: bool = False,
    ) -> None:
        """Hold the model's replies (every episode in its agent's turn waits), let ``act`` pick one
        and break something under it, then let the replies go."""
        deadline = time.monotonic() + timeout_s
        hit = None
        at = 0.0
        while hit is None and time.monotonic() < deadline and self.run.proc.poll() is None:
            self.server.hold()
            try:
                time.sleep(0.3)
                running = running_episodes(self.job, before_first_action)
                hit = act(running) if running else None
                at = time.time()
                if hit:
                    time.sleep(0.5)  # the process is reaped and its window gone before the next step
            finally:
                self.server.release()
            if hit is None:
                time.sleep(0.5)
        if hit is None:
            self.record(kind, error=f"no episode in its agent's turn within {timeout_s:.0f}s (or the run ended)")
            return
        what, folder = hit
        self.record(kind, at=at, job=str(self.job), episode=episode_key(self.job, folder), what=what)

    def record(self, kind: str, **details: Any) -> None:
        entry = {"kind": kind, "at": time.time(), **details}
        self.soak.faults.append(entry)
        log(f"fault {kind}: {json.dumps({k: v for k, v in details.items()})}")

    def kill_in_desktop(self, kind: str, names: set[str], before_first_action: bool = False) -> None:
        def act(running: dict[str, Path]) -> tuple[str, Path] | None:
            procs = desktop_processes(self.soak.work_base)
            hit_before = {f.get("episode") for f in self.soak.faults}
            for name, folder in running.items():
                if episode_key(self.job, folder) in hit_before:
                    continue  # one fault per episode, so that each is seen on its own
                targets = [p for p in procs.get(name, []) if _name(p) in names]
                if targets:
                    for p in targets:
                        p.kill()
                    return f"{'+'.join(sorted({_name(p) for p in targets}))} pid {targets[0].pid}", folder
            return None

        self._frozen(act, kind, before_first_action=before_first_action)

    def kill_container(self) -> None:
        import docker

        client = docker.from_env()

        def act(running: dict[str, Path]) -> tuple[str, Path] | None:
            ours = [
                c
                for c in client.containers.list(filters={"label": "mcpworld.owner"})
                if _owner_pid(c.labels.get("mcpworld.owner", "")) in self.soak.pids()
            ]
            for folder in running.values():  # the episode's container: the one its viewer's port leads to
                port = viewer_port(folder)
                mine = [c for c in ours if port and port in _host_ports(c)]
                if mine:
                    mine[0].kill()
                    return f"container {mine[0].name}", folder
            return None

        self._frozen(act, "container_kill")

    def window(
        self, kind: str, start: Callable[[], object], end: Callable[[], object], hold: Callable[[], object], **details: Any
    ) -> None:
        """A fault with a duration: everything that ran inside [start, end] is its episodes."""
        t0 = time.time()
        start()
        try:
            hold()
        finally:
            end()
        self.soak.faults.append({"kind": kind, "from": t0, "to": time.time(), **details})
        log(f"fault {kind}: {time.time() - t0:.1f}s {json.dumps(details)}")


def _name(proc: psutil.Process) -> str:
    try:
        return proc.name()
    except psutil.Error:
        return ""


def viewer_port(episode: Path) -> str | None:
    """The host port of the episode's noVNC viewer (env=docker publishes one per container)."""
    url = next((e.get("url", "") for e in trace_events(episode) if e.get("type") == "desktop_viewer"), "")
    m = re.match(r"https?://[^/:]+:(\d+)/", url)
    return m.group(1) if m else None


def _host_ports(container: Any) -> set[str]:
    return {b.get("HostPort", "") for bindings in (container.ports or {}).values() for b in bindings or []}


def _owner_pid(label: str) -> int | None:
    try:
        return int(label.split()[1])
    except (IndexError, ValueError):
        return None


def fill_disk(base: Path, leave_bytes: int) -> Path:
    """Fill the file system of ``base`` until ``leave_bytes`` are free; the filler file."""
    filler = base / "soak-filler"
    free = shutil.disk_usage(base).free - leave_bytes
    with filler.open("wb") as f:
        block = b"\0" * (1 << 20)
        while free > 0:
            n = f.write(block[: min(len(block), free)])
            free -= n
    return filler


# ------------------------------------------------------------------------ the soak


def harness_argv(
    server: OracleReplayServer,
    tracking_uri: str,
    job: Path,
    artifacts: Path,
    tasks: str,
    attempts: int,
    concurrency: int,
    *extra: str,
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mcpworld",
        "model=oracle",
        "provider=openai_compat",
        f"provider.base_url={server.base_url}",
        "provider.max_retries=3",
        f"task=[{tasks}]",
        f"attempts={attempts}",
        f"concurrency={concurrency}",
        "infra_retries=1",
        f"tracking.uri={tracking_uri}",
        f"tracking.artifact_root={artifacts}",
        f"tracking.experiment={EXPERIMENT}",
        f"hydra.run.dir={job}",
        *extra,
    ]


def expected_keys(tasks: str, attempts: int) -> list[str]:
    chosen = select(discover(BUILTIN_TASKS), [], tasks.split(","), [])
    return [f"{t.id}/{a}" for t in chosen for a in range(attempts)]


def solutions(tasks: str) -> dict[str, list[dict[str, Any]]]:
    chosen = select(discover(BUILTIN_TASKS), [], tasks.split(","), [])
    missing = [t.id for t in chosen if not t.solution.get("gui")]
    if missing:
        raise SystemExit(f"these tasks have no GUI solution to replay: {', '.join(missing)} (choose others with --tasks)")
    return {t.instruction: [step.as_written() for step in t.solution.get("gui")] for t in chosen}


def schedule(total: int, faults: list[str]) -> dict[str, int]:
    """After how many finished episodes (of the first process) each fault is injected: spread over
    the run, SIGTERM last (its resumed process finishes the rest)."""
    timed = [f for f in ("app_kill", "x_kill", "provider_outage", "tracking_down", "disk_full") if f in faults]
    first = min(RSS_BASELINE_AFTER + 5, max(1, total // 4))
    last = max(first + 1, int(total * 0.85))
    step = max(1, (int(total * 0.6) - first) // max(1, len(timed)))
    at: dict[str, int] = {kind: min(first + i * step, last - 1) for i, kind in enumerate(timed)}
    if "sigterm" in faults:
        at["sigterm"] = last
    return at


def run_soak(args: argparse.Namespace) -> Soak:
    folder = Path(args.out or tempfile.mkdtemp(prefix="soak-", dir=ROOT / "outputs")).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    # the desktops' accounts must reach both (a pytest tmp_path is root's alone): a folder under /tmp
    scratch = Path(tempfile.mkdtemp(prefix="soak-", dir="/tmp"))
    scratch.chmod(0o755)
    work_base, tmp = scratch / "work", scratch / "tmp"
    work_base.mkdir()
    tmp.mkdir()
    tmp.chmod(0o1777)
    soak = Soak(folder, work_base, tmp, folder / "mlflow.db")
    faults = [f.strip() for f in args.faults.split(",") if f.strip()] if args.faults != "all" else list(ALL_FAULTS)
    unknown = sorted(set(faults) - set(ALL_FAULTS))
    if unknown:
        raise SystemExit(f"--faults: unknown {', '.join(unknown)}; choose from {', '.join(ALL_FAULTS)}")
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.work_mb}m,mode=1777", "soak-work", str(work_base)], check=True)
    server = OracleReplayServer(
        solutions(args.tasks),
        wait_s=args.wait_s,
        error_every=41 if "provider_errors" in faults else 0,
        cut_every=67 if "provider_errors" in faults else 0,
    ).start()
    mlflow = MlflowServer(soak.mlflow_db, folder / "mlartifacts", folder / "mlflow-server.log")
    env = {**os.environ, leftovers.WORK_BASE_VARIABLE: str(work_base), "TMPDIR": str(tmp)}
    began = time.time()
    try:
        mlflow.start()
        log(f"folder {folder}; model {server.base_url}; tracking {mlflow.uri}; work base {work_base} ({args.work_mb} MiB tmpfs)")
        local_job(soak, args, faults, server, mlflow, env)
        if "container_kill" in faults and args.docker != "off":
            docker_job(soak, args, server, mlflow, env)
    finally:
        for run in LIVE:
            run.stop()
        server.release()
        mlflow.stop()
        server.stop()
        soak.figures["wall_s"] = round(time.time() - began, 1)
        soak.figures["ended_at"] = time.time()
        soak.figures["model_answers"] = dict(server.served)
        soak.figures["model_requests"] = len(server.requests)
        soak.save()
        subprocess.run(["umount", str(work_base)], check=False)
    return soak


def local_job(
    soak: Soak, args: argparse.Namespace, faults: list[str], server: OracleReplayServer, mlflow: MlflowServer, env: dict[str, str]
) -> None:
    job = soak.folder / "local"
    keys = expected_keys(args.tasks, args.attempts)
    argv = harness_argv(server, mlflow.uri, job, soak.folder / "mlartifacts", args.tasks, args.attempts, args.concurrency)
    record: dict[str, Any] = {"job": str(job), "keys": keys, "pids": [], "exit": [], "argv": argv[1:]}
    soak.runs.append(record)
    plan = schedule(len(keys), faults)
    log(f"local job: {len(keys)} episodes, concurrency {args.concurrency}; faults after N episodes: {plan}")
    run = HarnessRun(argv, env, soak.folder / "harness.log")
    record["pids"].append(run.pid)
    inject = Injector(soak, server, job, run)
    peak_work = 0

    def watch_disk() -> None:
        nonlocal peak_work
        while run.proc.poll() is None:
            try:
                used = shutil.disk_usage(soak.work_base).used
            except OSError:
                return
            with contextlib.suppress(OSError):
                used -= (soak.work_base / "soak-filler").stat().st_size
            peak_work = max(peak_work, used)
            time.sleep(1.0)

    threading.Thread(target=watch_disk, daemon=True).start()
    for kind, after in sorted(plan.items(), key=lambda item: item[1]):
        if not run.wait_done(after):
            log(f"the run ended before {after} episodes: {kind} not injected")
            break
        if kind == "app_kill":
            # before the agent's first action: the task cannot be done any more, only blamed wrongly
            inject.kill_in_desktop("app_kill", {"mousepad", "xterm", "pcmanfm"}, before_first_action=True)
        elif kind == "x_kill":
            inject.kill_in_desktop("x_kill", {"Xvfb"})
        elif kind == "provider_outage":
            inject.window(
                "provider_outage",
                lambda: server.outage(args.outage_s),
                lambda: None,
                lambda: time.sleep(args.outage_s),
                seconds=args.outage_s,
            )
        elif kind == "tracking_down":
            inject.window(
                "tracking_down", mlflow.stop, mlflow.start, lambda: time.sleep(args.tracking_down_s), seconds=args.tracking_down_s
            )
        elif kind == "disk_full":
            filler: list[Path] = []

            # the closures run inside this iteration (window calls them before it returns); the
            # defaults bind this iteration's filler and run all the same
            def free_disk(filler: list[Path] = filler) -> None:
                for f in filler:
                    f.unlink(missing_ok=True)

            inject.window(
                "disk_full",
                lambda filler=filler: filler.append(fill_disk(soak.work_base, 64 << 10)),
                free_disk,
                lambda run=run: run.wait_done(run.done + args.concurrency + 2, timeout_s=args.disk_full_s),
                free_bytes=64 << 10,
            )
        elif kind == "sigterm":
            settle_hit_episodes(soak, job)  # an earlier kill's episode judged on its own, not stopped
            server.hold()  # the SIGTERM finds episodes in their agent's turn
            try:
                deadline = time.monotonic() + 120
                while not running_episodes(job) and run.proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.3)
                if run.proc.poll() is not None or not running_episodes(job):
                    soak.faults.append(
                        {
                            "kind": "sigterm",
                            "error": "no episode was running any more to stop (give the run more episodes: --attempts)",
                        }
                    )
                    continue
                t0, before = time.time(), run.done
                os.killpg(run.pid, signal.SIGTERM)
            finally:
                server.release()
            code = run.wait(timeout_s=600)
            record["exit"].append(code)
            soak.figures.setdefault("rss", []).append({"pid": run.pid, "stopped_at": t0, "samples": run.rss})
            soak.faults.append(
                {
                    "kind": "sigterm",
                    "at": t0,
                    "job": str(job),
                    "exit": code,
                    "episodes_before": before,
                    "exit_after_s": round(time.time() - t0, 1),
                }
            )
            log(f"fault sigterm: the run exited {code} ({before} episodes done before it); the same command again")
            run = HarnessRun(argv, env, soak.folder / "harness.log")
            record["pids"].append(run.pid)
            inject.run = run
    code = run.wait(timeout_s=4 * 3600)
    record["exit"].append(code)
    record["resumed_output"] = "".join(line for line in run.output if "resuming:" in line)[-500:]
    soak.figures.setdefault("rss", []).append({"pid": run.pid, "stopped_at": None, "samples": run.rss})
    soak.figures["work_base_peak_bytes"] = peak_work
    log(f"local job ended ({code})")


def settle_hit_episodes(soak: Soak, job: Path, timeout_s: float = 180) -> None:
    """Wait until every episode a kill fault hit has its result, so that a SIGTERM soon after does
    not stop it first (its status would then be the SIGTERM's, and the kill's would go unjudged)."""
    hits = [f for f in soak.faults if f.get("job") == str(job) and "episode" in f and "at" in f]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = tries(job)
        if all(any(t.key == f["episode"] and _at(t, f["at"]) for t in found) for f in hits):
            return
        time.sleep(1.0)
    log(f"the episodes hit by {[f['kind'] for f in hits]} had no result within {timeout_s:.0f}s; SIGTERM anyway")


def docker_job(
    soak: Soak, args: argparse.Namespace, server: OracleReplayServer, mlflow: MlflowServer, env: dict[str, str]
) -> None:
    from mcpworld.env.docker import image as docker_image

    client, why = docker_image.answering()
    if client is None:
        log(f"docker segment skipped: no engine answers ({why})")
        soak.figures["docker"] = f"skipped: {why}"
        return
    job = soak.folder / "docker"
    keys = expected_keys(args.docker_tasks, args.docker_attempts)
    argv = harness_argv(
        server, mlflow.uri, job, soak.folder / "mlartifacts", args.docker_tasks, args.docker_attempts, 1, "env=docker"
    )
    record: dict[str, Any] = {"job": str(job), "keys": keys, "pids": [], "exit": [], "argv": argv[1:]}
    soak.runs.append(record)
    log(f"docker job: {len(keys)} episodes, one desktop")
    run = HarnessRun(argv, env, soak.folder / "harness-docker.log")
    record["pids"].append(run.pid)
    if run.wait_done(max(1, len(keys) // 3)):
        Injector(soak, server, job, run).kill_container()
    code = run.wait(timeout_s=3600)
    record["exit"].append(code)
    log(f"docker job ended ({code})")


# ------------------------------------------------------------------------ the checks


@dataclass
class Try:
    job: str
    key: str  # task/attempt
    folder: Path
    status: str
    reason: str
    start: float
    end: float
    events: set[str]


def tries(job: Path) -> list[Try]:
    out = []
    for result in sorted((job / "episodes").rglob("result.json")):
        folder = result.parent
        data = json.loads(result.read_text())
        events = trace_events(folder)
        stamps = [e["ts"] for e in events if "ts" in e]
        key = f"{folder.parent.relative_to(job / 'episodes')}/{folder.name.split('.')[0]}"
        out.append(
            Try(
                str(job),
                key,
                folder,
                str(data["status"]),
                str(data.get("reason") or ""),
                min(stamps, default=0.0),
                max(stamps, default=0.0),
                {str(e.get("type")) for e in events},
            )
        )
    return out


def check(soak: Soak) -> list[str]:
    """Every check; what failed, one line each (empty: all passed). Prints the figures."""
    failed: list[str] = []
    all_tries: list[Try] = []
    for run in soak.runs:
        job = Path(run["job"])
        found = tries(job)
        all_tries += found
        finals = [t for t in found if t.folder.name.isdigit()]
        counts: dict[str, int] = {}
        for t in finals:
            counts[t.key] = counts.get(t.key, 0) + 1
        missing = sorted(set(run["keys"]) - set(counts))
        extra = sorted(set(counts) - set(run["keys"]))
        if missing or extra:
            failed.append(f"{job.name}: results missing for {missing[:5]} ({len(missing)}), unexpected {extra[:5]}")
        unfinished = sorted(t.key for t in finals if t.status != "success")
        if unfinished:
            failed.append(
                f"{job.name}: {len(unfinished)} episode(s) did not end in success after the faults and resume: {unfinished[:5]}"
            )
        if run["exit"] and run["exit"][-1] != 0:
            failed.append(f"{job.name}: the last run exited {run['exit'][-1]}, not 0")
        by_status: dict[str, int] = {}
        for t in found:
            by_status[t.status] = by_status.get(t.status, 0) + 1
        soak.figures.setdefault("jobs", {})[job.name] = {
            "episodes": len(run["keys"]),
            "results": len(finals),
            "tries": len(found),
            "tries_by_status": by_status,
        }
    blamed = [t for t in all_tries if t.status in AGENT_BLAMED]
    for t in blamed:
        failed.append(
            f"{Path(t.job).name} {t.folder.name} of {t.key}: {t.status} ({t.reason[:120]}) — an agent's "
            "status where the oracle's replay cannot fail: a fault was blamed on the agent"
        )
    failed += check_faults(soak, all_tries)
    failed += check_mlflow(soak)
    failed += check_leftovers(soak)
    failed += check_memory(soak)
    return failed


def _at(t: Try, when: float) -> bool:
    return t.start <= when <= t.end + 0.5


def check_faults(soak: Soak, all_tries: list[Try]) -> list[str]:
    failed = []
    for fault in soak.faults:
        kind = fault["kind"]
        if "error" in fault:
            failed.append(f"{kind}: not injected: {fault['error']}")
            continue
        if kind in ("app_kill", "x_kill", "container_kill"):
            hit = [t for t in all_tries if t.job == fault["job"] and t.key == fault["episode"] and _at(t, fault["at"])]
            if not hit:
                failed.append(f"{kind}: no try of {fault['episode']} ran at the fault")
                continue
            t = hit[0]
            fault["status"] = t.status
            if t.status != "infra_error":
                failed.append(f"{kind} hit {t.key} ({t.folder.name}), which ended {t.status}, not infra_error: {t.reason[:160]}")
            if kind == "app_kill" and "app_exit" not in t.events:
                failed.append(f"app_kill hit {t.key} ({t.folder.name}): no app_exit event in its trace")
        elif kind in ("provider_outage", "disk_full", "tracking_down"):
            during = [t for t in all_tries if t.start <= fault["to"] and t.end >= fault["from"]]
            fault["tries_during"] = {s: sum(t.status == s for t in during) for s in {t.status for t in during}}
            if kind == "tracking_down":
                if any(t.status != "success" for t in during):
                    failed.append(f"tracking_down: episodes during the outage did not succeed: {fault['tries_during']}")
            elif not any(t.status == "infra_error" for t in during):
                failed.append(
                    f"{kind}: no episode during it ended infra_error ({fault['tries_during']}): the fault "
                    "touched nothing, or was not seen"
                )
        elif kind == "sigterm":
            hit = [t for t in all_tries if t.job == fault["job"] and _at(t, fault["at"])]
            fault["tries_at"] = {s: sum(t.status == s for t in hit) for s in {t.status for t in hit}}
            if fault["exit"] != 128 + signal.SIGTERM:
                failed.append(f"sigterm: the run exited {fault['exit']}, not {128 + signal.SIGTERM}")
            if not any(t.status == "interrupted" for t in hit) or any(t.status not in ("interrupted", "success") for t in hit):
                failed.append(f"sigterm: the episodes it stopped ended {fault['tries_at']}, not interrupted")
    served = soak.figures.get("model_answers", {})
    if any(f["kind"] == "provider_outage" for f in soak.faults) and not served.get("outage_500"):
        failed.append("provider_outage: the model never answered 500 during it")
    return failed


def check_mlflow(soak: Soak) -> list[str]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{soak.mlflow_db}")
    experiment = client.get_experiment_by_name(EXPERIMENT)
    if experiment is None:
        return [f"MLflow: no experiment {EXPERIMENT!r} in {soak.mlflow_db}"]
    runs = []
    token = None
    while True:
        page = client.search_runs([experiment.experiment_id], max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            break
    failed = []
    jobs = {r.data.tags.get("mcpworld.job_dir"): r for r in runs if r.data.tags.get("mcpworld.level") == "job"}
    for run in soak.runs:
        job_run = jobs.get(str(Path(run["job"]).absolute()))
        if job_run is None:
            failed.append(f"MLflow: no job run for {run['job']}")
            continue
        episodes = [
            r
            for r in runs
            if r.data.tags.get("mcpworld.level") == "episode" and r.data.tags.get("mlflow.parentRunId") == job_run.info.run_id
        ]
        keys: dict[str, int] = {}
        for r in episodes:
            key = r.data.tags.get("mcpworld.episode_key", "?")
            keys[key] = keys.get(key, 0) + 1
        twice = sorted(k for k, n in keys.items() if n > 1)
        missing = sorted(set(run["keys"]) - set(keys))
        if twice or missing:
            failed.append(
                f"MLflow {Path(run['job']).name}: {len(missing)} episode(s) missing {missing[:5]}, "
                f"{len(twice)} logged more than once {twice[:5]}"
            )
        if job_run.info.status != "FINISHED":
            failed.append(f"MLflow {Path(run['job']).name}: the job run is {job_run.info.status}, not FINISHED")
        soak.figures.setdefault("mlflow", {})[Path(run["job"]).name] = {"episode_runs": len(episodes), "distinct": len(keys)}
    running = [r.info.run_id for r in runs if r.info.status == "RUNNING"]
    if running:
        failed.append(f"MLflow: {len(running)} run(s) still RUNNING")
    return failed


def check_leftovers(soak: Soak) -> list[str]:
    """Nothing of ours is left: processes (ours: marked with a desktop in our work base, or started
    with our work base in their environment), work and temp folders, cgroups, network namespaces,
    mounts, containers and their networks (labelled with our runs' pids), stale X sockets."""
    failed = []
    pids = soak.pids()
    base = str(soak.work_base)
    procs = []
    for proc in psutil.process_iter(["name"]):
        env = _environ(proc)
        if proc.pid in pids or env.get(MARKER, "").startswith(base + "/") or env.get(leftovers.WORK_BASE_VARIABLE) == base:
            procs.append(f"{_name(proc)}[{proc.pid}]")
    if procs:
        failed.append(f"leftover processes: {', '.join(procs[:10])}")
    for folder in (soak.work_base, soak.tmp):
        left = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        if left:
            failed.append(f"leftover files in {folder}: {', '.join(left[:10])}")
    for shm in leftovers.work_bases():
        for workroot in shm.glob(leftovers.PREFIX + "*"):
            if _owner_pid_file(workroot) in pids:
                failed.append(f"leftover work folder {workroot}")
    parent = cgroup.parent_dir()
    groups = [
        g.name
        for g in (parent.iterdir() if parent and parent.is_dir() else [])
        if g.is_dir() and _leading_pid(g.name, ".") in pids
    ]
    if groups:
        failed.append(f"leftover cgroups: {', '.join(groups[:10])}")
    spaces = [
        p.name
        for p in (NETNS_DIR.glob("mcpworld-*") if NETNS_DIR.is_dir() else [])
        if _leading_pid(p.name.removeprefix("mcpworld-"), "-") in pids
    ]
    if spaces:
        failed.append(f"leftover network namespaces: {', '.join(spaces)}")
    mounts = [
        line.split()[1]
        for line in Path("/proc/mounts").read_text().splitlines()
        if line.split()[1].startswith(base) or any(f"/mcpworld-{pid}-" in line.split()[1] for pid in pids)
    ]
    if mounts:
        failed.append(f"leftover mounts: {', '.join(mounts[:10])}")
    failed += _docker_leftovers(pids)
    failed += _x_leftovers(soak)
    return failed


def _owner_pid_file(workroot: Path) -> int | None:
    try:
        return int(json.loads((workroot / leftovers.OWNER_FILE).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _leading_pid(name: str, sep: str) -> int | None:
    try:
        return int(name.split(sep, 1)[0])
    except ValueError:
        return None


def _docker_leftovers(pids: set[int]) -> list[str]:
    from mcpworld.env.docker import image as docker_image

    client, _ = docker_image.answering()
    if client is None:
        return []
    label = "mcpworld.owner"
    containers = [
        c.name for c in client.containers.list(all=True, filters={"label": label}) if _owner_pid(c.labels.get(label, "")) in pids
    ]
    networks = [
        n.name
        for n in client.networks.list(filters={"label": label})
        if _owner_pid((n.attrs.get("Labels") or {}).get(label, "")) in pids
    ]
    failed = []
    if containers:
        failed.append(f"leftover containers: {', '.join(containers)}")
    if networks:
        failed.append(f"leftover docker networks: {', '.join(networks)}")
    return failed


def _x_leftovers(soak: Soak) -> list[str]:
    """An X socket or lock of a display our desktops used, with no live X server behind it."""
    numbers = set()
    for run in soak.runs:
        for desktop in (Path(run["job"]) / "episodes").rglob("desktop.json"):
            with contextlib.suppress(OSError, ValueError):
                numbers.add(int(str(json.loads(desktop.read_text()).get("display", "")).lstrip(":")))
    # another run's X server may hold the number by now (then it answers, or its socket is newer than our runs)
    ended = soak.figures.get("ended_at") or max(
        (p.stat().st_mtime for p in soak.folder.glob("harness*.log")), default=time.time()
    )
    stale = []
    for n in sorted(numbers):
        lock, sock = Path(f"/tmp/.X{n}-lock"), Path(f"/tmp/.X11-unix/X{n}")
        try:
            holder = int(lock.read_text().strip())
        except (OSError, ValueError):
            holder = None
        if lock.exists() and (holder is None or not psutil.pid_exists(holder)):
            stale.append(str(lock))
        if sock.exists() and _older(sock, ended) and _silent(sock):
            stale.append(str(sock))
    return [f"stale X server files of our desktops: {', '.join(stale[:10])}"] if stale else []


def _older(path: Path, than: float) -> bool:
    try:
        return path.stat().st_mtime <= than
    except OSError:
        return False


def _silent(path: Path) -> bool:
    """Nothing listens on the socket, now nor 2 s later (an X server that is starting answers by then)."""
    if socket_answers(path):
        return False
    time.sleep(2)
    return not socket_answers(path)


def check_memory(soak: Soak) -> list[str]:
    """Each run process's RSS over the last 10 episodes it ran vs. over its episodes 20 to 30 (medians of
    the per-second samples: one sample swings ±10 % with the desktops' threads and the allocator)."""
    failed = []
    memory = soak.figures["memory"] = []
    for process in soak.figures.get("rss", []):
        samples = [
            (t, done, rss) for t, done, rss in process["samples"] if process["stopped_at"] is None or t < process["stopped_at"]
        ]
        last = max((done for _, done, _ in samples), default=0)
        if last < RSS_BASELINE_AFTER + 20:
            continue  # too short to say
        base = statistics.median(rss for _, done, rss in samples if RSS_BASELINE_AFTER <= done < RSS_BASELINE_AFTER + 10)
        end = statistics.median(rss for _, done, rss in samples if done >= last - 10)
        growth = end / base - 1
        memory.append(
            {
                "pid": process["pid"],
                "episodes": last,
                "after_20_mib": round(base / 2**20, 1),
                "end_mib": round(end / 2**20, 1),
                "growth": round(growth, 4),
                "max_mib": round(max(rss for _, _, rss in samples) / 2**20, 1),
            }
        )
        if growth > MEMORY_TOLERANCE:
            failed.append(
                f"memory: run process {process['pid']} grew {growth:+.1%}, from {base / 2**20:.0f} MiB "
                f"after {RSS_BASELINE_AFTER} episodes to {end / 2**20:.0f} MiB after {last} "
                f"(limit {MEMORY_TOLERANCE:.0%})"
            )
    return failed


def report(soak: Soak, failed: list[str]) -> None:
    print("\n== soak figures ==")
    print(json.dumps({k: v for k, v in soak.figures.items() if k != "rss"}, indent=2))
    print("== faults ==")
    for fault in soak.faults:
        print(json.dumps(fault))
    print("== checks ==")
    for line in failed:
        print(f"FAIL {line}")
    if not failed:
        print(
            "PASS every episode once in the results and in MLflow; every fault's episode infra_error or "
            "interrupted, none blamed on the agent; nothing of ours left; memory flat"
        )


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="mousepad/*,xterm/*,pcmanfm/*")
    parser.add_argument("--attempts", type=int, default=34)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--faults", default="all", help=f"comma-separated, of: {', '.join(ALL_FAULTS)}")
    parser.add_argument(
        "--docker", choices=("auto", "off"), default="auto", help="the container_kill segment (env=docker) when an engine answers"
    )
    parser.add_argument("--docker-tasks", default="mousepad/*")
    parser.add_argument("--docker-attempts", type=int, default=2)
    parser.add_argument("--work-mb", type=int, default=256, help="size of the tmpfs the desktops' work folders go on")
    parser.add_argument("--wait-s", type=float, default=2.0, help="the replayed wait for the app's state")
    parser.add_argument("--outage-s", type=float, default=8.0)
    parser.add_argument("--tracking-down-s", type=float, default=30.0)
    parser.add_argument("--disk-full-s", type=float, default=60.0)
    parser.add_argument("--out", help="the soak's folder (default: a new one under outputs/)")
    parser.add_argument("--check", metavar="DIR", help="only run the checks again on a finished soak's folder")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _stop)  # the harness runs are stopped and the tmpfs unmounted on the way out
    soak = Soak.load(Path(args.check)) if args.check else run_soak(args)
    failed = check(soak)
    soak.save()
    report(soak, failed)
    if not args.check:
        for folder in (soak.work_base, soak.tmp, soak.work_base.parent):
            with contextlib.suppress(OSError):
                folder.rmdir()  # (only when empty: what was left stays to be looked at)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
