"""OSWorld's own figure beside ours: the success rate overall, per domain and per category, computed the
way OSWorld computes it, so a run can be laid next to a row of its leaderboard.

OSWorld's rule (xlang-ai/OSWorld after OSWorld-Verified: ``show_result.py``, ``lib_run_single.py``,
``desktop_env.py`` ``evaluate()``; Windows Agent Arena's ``show_result.py`` is the same):

- a task's score is ``evaluate()``'s float, written to its ``result.txt``; partial scores count as fractions;
- an infeasible task scores 1 when the agent's last action is FAIL (a feasible task ending in FAIL scores
  0), and is counted like any other task;
- a domain's rate is the sum of its scores over the number of its ``result.txt`` files ("Runned"); the
  overall rate the same over all of them; Office (calc, impress, writer), Daily (vlc, thunderbird,
  chrome) and Professional (gimp, vs_code) pool their domains, shown only when each of them has results;
- a task that raised before writing ``result.txt`` (its environment or the model's endpoint failed, its
  evaluator raised) or never ran has no result and is in no rate: it leaves the denominator.

Our episodes map onto that. An episode with a verdict (success, failure, timeout, agent_error) is a
``result.txt`` holding its score; one that is not judged (infra_error, eval_error, interrupted:
``core.result.NOT_JUDGED``) has none, like OSWorld's crashed tasks, and is left out of both figures. So
both are over the same episodes: ours counts successes (a score of at least ``evaluator.success_threshold``,
1.0 by default), OSWorld's sums the scores. Since a rate over what ran hides what did not, the table also
counts what both leave out (``not_judged`` episodes; ``not_run``: tasks of the list no episode ran, e.g.
skipped as unavailable here) and gives ``all_tasks_rate``: each task's mean score (0 for a task without a
verdict) over every task of the list, the denominator of a leaderboard row that ran the whole test set.

A task's domain is the folder its file sits in (``examples/<domain>/<id>.json``), as the suite's task list
says (``test_all.json``: ``{domain: [task ids]}``), read from ``--osworld-tasks`` or found by the runs' own
``tasks.root``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from mcpworld.core.errors import UserError
from mcpworld.report.tables import Episode, group_episodes, write_csv

EXPERIMENTS = ("osworld_verified",)  # experiments whose report has this table without asking
LIST_NAME = "test_all.json"  # the whole test set, as OSWorld's and WAA's runners read it (--test_all_meta_path)
# show_result.py's categories, each pooling its domains' results
CATEGORIES = (
    ("Office", ("libreoffice_calc", "libreoffice_impress", "libreoffice_writer")),
    ("Daily", ("vlc", "thunderbird", "chrome")),
    ("Professional", ("gimp", "vs_code")),
)
OVERALL = "overall"
COLUMNS = ("domain", "tasks", "run", "score", "osworld_rate", "successes", "our_rate", "not_judged", "not_run", "all_tasks_rate")
# each episode's own params: the domain takes their place in this table
PER_EPISODE = ("app", "task", "task_id", "attempt", "termination")
MAX_JOB_CONFIGS = 50  # job runs whose config.yaml is read to find the task list (the first that gives one wins)


@dataclass(frozen=True)
class TaskList:
    """A suite's task list: each domain's task ids, in the file's order."""

    path: Path
    domains: dict[str, tuple[str, ...]]
    index: dict[str, str] = field(default_factory=dict)  # task id -> domain

    @property
    def size(self) -> int:
        return sum(len(ids) for ids in self.domains.values())

    def key(self, task_id: str) -> str:
        """The listed id an episode's task stands for: its id, or for an id we qualified because two task
        files shared it (``<domain>/<file name>``, tasks/select.py), the file name."""
        if task_id in self.index or "/" not in task_id:
            return task_id
        stem = task_id.split("/", 1)[1]
        return stem if stem in self.index else task_id

    def domain_of(self, task_id: str) -> str | None:
        domain = self.index.get(self.key(task_id))
        if domain is None and "/" in task_id and task_id.split("/", 1)[0] in self.domains:
            domain = task_id.split("/", 1)[0]
        return domain


