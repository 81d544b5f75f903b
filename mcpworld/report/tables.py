"""``python -m mcpworld.report``: MLflow episode runs → paper tables (CSV, Markdown) and plots.

Only episode runs (tag ``mcpworld.level=episode``) are data; job and sweep runs are summaries of them
and would count twice. Episodes with status ``infra_error``, ``eval_error`` (the task's grader gave
no verdict) or ``interrupted`` (``core.result.NOT_JUDGED``) say nothing about the agent: they are left
out of every rate and statistic and only counted, each in its own column (``infra_errors``,
``eval_errors``, and ``interrupted`` where there are any).

    python -m mcpworld.report experiment=NAME [--group-by model,resolution,modality,app]
        [--tracking-uri sqlite:///outputs/mlflow.db] [--out DIR] [--runs FILTER] [--seed 0] [--resamples 2000]
        [--osworld] [--osworld-tasks OSWorld/evaluation_examples]
    python -m mcpworld.report --runs "params.model = 'qwen3vl_8b'"   # across experiments

``--osworld`` (on by itself for ``experiment=osworld_verified``) adds OSWorld's own figure, computed as
its ``show_result.py`` computes it, per domain, beside ours: report/osworld.py.
"""

from __future__ import annotations

import argparse
import csv
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mcpworld.core.errors import UserError
from mcpworld.core.result import NOT_JUDGED, tool_family
from mcpworld.telemetry.tracking.store import absolute_sqlite_uri

DEFAULT_URI = "sqlite:///outputs/mlflow.db"
DEFAULT_GROUP_BY = "model,resolution,modality,app"
OSWORLD_GROUP_BY = "model,max_steps"  # with OSWorld's table: a leaderboard row is a model at a step budget
LEVEL_FILTER = "tags.`mcpworld.level` = 'episode'"
MISSING = "(none)"  # group value of a run that lacks the param (e.g. ``seed`` in older runs)
MAX_K = 5
PAGE = 10_000

BASE_COLUMNS = (
    "episodes",
    "successes",
    "tasks",
    "success_rate",
    "success_ci_low",
    "success_ci_high",
    "keystep_ratio",
    "tokens_mean",
    "ttft_p50_s",
    "ttft_p90_s",
    "steps_mean",
    "energy_j_mean",
    "energy_per_success_j",
    "infra_errors",
    "eval_errors",
)
RATE_COLUMNS = {
    "success_rate",
    "success_ci_low",
    "success_ci_high",
    "keystep_ratio",
    "hallucination_rate",
    "loop_rate",
    "truncation_rate",
}
# shown only when some group has them (an older store, an unpriced model: no empty columns)
OPTIONAL_COLUMNS = (
    "interrupted",
    "actions_mean",
    "hallucination_rate",
    "loop_rate",
    "truncation_rate",
    "cost_usd_mean",
    "cost_per_success_usd",
    "energy_cost_usd_mean",
)
# GPU energy per episode: its 95 % bootstrap CI, net of the idle baseline (with CI), per output token; CPU (RAPL)
ENERGY_COLUMNS = (
    "energy_ci_low",
    "energy_ci_high",
    "energy_net_j_mean",
    "energy_net_ci_low",
    "energy_net_ci_high",
    "j_per_1k_tokens_out",
    "tokens_out_per_j",
    "cpu_energy_j_mean",
)


@dataclass
class Episode:
    """What the report needs of one episode run."""

    params: dict[str, str]
    task_id: str
    infra_error: bool
    success: float
    metrics: dict[str, float]
    eval_error: bool = False
    status: str = ""  # the episode's status (success, failure, …, interrupted); "" when the run has no status

    @property
    def judged(self) -> bool:
        """A verdict on the agent: not an infra error, an eval error or an interrupted episode (NOT_JUDGED)."""
        return not (self.infra_error or self.eval_error or self.status in NOT_JUDGED)

    @property
    def score(self) -> float:
        """The evaluator's score in [0, 1] (partial credit kept); the success itself for runs without one."""
        return float(self.metrics.get("score", self.success))


