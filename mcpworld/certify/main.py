"""``python -m mcpworld.certify [overrides] [--n N] [--concurrency C] [--out DIR] [--against CSV]``

The overrides select tasks as a run's do (``tasks.root=…``, ``tasks.solutions=…``, ``app=…``,
``task=…``, ``modality=…``, ``env=…``) and ``tracking.*`` says where the certificate's MLflow run
goes. Each selected task runs N oracle, N no-op and N spoiled-oracle episodes (docs/certify.md).
Writes DIR/certificate.csv and DIR/certificate.md (and the three jobs' folders under DIR). Exit
status: 0, or 1 when a task certified in ``--against`` is not certified now (a regression), or 2
for an error the user can fix.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException

from mcpworld.agent.providers.oracle import declares_spoil, spoiled
from mcpworld.certify.certificate import read_statuses, regressions, summary_line, to_markdown, write_csv
from mcpworld.certify.episodes import run_mode
from mcpworld.certify.modes import MODES, NOOP, ORACLE, REFUSED, SPOILED, override_key
from mcpworld.certify.tracking import log_certificate
from mcpworld.certify.verdict import ModeOutcome, excluded, judge
from mcpworld.config.schema import RootConfig, register
from mcpworld.core.errors import UserError
from mcpworld.core.paths import CONF_DIR
from mcpworld.core.task import Task
from mcpworld.run.interrupt import raise_on_sigterm
from mcpworld.run.job import select_tasks


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m mcpworld.certify",
        description=__doc__.split("\n\n")[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("overrides", nargs="*", help="Hydra overrides selecting the tasks, as for python -m mcpworld")
    parser.add_argument("--n", type=int, default=2, help="episodes per task and mode (default 2)")
    parser.add_argument("--concurrency", type=int, default=1, help="desktops at once (default 1)")
    parser.add_argument(
        "--out", type=Path, default=None, help="folder for the certificate and the jobs (default outputs/certify/<date>_<time>)"
    )
    parser.add_argument(
        "--against", type=Path, default=None, help="a committed certificate.csv: exit 1 when a task certified there is not now"
    )
    parser.add_argument(
        "--beside",
        action="append",
        default=[],
        metavar="LABEL=CSV",
        help="another certificate's statuses as a column of the Markdown table, e.g. "
        '"on the authors\' VM=vm/certificate.csv" (made with env=vm); repeatable',
    )
    args = parser.parse_intermixed_args(argv)
    if any("=" not in b for b in args.beside):
        parser.error('--beside takes LABEL=CSV, e.g. --beside "on the authors\' VM=vm/certificate.csv"')
    if args.n < 1 or args.concurrency < 1:
        parser.error("--n and --concurrency must be at least 1")
    for override in args.overrides:
        where = REFUSED.get(override_key(override))
        if where:
            parser.error(f"{override!r}: certify sets this itself; use {where}")
    return args


def compose_config(overrides: list[str]) -> RootConfig:
    register()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return cast(RootConfig, compose("config", overrides=[*overrides, *ORACLE.overrides]))
    except HydraException as exc:  # a bad override: Hydra's message and its cause, one line
        cause = str(exc.__cause__).splitlines()[0] if exc.__cause__ else ""
        raise UserError(f"{exc}" + (f" ({cause})" if cause else "")) from None


def staging_default(cfg: RootConfig, overrides: list[str]) -> list[str]:
    """``env.stage=true`` unless the user set env.stage or the desktops cannot stage: a certificate is many
    short episodes of the same tasks, each worker's next one set up while one runs (run/staging.py)."""
    from mcpworld.env import backend_stages

    if any(override_key(o) == "env.stage" for o in overrides):
        return []
    if not backend_stages(cfg.env.backend) or cfg.env.mcp_sandbox == "klavis":
        return []
    return ["env.stage=true"]


def spoil_kind(task: Task, modality: str) -> str:
    solution = task.solution.get(modality)
    if declares_spoil(solution):
        return "declared"
    return "generic" if spoiled(solution) is not None else "none"


def run_modes(args: argparse.Namespace, ids: list[str], spoils: dict[str, str], out: Path) -> dict[str, dict[str, ModeOutcome]]:
    """{mode: {task id: outcome}}: one job per mode, in order (the spoiled one only for tasks with a spoil)."""
    runs: dict[str, dict[str, ModeOutcome]] = {}
    for mode in MODES:
        todo = [i for i in ids if mode is not SPOILED or spoils[i] != "none"]
        if todo:
            print(f"certify: {mode.name}: {len(todo)} task(s)", file=sys.stderr)
            runs[mode.name] = run_mode(mode, list(args.overrides), todo, args.n, args.concurrency, out)
    return runs


def certify(args: argparse.Namespace) -> int:
    before = read_statuses(args.against) if args.against else None  # a bad file fails now, not after the runs
    beside = {label: read_statuses(Path(path), "--beside") for label, path in (b.split("=", 1) for b in args.beside)}
    cfg = compose_config(list(args.overrides))
    args.overrides = [*args.overrides, *staging_default(cfg, list(args.overrides))]
    chosen = select_tasks(cfg)  # the job's own selection: skip reasons and missing solutions included
    modality = cfg.modality.name
    apps = {t.id: t.app for t in chosen.tasks}
    out = (args.out or Path("outputs/certify") / time.strftime("%Y-%m-%d_%H-%M-%S")).absolute()
    out.mkdir(parents=True, exist_ok=True)
    ids = [t.id for t in chosen.tasks]
    spoils = {t.id: spoil_kind(t, modality) for t in chosen.tasks}
    print(
        f"certify: {len(ids)} task(s), {args.n} episode(s) per mode, {len(chosen.skipped)} excluded; jobs under {out}",
        file=sys.stderr,
    )
    runs = run_modes(args, ids, spoils, out)
    certs = [
        judge(i, apps[i], spoils[i], runs[ORACLE.name][i], runs[NOOP.name][i], runs.get(SPOILED.name, {}).get(i) or ModeOutcome())
        for i in ids
    ]
    certs += [
        excluded(task_id, chosen.apps.get(task_id, task_id.split("/")[0]), f"{kind}: {why}")
        for task_id, kind, why in chosen.skipped
    ]
    certs.sort(key=lambda c: c.task_id)
    csv_path, md_path = out / "certificate.csv", out / "certificate.md"
    write_csv(certs, csv_path)
    md_path.write_text(to_markdown(certs, args.n, beside), encoding="utf-8")
    failed, warned = regressions(before, certs) if before is not None else ([], [])
    log_certificate(
        cfg.tracking,
        certs,
        {
            "n": str(args.n),
            "concurrency": str(args.concurrency),
            "modality": modality,
            "overrides": " ".join(args.overrides),
            "against": str(args.against or ""),
        },
        len(failed),
        [csv_path, md_path],
    )
    print(md_path.read_text(encoding="utf-8"))
    print(f"certify: {summary_line(certs)}; written to {csv_path} and {md_path.name}", file=sys.stderr)
    for line in warned:
        print(f"certify: warning: {line}", file=sys.stderr)
    for line in failed:
        print(f"certify: REGRESSION {line}", file=sys.stderr)
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    raise_on_sigterm()  # SIGTERM as Ctrl-C: the running job is stopped cleanly, not orphaned
    try:
        return certify(args)
    except UserError as exc:
        print(f"certify: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("certify: interrupted; the same command resumes the jobs where they stopped", file=sys.stderr)
        return 130