def read_task_list(path: Path) -> TaskList:
    """A ``test_*.json`` list (``{domain: [task ids]}``), or the ``test_all.json`` of a folder (OSWorld's
    ``evaluation_examples``; its ``examples`` folder or one domain's, the list one or two levels up)."""
    path = Path(path).expanduser()
    if path.is_dir():
        found = next(
            (folder / LIST_NAME for folder in (path, path.parent, path.parent.parent) if (folder / LIST_NAME).is_file()), None
        )
        if found is None:
            raise UserError(
                f"--osworld-tasks {path}: no {LIST_NAME} in it or the two folders above it; give OSWorld's "
                "evaluation_examples folder or one of its test_*.json lists"
            )
        path = found
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UserError(f"--osworld-tasks {path}: not a readable task list ({exc})") from exc
    if not isinstance(data, dict) or not data or not all(isinstance(ids, list) for ids in data.values()):
        raise UserError(
            f"--osworld-tasks {path}: expected OSWorld's task list, {{domain: [task ids]}} ({LIST_NAME}, test_nogdrive.json …)"
        )
    domains = {str(d): tuple(str(t) for t in ids) for d, ids in data.items()}
    return TaskList(path=path, domains=domains, index={t: d for d, ids in domains.items() for t in ids})


# ---------------------------------------------------------------- which runs, which task list


def folder_configs(folders: Sequence[Path]) -> list[tuple[Path | None, dict[str, Any]]]:
    """Each job folder's resolved config, with the folder the job ran in (``.hydra/hydra.yaml``)."""
    from mcpworld.report.folder import job_configs

    return [(working_dir(job / ".hydra" / "hydra.yaml"), config) for job, config in job_configs(list(folders))]


def working_dir(hydra_yaml: Path) -> Path | None:
    """``hydra.runtime.cwd``: where a relative ``tasks.root`` was read from."""
    try:
        data = yaml.safe_load(hydra_yaml.read_text(encoding="utf-8"))
        cwd = data["hydra"]["runtime"]["cwd"]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return None
    return Path(cwd) if isinstance(cwd, str) else None


def mlflow_configs(uri: str, experiment: str | None) -> list[tuple[Path | None, dict[str, Any]]]:
    """The job runs' ``config.yaml`` artifacts (and their ``.hydra/hydra.yaml``), up to MAX_JOB_CONFIGS."""
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    from mcpworld.report.tables import experiment_ids

    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs(
        experiment_ids(client, experiment, uri),
        filter_string="tags.`mcpworld.level` = 'job'",
        run_view_type=ViewType.ACTIVE_ONLY,
        max_results=MAX_JOB_CONFIGS,
    )
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        for run in runs:
            dest = Path(tmp) / run.info.run_id
            dest.mkdir()
            try:
                config = yaml.safe_load(
                    Path(client.download_artifacts(run.info.run_id, "config.yaml", str(dest))).read_text(encoding="utf-8")
                )
            except Exception:
                continue
            try:
                cwd = working_dir(Path(client.download_artifacts(run.info.run_id, ".hydra/hydra.yaml", str(dest))))
            except Exception:
                cwd = None
            if isinstance(config, dict):
                found.append((cwd, config))
    return found


def run_configs(args: argparse.Namespace) -> list[tuple[Path | None, dict[str, Any]]]:
    if args.dir:
        return folder_configs(args.dir)
    from mcpworld.report.tables import check_store

    return mlflow_configs(check_store(args.tracking_uri), args.experiment)


def wanted(args: argparse.Namespace) -> bool:
    """On without being asked for runs of the osworld_verified preset (the experiment named, or the one the
    folders' job configs name)."""
    if args.experiment is not None or not args.dir:
        return args.experiment in EXPERIMENTS
    return any((config.get("tracking") or {}).get("experiment") in EXPERIMENTS for _, config in folder_configs(args.dir))


