"""One Hydra job: choose tasks, run their episodes (bounded concurrency), track, summarise."""

from __future__ import annotations

import asyncio
import json
import queue
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mcpworld.agent.providers import make_provider
from mcpworld.agent.providers.base import ModelInfo
from mcpworld.env import make_environment
from mcpworld.episode import run_episode
from mcpworld.errors import EndpointUnreachable, InfraError, UserError
from mcpworld.evaluation.keysteps import validate_key_steps
from mcpworld.evaluation.spec import validate_spec
from mcpworld.evaluation.templates import expand_task
from mcpworld.result import EpisodeResult
from mcpworld.servers import unavailable
from mcpworld.tasks.model import Task
from mcpworld.tasks.select import BUILTIN_ROOT, as_patterns, discover, select
from mcpworld.progress import SweepProgress
from mcpworld.telemetry.gpu import make_gpu_monitor
from mcpworld.telemetry.provenance import run_tags
from mcpworld.telemetry.tracking import flatten, make_tracker, mask_secrets, strip_secrets, sweep_parent


def job_dir() -> Path:
    from hydra.core.hydra_config import HydraConfig

    try:
        return Path(HydraConfig.get().runtime.output_dir)
    except ValueError:  # called outside Hydra (tests)
        return Path("outputs/adhoc")


def job_name() -> str:
    from hydra.core.hydra_config import HydraConfig

    try:
        hc = HydraConfig.get()
    except ValueError:
        return "adhoc"
    overrides = [o for o in hc.overrides.task]
    return mask_secrets(",".join(overrides)) or "default"  # names runs: an override may hold a key


def choose_tasks(cfg: Any) -> list[Task]:
    root = Path(cfg.tasks.root) if cfg.tasks.root else BUILTIN_ROOT
    tasks = select(discover(root), list(cfg.app.apps), as_patterns(cfg.task), list(cfg.tasks.exclude_tags))
    templates = OmegaConf.to_container(cfg.evaluator.templates, resolve=True)
    for task in tasks:
        try:
            expand_task(task, templates)
            if task.evaluator:
                validate_spec(task.evaluator, str(task.source))
            validate_key_steps(task.key_steps, str(task.source))
            missing_server = unavailable(cfg, task)  # a server this machine lacks: skip, don't fail
            if missing_server:
                task.skip_reason = task.skip_reason or missing_server
        except UserError as exc:
            if task.format == "native":
                raise  # our own format: the author can fix it
            task.skip_reason = task.skip_reason or str(exc)  # an imported suite: run what we can
    skipped = [t for t in tasks if t.skip_reason]
    for task in skipped:
        print(f"mcpworld: skipping {task.id}: {task.skip_reason}", file=sys.stderr)
    tasks = [t for t in tasks if not t.skip_reason]
    if not tasks:
        raise UserError(f"every selected task was skipped ({len(skipped)}); see the reasons above")
    if cfg.provider.kind == "oracle":
        missing = [t.id for t in tasks if cfg.modality.name not in t.solution]
        if missing:
            print(f"mcpworld: the oracle has no {cfg.modality.name} solution for {len(missing)} task(s), "
                  f"skipped: {', '.join(missing)}", file=sys.stderr)
        tasks = [t for t in tasks if cfg.modality.name in t.solution]
        if not tasks:
            raise UserError(f"no selected task has an oracle solution for modality={cfg.modality.name}")
    return tasks


def check_config(cfg: Any) -> None:
    """Value checks the schema's types cannot express."""
    from mcpworld.env.screen import FORMATS

    if cfg.agent.image_format not in FORMATS:
        raise UserError(f"agent.image_format={cfg.agent.image_format!r} is unknown; use one of {', '.join(FORMATS)}")
    if cfg.model.coordinates not in ("pixels", "normalized_1000"):
        raise UserError(f"model.coordinates={cfg.model.coordinates!r} is unknown; use pixels or normalized_1000")
    if cfg.attempts < 1 or cfg.concurrency < 1:
        raise UserError("attempts and concurrency must be at least 1")


def preflight(cfg: Any) -> ModelInfo:
    """Check the endpoint and the model once, before any episode (an Ollama model is pulled and
    loaded here); an endpoint that is down stops the job with one line instead of N failed episodes."""
    provider = make_provider(cfg, [])

    async def check() -> ModelInfo:
        try:
            return await provider.preflight()
        finally:
            await provider.aclose()

    try:
        return asyncio.run(check())
    except InfraError as exc:
        raise UserError(str(exc)) from exc


