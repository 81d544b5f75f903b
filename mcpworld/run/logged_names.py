"""The names a job logs to MLflow (job and episode params, episode and job metrics), made by the very
builders that log them, so docs/tracking.md's list (between the markers below) cannot drift from what a
run holds. tests/run/test_logged_names.py fails, naming what is missing on either side, when it has:

    python -m mcpworld.run.logged_names                             # the list
    python -m mcpworld.run.logged_names --doc docs/tracking.md      # rewrite the doc's list

Names that repeat per tool family or per energy source are shown once, as a pattern
(``tool_calls.<family>``, ``gpu.*``); the model's own facts (``served.*``, ``ollama.*``) come from
the model server's answers, so only their prefixes are listed.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from mcpworld.config.schema import RootConfig
from mcpworld.core.paths import CONF_DIR, PROJECT
from mcpworld.core.result import TOOL_FAMILIES, EpisodeResult, MetricOutcome, Status, ToolCounts
from mcpworld.core.secrets import strip_secrets
from mcpworld.run.episode import labels
from mcpworld.run.job import job_numbers, preflight
from mcpworld.run.provenance import profile_params
from mcpworld.telemetry.tracking.vocabulary import episode_metrics, episode_params, job_params, step_series

BEGIN = "<!-- logged-names: begin (python -m mcpworld.run.logged_names --doc docs/tracking.md) -->"
END = "<!-- logged-names: end -->"
DOC = PROJECT / "docs" / "tracking.md"
# keys a default run leaves out (null), set here to list the params they give where set
OPTIONAL_OVERRIDES = ["seed=1", "model.thinking_budget=1024"]
MODEL_FACTS = ("served.*", "ollama.*")  # what a model server says of its model (agent/providers/served.py)
# one tool of every family a run can count (core.result.tool_family)
TOOLS = {
    "computer": ToolCounts(2, 1),
    "bash": ToolCounts(1),
    "filesystem-read_file": ToolCounts(1),
    "done": ToolCounts(1),
    "wait_for": ToolCounts(1),
    "unknown": ToolCounts(error=1),
    "a_tool_of_no_family": ToolCounts(1),
}


def compose(overrides: list[str]) -> RootConfig:
    """The config a run of ``python -m mcpworld OVERRIDES`` gets (the schema-checked Hydra tree)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from mcpworld.config.schema import register

    register()
    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return cast(RootConfig, hydra_compose("config", overrides=overrides))


def job_param_names(cfg: RootConfig) -> dict[str, str]:
    """The job run's params as run_job builds them (the oracle's preflight: no model facts)."""
    model = preflight(cfg)
    model.params.update(profile_params(cfg))
    resolved = cast(dict[str, Any], OmegaConf.to_container(cast(DictConfig, cfg), resolve=True))
    return job_params(strip_secrets(resolved), model.params)


def full_episode(cfg: RootConfig) -> tuple[EpisodeResult, list[dict[str, Any]]]:
    """An episode with every number an episode can have (tools of every family, key steps, price,
    energy), and the trace events its per-step curves come from."""
    result = EpisodeResult(
        task_id="mousepad/create_todo",
        app="mousepad",
        status=Status.success,
        score=1.0,
        steps=2,
        actions=8,
        llm_calls=2,
        tokens_in=250,
        tokens_out=22,
        tokens_cached=10,
        ttft_s=[0.1],
        generation_s=[0.2],
        llm_latency_s=[0.3, 0.4],
        duration_s=9.0,
        tool_calls={k: ToolCounts(v.ok, v.error) for k, v in TOOLS.items()},
        metrics=[MetricOutcome("exact_match#0", 1.0)],
        labels=labels(cfg),
        cost_usd=0.01,
        energy_cost_usd=0.001,
        key_steps={
            "total": 2,
            "completed": 1,
            "ratio": 0.5,
            "progress": 0.5,
            "timeline": [{"name": "opened", "index": 0, "t": 1.5}],
        },
        gpu={"gpu.energy_j": 10.0, "cpu.energy_j": 5.0},
        llm_energy_j=[4.0, 6.0],
    )
    events = [
        {"type": "episode_start", "t": 0.0, "ts": 1000.0},
        {"type": "llm_call", "t": 1.0, "ts": 1001.0, "n": 1, "latency_s": 0.3, "tokens_in": 100, "tokens_out": 10},
        {"type": "tool_call", "t": 1.4, "ts": 1001.4, "tool": "computer", "latency_s": 0.2},
        {"type": "llm_call", "t": 2.0, "ts": 1002.0, "n": 2, "latency_s": 0.4, "tokens_in": 150, "tokens_out": 12},
        {"type": "episode_end", "t": 9.0, "ts": 1009.0},
    ]
    return result, events