def roots(configs: Iterable[tuple[Path | None, dict[str, Any]]]) -> list[Path]:
    """Each job's ``tasks.root``, a relative one taken from where that job ran (else from here)."""
    out: list[Path] = []
    for cwd, config in configs:
        root = (config.get("tasks") or {}).get("root")
        if not isinstance(root, str) or not root:
            continue
        path = Path(root).expanduser()
        if not path.is_absolute() and cwd is not None and (cwd / path).exists():
            path = cwd / path
        if path not in out:
            out.append(path)
    return out


def find_task_list(args: argparse.Namespace) -> TaskList | None:
    """``--osworld-tasks``, else the list beside the runs' own ``tasks.root`` (None: no domains known)."""
    if args.osworld_tasks is not None:
        return read_task_list(args.osworld_tasks)
    tried = roots(run_configs(args))
    for root in tried:
        try:
            return read_task_list(root)
        except UserError:
            continue
    where = f" (tasks.root {', '.join(map(str, tried))})" if tried else ""
    print(
        f"OSWorld's table: no {LIST_NAME} found by the runs' tasks.root{where}: the overall figure only; "
        "--osworld-tasks OSWorld/evaluation_examples gives each task's domain and the whole test set"
    )
    return None


# ---------------------------------------------------------------- the figures


def figure(
    name: str, episodes: list[Episode], listed: Sequence[str] | None, key: Callable[[str], str] | None = None
) -> dict[str, Any]:
    """One line: OSWorld's rate (scores over the episodes with a verdict) and ours (successes over the
    same), what both leave out, and the rate over every listed task (``listed``; None: no list)."""
    judged = [e for e in episodes if e.judged]
    score = float(sum(e.score for e in judged))
    row: dict[str, Any] = {
        "domain": name,
        "tasks": None if listed is None else len(listed),
        "run": len(judged),
        "score": score,
        "osworld_rate": score / len(judged) if judged else None,
        "successes": round(sum(e.success for e in judged)),
        "our_rate": float(np.mean([e.success for e in judged])) if judged else None,
        "not_judged": len(episodes) - len(judged),
        "not_run": None,
        "all_tasks_rate": None,
    }
    if listed is not None:
        of = key or str
        scores: dict[str, list[float]] = {}
        for ep in judged:
            scores.setdefault(of(ep.task_id), []).append(ep.score)
        ran = {of(ep.task_id) for ep in episodes}
        row["not_run"] = sum(t not in ran for t in listed)
        if listed:
            row["all_tasks_rate"] = sum(float(np.mean(scores[t])) if t in scores else 0.0 for t in listed) / len(listed)
    return row


def group_rows(episodes: list[Episode], tasks: TaskList | None) -> tuple[list[dict[str, Any]], list[Episode]]:
    """A group's lines: each domain of the list, the categories whose domains all have results, overall;
    and the episodes of tasks the list does not hold (in no line)."""
    if tasks is None:
        return [figure(OVERALL, episodes, None)], []
    by_domain: dict[str, list[Episode]] = {d: [] for d in tasks.domains}
    outside = []
    for ep in episodes:
        domain = tasks.domain_of(ep.task_id)
        if domain is None:
            outside.append(ep)
        else:
            by_domain[domain].append(ep)
    rows = [figure(d, by_domain[d], tasks.domains[d], tasks.key) for d in tasks.domains]
    for name, members in CATEGORIES:
        if all(any(e.judged for e in by_domain.get(d, ())) for d in members):
            rows.append(
                figure(
                    name, [e for d in members for e in by_domain[d]], [t for d in members for t in tasks.domains[d]], tasks.key
                )
            )
    rows.append(
        figure(
            OVERALL, [e for eps in by_domain.values() for e in eps], [t for ids in tasks.domains.values() for t in ids], tasks.key
        )
    )
    return rows, outside