# ---------------------------------------------------------------- load runs → episodes


def check_store(uri: str) -> str:
    """An absent sqlite file would silently become a new empty store: refuse it instead."""
    prefix = "sqlite:///"
    if uri.startswith(prefix):
        path = Path(uri[len(prefix) :])
        if not path.is_file():
            raise UserError(
                f"no MLflow store at {path.absolute()} (--tracking-uri {uri}); "
                "run an experiment with tracking=mlflow first or pass --tracking-uri"
            )
        return absolute_sqlite_uri(uri)
    return uri


def experiment_ids(client: Any, experiment: str | None, uri: str) -> list[str]:
    """The named experiment, or every active one when only a --runs filter is given."""
    from mlflow.entities import ViewType

    if experiment is None:
        ids, token = [], None
        while True:
            page = client.search_experiments(view_type=ViewType.ACTIVE_ONLY, max_results=1000, page_token=token)
            ids += [e.experiment_id for e in page]
            token = page.token
            if not token:
                return ids
    exp = client.get_experiment_by_name(experiment)
    if exp is None or exp.lifecycle_stage != "active":
        known = sorted(e.name for e in client.search_experiments(view_type=ViewType.ACTIVE_ONLY))
        state = "is deleted" if exp is not None else "does not exist"
        raise UserError(f"experiment {experiment!r} {state} in {uri}; experiments there: {', '.join(known) or '(none)'}")
    return [exp.experiment_id]


def load_episodes(uri: str, experiment: str | None, runs_filter: str | None) -> list[Episode]:
    """Episode runs of the experiment (or all experiments), narrowed by the user's MLflow filter."""
    from mlflow.entities import ViewType
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    ids = experiment_ids(client, experiment, uri)
    where = LEVEL_FILTER + (f" AND {runs_filter}" if runs_filter else "")
    runs, token = [], None
    try:
        while ids:
            page = client.search_runs(
                ids, filter_string=where, run_view_type=ViewType.ACTIVE_ONLY, max_results=PAGE, page_token=token
            )
            runs += list(page)
            token = page.token
            if not token:
                break
    except MlflowException as exc:
        raise UserError(f"--runs {runs_filter!r} is not a valid MLflow filter: {exc.message}") from exc
    if not runs:
        scope = f"experiment {experiment!r}" if experiment else "any experiment"
        narrowed = f" matching --runs {runs_filter!r}" if runs_filter else ""
        raise UserError(f"{scope} has no episode runs{narrowed} in {uri} (episode runs carry tag mcpworld.level=episode)")
    return [to_episode(run) for run in runs]


def to_episode(run: Any) -> Episode:
    params, tags, metrics = dict(run.data.params), dict(run.data.tags), dict(run.data.metrics)
    status = tags.get("status", "")
    success = metrics.get("success", 1.0 if status == "success" else 0.0)
    return Episode(
        params=params,
        task_id=params.get("task_id") or tags.get("task_id", run.info.run_id),
        infra_error=status == "infra_error",
        success=float(success),
        metrics=metrics,
        eval_error=status == "eval_error",
        status=status,
    )


# ---------------------------------------------------------------- group


def check_group_keys(episodes: list[Episode], keys: Sequence[str]) -> None:
    """A key no run has is a typo, not a group of its own: name it and what exists."""
    present = set().union(*(e.params for e in episodes))
    missing = [k for k in keys if k not in present]
    if missing:
        raise UserError(
            f"--group-by {', '.join(missing)}: no episode run has such a param; params there: {', '.join(sorted(present))}"
        )


def group_episodes(episodes: list[Episode], keys: Sequence[str]) -> dict[tuple[str, ...], list[Episode]]:
    groups: dict[tuple[str, ...], list[Episode]] = {}
    for ep in episodes:
        groups.setdefault(tuple(ep.params.get(k, MISSING) for k in keys), []).append(ep)
    return dict(sorted(groups.items()))