def pattern(name: str) -> str:
    """A name as the doc lists it: one pattern for a family of names."""
    family = re.fullmatch(r"(tool_calls|tool_success)\.(.+)", name)
    if family and family.group(2) in TOOL_FAMILIES:
        return f"{family.group(1)}.<family>"
    for prefix in ("gpu.", "cpu.", "served.", "ollama."):
        if name.startswith(prefix):
            return prefix + "*"
    return name


def names(values: Iterable[object]) -> list[str]:
    """The name patterns of logged keys (a dict iterates its keys)."""
    return sorted({pattern(str(n)) for n in values})


def logged_names() -> dict[str, list[str]]:
    """Every section of the list: its names, as run_job and the tracker make them."""
    default, every = compose([]), compose(OPTIONAL_OVERRIDES)
    job, job_all = job_param_names(default), job_param_names(every)
    result, events = full_episode(every)
    episode = episode_params(job_all, result)
    series = step_series(result, events)
    failed = EpisodeResult(task_id="mousepad/other", app="mousepad", status=Status.infra_error, labels=labels(every))
    job_metrics = job_numbers(
        [result, failed], planned=3, skipped=1, model_metrics={}, wall_s=1.0, energy={"gpu.job_energy_j": 1.0}
    )
    return {
        "job params": sorted(job),
        "job params where set": sorted(set(job_all) - set(job)),
        "model facts": list(MODEL_FACTS),
        "episode params added": sorted(set(episode) - set(job_all)),
        "episode params dropped": sorted(set(job_all) - set(episode)),
        "episode metrics": names(episode_metrics(result, series)),
        "episode curves": names({key for key, *_ in series}),
        "job metrics": names(job_metrics),
    }


def doc_list(sections: dict[str, list[str]]) -> str:
    """The doc's list, one line per section."""

    def ticked(values: list[str]) -> str:
        return ", ".join(f"`{v}`" for v in values)

    job, where_set = sections["job params"], sections["job params where set"]
    added, dropped = sections["episode params added"], sections["episode params dropped"]
    lines = [
        BEGIN,
        f"- **Job params** ({len(job)} in a default job): {ticked(job)}; where set, also {ticked(where_set)}; "
        f"and the served model's own facts, {ticked(sections['model facts'])} (none for the oracle).",
        f"- **Episode params**: the job's, without {ticked(dropped)}, with {ticked(added)} "
        f"({len(job) + len(added) - len(dropped)} in a default job's episode).",
        f"- **Episode metrics**: {ticked(sections['episode metrics'])}; per step (curves whose last point is the "
        f"episode's value): {ticked(sections['episode curves'])}.",
        f"- **Job metrics**: {ticked(sections['job metrics'])}; an Ollama model's sizes, `ollama.*`.",
        f"- `<family>`: {ticked(list(TOOL_FAMILIES))}; `gpu.*` and `cpu.*`: see Energy.",
        END,
    ]
    return "\n".join(lines)


def listed_names(block: str) -> set[str]:
    """The names a list between the markers holds (every backticked word)."""
    return set(re.findall(r"`([^`]+)`", block))


def doc_block(doc: str) -> str:
    if BEGIN not in doc or END not in doc:
        raise ValueError(f"the doc has no logged-names markers ({BEGIN} … {END})")
    return BEGIN + doc.split(BEGIN, 1)[1].split(END, 1)[0] + END


def with_doc_list(doc: str, listed: str) -> str:
    before, rest = doc.split(BEGIN, 1) if BEGIN in doc else (doc, "")
    if END not in rest:
        raise ValueError(f"the doc has no logged-names markers ({BEGIN} … {END})")
    return before + listed + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.run.logged_names", description=__doc__.split("\n")[0])
    parser.add_argument("--doc", type=Path, help="rewrite the list between the logged-names markers of this file")
    args = parser.parse_args(argv)
    listed = doc_list(logged_names())
    if args.doc:
        args.doc.write_text(with_doc_list(args.doc.read_text(encoding="utf-8"), listed), encoding="utf-8")
    else:
        print(listed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