def run_job(cfg: DictConfig) -> float:
    check_config(cfg)
    tasks = choose_tasks(cfg)
    model = preflight(cfg)
    out = job_dir()
    runs = [(t, a) for t in tasks for a in range(cfg.attempts)]
    tracker = make_tracker(cfg)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "resolved_config.yaml").write_text(mask_secrets(OmegaConf.to_yaml(strip_secrets(resolved))))
    tracker.start_job(job_name(), {**flatten(resolved), **model.params},
                      {"mcpworld.job_dir": str(out), **run_tags(resolved, job_name())},
                      parent_run_id=sweep_parent(out))
    gpu = make_gpu_monitor(cfg.telemetry.gpu.source, cfg.telemetry.gpu.rate_hz)
    print(f"mcpworld: {len(runs)} episode(s) of {len(tasks)} task(s) → {out}")

    slots: queue.Queue = queue.Queue()
    envs = [make_environment(cfg) for _ in range(max(1, cfg.concurrency))]
    for env in envs:
        slots.put(env)
    results: list[EpisodeResult] = []
    fatal: Exception | None = None

    def one(task: Task, attempt: int) -> EpisodeResult | None:
        nonlocal fatal
        if fatal is not None:  # the endpoint is down or an app is missing: don't repeat the failure
            return None
        env = slots.get()
        episode_dir = out / "episodes" / task.id / str(attempt)
        try:
            for retry in range(cfg.infra_retries + 1):
                if retry:  # keep the failed try for inspection, run the episode again
                    episode_dir.rename(episode_dir.with_name(f"{attempt}.infra_error{retry}"))
                try:
                    result = run_episode(cfg, task, attempt, episode_dir, env, gpu)
                except (UserError, EndpointUnreachable) as exc:
                    fatal = fatal or exc
                    result = EpisodeResult.read(episode_dir / "result.json")
                    break
                if result.status != "infra_error":
                    break
        finally:
            slots.put(env)
        tracker.log_episode(result, episode_dir)
        return result

    try:
        with ThreadPoolExecutor(max_workers=len(envs)) as pool, SweepProgress(len(runs)) as progress:
            for future in [pool.submit(one, t, a) for t, a in runs]:
                result = future.result()
                if result is not None:
                    results.append(result)
                    progress.done(result)
    finally:
        for env in envs:
            env.close()
        if gpu is not None:
            gpu.close()
        summary = {**summarize(results, len(runs)), **model.metrics}
        (out / "summary.json").write_text(json.dumps({"job": job_name(), **summary}, indent=2))
        artifacts = [p for p in (out / ".hydra", out / "summary.json", out / "resolved_config.yaml") if p.exists()]
        waited = time.perf_counter()
        tracker.finish_job(summary, artifacts, failed=fatal is not None, job_dir=out)
        tracking = {"tracking_busy_s": round(tracker.busy_s, 4), "tracking_wait_s": round(time.perf_counter() - waited, 4)}
        (out / "summary.json").write_text(json.dumps({"job": job_name(), **summary, **tracking}, indent=2))
    from mcpworld.summary import print_job_table

    print_job_table(job_name(), results)
    if fatal is not None:
        raise UserError(str(fatal))
    return summary["success_rate"]


def summarize(results: list[EpisodeResult], planned: int) -> dict[str, float]:
    """Job-level numbers. Infra errors are not agent failures: the rate is over the rest."""
    judged = [r for r in results if r.status != "infra_error"]
    ttfts = [t for r in results for t in r.ttft_s]
    out = {
        "episodes": float(len(results)),
        "episodes_planned": float(planned),
        "infra_errors": float(len(results) - len(judged)),
        "success_rate": (sum(r.status == "success" for r in judged) / len(judged)) if judged else 0.0,
        "mean_score": statistics.fmean(r.score for r in judged) if judged else 0.0,
        "mean_steps": statistics.fmean(r.steps for r in judged) if judged else 0.0,
        "mean_duration_s": statistics.fmean(r.duration_s for r in results) if results else 0.0,
        "tokens_in": float(sum(r.tokens_in for r in results)),
        "tokens_out": float(sum(r.tokens_out for r in results)),
        "llm_calls": float(sum(r.llm_calls for r in results)),
    }
    if ttfts:
        out["ttft_p50_s"] = statistics.median(ttfts)
        out["ttft_p90_s"] = statistics.quantiles(ttfts, n=10, method="inclusive")[-1] if len(ttfts) > 1 else ttfts[0]
    ratios = [r.key_steps["ratio"] for r in judged if r.key_steps.get("total")]
    if ratios:
        out["keystep_ratio"] = statistics.fmean(ratios)
    energies = [r.gpu["gpu.energy_j"] for r in results if "gpu.energy_j" in r.gpu]
    if energies:
        out["gpu.energy_j"] = sum(energies)
        successes = sum(r.status == "success" for r in results if "gpu.energy_j" in r.gpu)
        if successes:
            out["gpu.energy_per_success_j"] = sum(energies) / successes
    return out