# ---------------------------------------------------------------- statistics


def bootstrap_ci(values: Sequence[float], seed: int, resamples: int) -> tuple[float, float]:
    """Percentile bootstrap 95 % CI of the mean, resampling episodes; seeded per group so a
    group's interval does not change when other groups are added or filtered out."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    chunk = max(1, 2_000_000 // len(x))  # bound memory: resamples × n indices at most 2 M at once
    means = np.concatenate(
        [x[rng.integers(0, len(x), size=(min(chunk, resamples - i), len(x)))].mean(axis=1) for i in range(0, resamples, chunk)]
    )
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that at least one of k attempts (drawn from n with c successes) succeeds."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased chance that all k attempts succeed (pass^k: consistency, not luck)."""
    return math.comb(c, k) / math.comb(n, k)


def repeat_stats(judged: list[Episode]) -> dict[str, float]:
    """pass@k / pass^k for k = 1..min attempts per task (≤ 5), averaged over tasks; {} without repeats."""
    per_task: dict[str, list[float]] = {}
    for ep in judged:
        per_task.setdefault(ep.task_id, []).append(ep.success)
    counts = [(len(v), round(sum(v))) for v in per_task.values()]
    if not counts or max(n for n, _ in counts) < 2:
        return {}
    top = min(min(n for n, _ in counts), MAX_K)
    out = {f"pass@{k}": float(np.mean([pass_at_k(n, c, k) for n, c in counts])) for k in range(1, top + 1)}
    out.update({f"pass^{k}": float(np.mean([pass_hat_k(n, c, k) for n, c in counts])) for k in range(2, top + 1)})
    return out


def metric_values(episodes: list[Episode], name: str) -> list[float]:
    return [e.metrics[name] for e in episodes if name in e.metrics]