def build(
    episodes: list[Episode], keys: Sequence[str], tasks: TaskList | None
) -> tuple[list[dict[str, Any]], list[str], list[Episode]]:
    """Every group's lines (group values + COLUMNS), the columns, and the episodes outside the list."""
    rows, outside = [], []
    for values, group in group_episodes(episodes, keys).items():
        lines, left = group_rows(group, tasks)
        rows += [{**dict(zip(keys, values, strict=True)), **line} for line in lines]
        outside += left
    return rows, [*keys, *COLUMNS], outside


# ---------------------------------------------------------------- output


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.2f} %"


def to_markdown(rows: list[dict[str, Any]], keys: Sequence[str], tasks: TaskList | None, outside: list[Episode]) -> str:
    listed = tasks is not None
    head = [
        "domain",
        *(["tasks"] if listed else []),
        "run",
        "score",
        "OSWorld rate",
        "our rate",
        "not judged",
        *(["not run", "over all tasks"] if listed else []),
    ]
    lines = [
        "OSWorld's own figure beside ours:",
        "",
        "- OSWorld rate: the scores' sum over the episodes with a verdict (`run`), as OSWorld's show_result.py "
        "computes it: partial scores count as fractions, an infeasible task answered FAIL scores 1.",
        "- Our rate: successes (a score of at least evaluator.success_threshold, 1 by default) over the same episodes.",
        "- Not judged: infra_error, eval_error and interrupted episodes, in neither rate (OSWorld writes no "
        "result.txt for a task that raised, and leaves it out).",
    ]
    if tasks is not None:
        lines += [
            f"- Not run: tasks of {tasks.path} ({tasks.size} tasks) that no episode ran (skipped here, or not selected).",
            "- Over all tasks: each task's mean score, 0 for one without a verdict, over the whole list: the "
            "denominator of a leaderboard row that ran every task.",
        ]
    else:
        lines.append("- No task list, so no domains: --osworld-tasks OSWorld/evaluation_examples gives them.")
    if outside:
        ids = sorted({e.task_id for e in outside})
        lines.append(
            f"- Left out: {len(outside)} episode(s) of {len(ids)} task(s) not in {tasks.path if tasks else ''} "
            f"({', '.join(ids[:3])}{' …' if len(ids) > 3 else ''})."
        )
    for values, group in _by_group(rows, keys):
        lines.append("")
        if keys:
            lines += [" · ".join(f"{k}={v}" for k, v in zip(keys, values, strict=True)), ""]
        lines += ["| " + " | ".join(head) + " |", "|:---|" + "---:|" * (len(head) - 1)]
        for row in group:
            name = f"**{row['domain']}**" if row["domain"] == OVERALL else row["domain"]
            cells = [
                name,
                *([str(row["tasks"])] if listed else []),
                str(row["run"]),
                f"{row['score']:.2f}",
                _pct(row["osworld_rate"]),
                _pct(row["our_rate"]),
                str(row["not_judged"]),
                *([str(row["not_run"]), _pct(row["all_tasks_rate"])] if listed else []),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _by_group(rows: list[dict[str, Any]], keys: Sequence[str]) -> list[tuple[tuple[Any, ...], list[dict[str, Any]]]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    return list(groups.items())


def report(episodes: list[Episode], args: argparse.Namespace) -> list[Path]:
    """osworld.csv and osworld.md under ``args.out`` (the markdown also printed); the files written."""
    tasks = find_task_list(args)
    keys = [k for k in args.keys if k not in PER_EPISODE]
    rows, columns, outside = build(episodes, keys, tasks)
    written = [args.out / "osworld.csv", args.out / "osworld.md"]
    write_csv(rows, columns, written[0])
    markdown = to_markdown(rows, keys, tasks, outside)
    written[1].write_text(markdown, encoding="utf-8")
    print(markdown)
    return written