def mean_or_none(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def summarize(episodes: list[Episode], seed: int, resamples: int) -> dict[str, Any]:
    """One table row: rates and costs over judged episodes (infra errors, eval errors and interrupted
    episodes only counted)."""
    judged = [e for e in episodes if e.judged]
    row: dict[str, Any] = {c: None for c in BASE_COLUMNS}
    row.update(
        episodes=len(judged),
        infra_errors=sum(e.infra_error for e in episodes),
        eval_errors=sum(e.eval_error and not e.infra_error for e in episodes),
        tasks=len({e.task_id for e in judged}),
    )
    interrupted = sum(e.status == "interrupted" and not e.infra_error and not e.eval_error for e in episodes)
    if interrupted:
        row["interrupted"] = interrupted
    if not judged:
        return row
    wins = [e.success for e in judged]
    row["successes"] = round(sum(wins))
    row["success_rate"] = float(np.mean(wins))
    row["success_ci_low"], row["success_ci_high"] = bootstrap_ci(wins, seed, resamples)
    row["keystep_ratio"] = mean_or_none(metric_values(judged, "keysteps.ratio"))
    tokens = [
        e.metrics.get("tokens_in", 0.0) + e.metrics.get("tokens_out", 0.0)
        for e in judged
        if "tokens_in" in e.metrics or "tokens_out" in e.metrics
    ]
    row["tokens_mean"] = mean_or_none(tokens)
    ttft = metric_values(judged, "ttft_s_mean")
    if ttft:
        row["ttft_p50_s"], row["ttft_p90_s"] = (float(v) for v in np.percentile(ttft, [50, 90]))
    row["steps_mean"] = mean_or_none(metric_values(judged, "steps"))
    row["actions_mean"] = mean_or_none(metric_values(judged, "actions"))
    metered = [e for e in judged if "gpu.energy_j" in e.metrics]  # cost per success among measured episodes
    row["energy_j_mean"] = mean_or_none(metric_values(metered, "gpu.energy_j"))
    metered_wins = sum(e.success for e in metered)
    if metered and metered_wins > 0:
        row["energy_per_success_j"] = sum(metric_values(metered, "gpu.energy_j")) / metered_wins
    row.update(energy_stats(judged, seed, resamples))
    row.update(behaviour(judged))
    row.update(costs(judged))
    row.update(repeat_stats(judged))
    return row


def tool_counts(metrics: dict[str, float]) -> dict[str, tuple[float, float]]:
    """An episode run's (ok calls, calls) per tool family: from ``tool_calls.<family>`` and
    ``tool_success.<family>``, or, in runs written before that vocabulary, summed from each tool's
    ``tool.<name>.ok`` / ``tool.<name>.error``."""
    out: dict[str, tuple[float, float]] = {}
    for key, value in metrics.items():
        if key.startswith("tool_calls."):
            family = key.removeprefix("tool_calls.")
            out[family] = (round(metrics.get(f"tool_success.{family}", 0.0) * value), value)
    if out:
        return out
    for key, value in metrics.items():
        if key.startswith("tool.") and key.endswith((".ok", ".error")):
            name, outcome = key[5:].rsplit(".", 1)
            ok, calls = out.get(tool_family(name), (0.0, 0.0))
            out[tool_family(name)] = (ok + (value if outcome == "ok" else 0.0), calls + value)
    return out


def tool_success(judged: list[Episode]) -> dict[str, float]:
    """``tool_success.<family>``: ok calls / calls per tool family (computer, bash, mcp, done, wait_for,
    unknown) over the group's judged episodes, as the job run's is."""
    ok: dict[str, float] = {}
    calls: dict[str, float] = {}
    for ep in judged:
        for family, (good, n) in tool_counts(ep.metrics).items():
            calls[family] = calls.get(family, 0.0) + n
            ok[family] = ok.get(family, 0.0) + good
    return {f"tool_success.{f}": ok[f] / calls[f] for f in sorted(calls) if calls[f]}


def behaviour(judged: list[Episode]) -> dict[str, float]:
    """Tool success by family; hallucinations per tool call; the fractions of episodes that looped or
    had a reply truncated (where the runs recorded them)."""
    out: dict[str, float] = tool_success(judged)
    calls = sum(n for e in judged for _, n in tool_counts(e.metrics).values())
    if calls:
        out["hallucination_rate"] = sum(metric_values(judged, "hallucinations")) / calls
    for metric, column in (("loops", "loop_rate"), ("truncations", "truncation_rate")):
        values = metric_values(judged, metric)
        if values:
            out[column] = float(np.mean([v > 0 for v in values]))
    return out


def costs(judged: list[Episode]) -> dict[str, float]:
    """USD per episode and per success among the priced episodes (model.price); none when unpriced."""
    out: dict[str, float] = {}
    priced = [e for e in judged if "cost_usd" in e.metrics]
    if priced:
        out["cost_usd_mean"] = float(np.mean(metric_values(priced, "cost_usd")))
        wins = sum(e.success for e in priced)
        if wins > 0:
            out["cost_per_success_usd"] = sum(metric_values(priced, "cost_usd")) / wins
    energy = metric_values(judged, "energy_cost_usd")
    if energy:
        out["energy_cost_usd_mean"] = float(np.mean(energy))
    return out


def energy_stats(judged: list[Episode], seed: int, resamples: int) -> dict[str, float]:
    """The CIs of gross and net GPU energy per episode; J per 1k output tokens and output tokens per J as
    ratios of the group's sums; CPU energy per episode. Episodes' shares never double-count (telemetry/energy)."""
    out: dict[str, float] = {}
    metered = [e for e in judged if "gpu.energy_j" in e.metrics]
    gross = metric_values(metered, "gpu.energy_j")
    if gross:
        out["energy_ci_low"], out["energy_ci_high"] = bootstrap_ci(gross, seed, resamples)
    net = metric_values(metered, "gpu.energy_net_j")
    if net:
        out["energy_net_j_mean"] = float(np.mean(net))
        out["energy_net_ci_low"], out["energy_net_ci_high"] = bootstrap_ci(net, seed, resamples)
    tokens = sum(e.metrics.get("tokens_out", 0.0) for e in metered)
    if tokens and sum(gross) > 0:
        out["j_per_1k_tokens_out"] = sum(gross) / tokens * 1000
        out["tokens_out_per_j"] = tokens / sum(gross)
    cpu = metric_values(judged, "cpu.energy_j")
    if cpu:
        out["cpu_energy_j_mean"] = float(np.mean(cpu))
    return out


def build_rows(episodes: list[Episode], keys: Sequence[str], seed: int, resamples: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows (group values + statistics) and the column order; pass columns only when repeats exist."""
    rows = [
        {**dict(zip(keys, values, strict=True)), **summarize(eps, seed, resamples)}
        for values, eps in group_episodes(episodes, keys).items()
    ]
    ks = sorted({int(c[5:]) for r in rows for c in r if c.startswith(("pass@", "pass^"))})
    pass_cols = [f"pass@{k}" for k in ks] + [f"pass^{k}" for k in ks if k >= 2]
    tools = sorted({c for r in rows for c in r if c.startswith("tool_success.")})
    optional = [c for c in (*OPTIONAL_COLUMNS, *ENERGY_COLUMNS) if any(r.get(c) is not None for r in rows)]
    return rows, [*keys, *BASE_COLUMNS, *tools, *optional, *pass_cols]


# ---------------------------------------------------------------- tables


def write_csv(rows: list[dict[str, Any]], columns: list[str], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([cell(row.get(c)) for c in columns])


def cell(value: Any) -> Any:
    """Empty for "not measured"; floats rounded to 10 places so 0.37 is not 0.37000000000000005."""
    return "" if value is None else round(value, 10) if isinstance(value, float) else value


def fmt_pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def fmt_number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    if isinstance(value, int) or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}" if abs(value) >= 1 else f"{value:.3f}"


def fmt_usd(value: float | None) -> str:
    """Dollars: cents above a dollar, four decimals below (an episode of a small model costs fractions of a cent)."""
    return "—" if value is None else f"${value:,.2f}" if abs(value) >= 1 else f"${value:.4f}"


def to_markdown(rows: list[dict[str, Any]], columns: list[str], keys: Sequence[str]) -> str:
    """A paper-ready table: success as "63.0 % [41.2, 82.1]", rates in percent, one line per group."""
    shown = [c for c in columns if c not in ("success_ci_low", "success_ci_high", "successes")]
    header = ["success_rate [95 % CI]" if c == "success_rate" else c for c in shown]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(":---" if c in keys else "---:" for c in shown) + "|"]
    for row in rows:
        cells = []
        for c in shown:
            value = row.get(c)
            if c == "success_rate" and value is not None:
                cells.append(f"{100 * value:.1f} % [{100 * row['success_ci_low']:.1f}, {100 * row['success_ci_high']:.1f}]")
            elif "usd" in c:
                cells.append(fmt_usd(value))
            elif c in RATE_COLUMNS or c.startswith(("pass@", "pass^", "tool_success.")):
                cells.append(fmt_pct(value))
            else:
                cells.append(fmt_number(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- plots


def labels_and_title(rows: list[dict[str, Any]], keys: Sequence[str]) -> tuple[list[str], str]:
    """Keys that vary label the groups; keys shared by all groups go in the title (shorter labels)."""
    varying = [k for k in keys if len({r[k] for r in rows}) > 1] or list(keys)
    fixed = [k for k in keys if k not in varying]
    labels = [" / ".join(str(r[k]) for k in varying) for r in rows]
    title = ", ".join(f"{k}={rows[0][k]}" for k in fixed)
    return labels, (f"{' / '.join(varying)}" + (f"  ({title})" if title else ""))


def plot_success(rows: list[dict[str, Any]], keys: Sequence[str], path: Path) -> None:
    """Horizontal bars (long group labels stay readable) with asymmetric CI error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if r["success_rate"] is not None]
    labels, title = labels_and_title(rows, keys)
    rate = np.array([100 * r["success_rate"] for r in rows])
    err = np.array([[rate[i] - 100 * r["success_ci_low"], 100 * r["success_ci_high"] - rate[i]] for i, r in enumerate(rows)]).T
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.5 * len(rows) + 1.4)))
    y = np.arange(len(rows))[::-1]
    ax.barh(y, rate, xerr=err, capsize=4, color="#4C72B0", ecolor="#333333")
    for yi, r, hi in zip(y, rate, rate + err[1], strict=True):
        ax.text(min(hi + 1.5, 101), yi, f"{r:.1f} %", va="center", fontsize=9)
    ax.set_yticks(y, labels)
    ax.set_xlim(0, 112)
    ax.set_xticks(range(0, 101, 20))
    ax.set_xlabel("success rate (%), 95 % bootstrap CI")
    ax.set_title(f"Success rate by {title}", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def plot_energy(rows: list[dict[str, Any]], keys: Sequence[str], path: Path) -> bool:
    """Energy per episode vs success rate, one point per group; False (nothing written) without energy."""
    rows = [r for r in rows if r["energy_j_mean"] is not None and r["success_rate"] is not None]
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, title = labels_and_title(rows, keys)
    x = [r["energy_j_mean"] for r in rows]
    y = np.array([100 * r["success_rate"] for r in rows])
    err = np.array([[y[i] - 100 * r["success_ci_low"], 100 * r["success_ci_high"] - y[i]] for i, r in enumerate(rows)]).T
    fig, ax = plt.subplots(figsize=(7, 5))
    ax.errorbar(x, y, yerr=err, fmt="o", capsize=4, color="#C44E52", ecolor="#888888")
    for xi, yi, label in zip(x, y, labels, strict=True):
        ax.annotate(label, (xi, yi), textcoords="offset points", xytext=(6, 6), fontsize=9)
    ax.set_xlabel("GPU energy per episode (J)")
    ax.set_ylabel("success rate (%), 95 % bootstrap CI")
    ax.set_ylim(-5, 105)
    ax.margins(x=0.15)  # room for the point labels at both ends
    ax.set_title(f"Energy vs success by {title}", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return True


# ---------------------------------------------------------------- command line


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m mcpworld.report",
        description="MLflow episode runs → summary.csv, summary.md, success.png, energy_vs_success.png",
    )
    parser.add_argument(
        "overrides", nargs="*", metavar="experiment=NAME", help="the MLflow experiment to report (Hydra-style key=value)"
    )
    parser.add_argument("--group-by", help=f"param names (default {DEFAULT_GROUP_BY}; {OSWORLD_GROUP_BY} with OSWorld's table)")
    parser.add_argument("--tracking-uri", default=DEFAULT_URI, help=f"MLflow store (default {DEFAULT_URI})")
    parser.add_argument("--out", type=Path, help="output folder (default outputs/reports/<experiment or runs>/)")
    parser.add_argument("--runs", help="MLflow search filter over episode runs, e.g. \"params.model = 'x'\"")
    parser.add_argument(
        "--dir",
        type=Path,
        action="append",
        default=[],
        help="read episodes from a job or sweep folder (its result.json files) instead of MLflow; repeatable",
    )
    parser.add_argument(
        "--compare",
        metavar="KEY",
        help="paired comparison over the same tasks between KEY's values (e.g. resolution): compare.csv, compare.md, compare.png",
    )
    parser.add_argument(
        "--osworld",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also OSWorld's own figure, as its show_result.py computes it (overall, per domain and "
        "category) beside ours: osworld.csv, osworld.md (default: on for experiment=osworld_verified)",
    )
    parser.add_argument(
        "--osworld-tasks",
        type=Path,
        metavar="PATH",
        help="OSWorld's (or WAA's) evaluation_examples folder or a test_*.json task list: each task's "
        "domain and the whole test set (default: test_all.json by the runs' tasks.root)",
    )
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap draws (default 2000)")
    args = parser.parse_args(argv)
    args.experiment = None
    for item in args.overrides:
        key, sep, value = item.partition("=")
        if not sep or key != "experiment" or not value:
            raise UserError(f"{item!r}: expected experiment=NAME (the only key=value argument)")
        args.experiment = value
    if args.dir and (args.experiment or args.runs):
        raise UserError("--dir reads folders, not MLflow: give either --dir or experiment=NAME / --runs")
    if args.experiment is None and not args.runs and not args.dir:
        raise UserError("say what to report: experiment=NAME and/or --runs FILTER, or --dir FOLDER")
    args.keys = None if args.group_by is None else [k.strip() for k in args.group_by.split(",") if k.strip()]
    if args.keys == []:
        raise UserError("--group-by needs at least one param name, e.g. --group-by model")
    if args.osworld_tasks is not None and args.osworld is None:
        args.osworld = True  # a task list asks for the table
    if args.resamples < 1:
        raise UserError(f"--resamples {args.resamples}: need at least 1")
    if args.out is None:
        named = args.experiment or (args.dir[0].name if args.dir else None)
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", named) if named else "runs"
        args.out = Path("outputs") / "reports" / name
    return args


def report(args: argparse.Namespace) -> list[Path]:
    """Load, group, summarize, write; returns the files written."""
    if args.dir:
        from mcpworld.report.folder import load_folders

        episodes = load_folders(args.dir)
    else:
        episodes = load_episodes(check_store(args.tracking_uri), args.experiment, args.runs)
    if args.osworld is None:
        from mcpworld.report import osworld

        args.osworld = osworld.wanted(args)
    if args.keys is None:
        args.keys = default_keys(episodes, args.osworld)
    check_group_keys(episodes, args.keys + ([args.compare] if args.compare else []))
    rows, columns = build_rows(episodes, args.keys, args.seed, args.resamples)
    args.out.mkdir(parents=True, exist_ok=True)
    written = [args.out / "summary.csv", args.out / "summary.md", args.out / "success.png"]
    write_csv(rows, columns, written[0])
    markdown = to_markdown(rows, columns, args.keys)
    written[1].write_text(markdown, encoding="utf-8")
    print(markdown)
    if any(r["success_rate"] is not None for r in rows):
        plot_success(rows, args.keys, written[2])
    else:
        written.pop()
        print("success.png not written: every episode is an infra or eval error")
    energy = args.out / "energy_vs_success.png"
    if plot_energy(rows, args.keys, energy):
        written.append(energy)
    else:
        energy.unlink(missing_ok=True)  # a stale plot from an earlier report would mislead
        print("energy_vs_success.png not written: no episode reports gpu.energy_j")
    if args.compare:
        from mcpworld.report import paired

        pairs, pair_columns = paired.compare_rows(episodes, [*args.keys, args.compare], args.compare, args.seed, args.resamples)
        written += paired.write(pairs, pair_columns, args.compare, args.out)
    if args.osworld:
        from mcpworld.report import osworld

        written += osworld.report(episodes, args)
    for path in written:
        print(f"wrote {path}")
    return written


def default_keys(episodes: list[Episode], with_osworld: bool) -> list[str]:
    """``--group-by``'s default: model, resolution, modality, app; with OSWorld's table, model and max_steps
    (those the runs have: job folders written before resolved_config.yaml have no max_steps)."""
    if not with_osworld:
        return DEFAULT_GROUP_BY.split(",")
    present = set().union(*(e.params for e in episodes))
    return [k for k in OSWORLD_GROUP_BY.split(",") if k in present] or ["model"]


def main(argv: Sequence[str] | None = None) -> int:
    try:
        report(parse_args(argv))
    except UserError as exc:
        print(f"mcpworld.report: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
