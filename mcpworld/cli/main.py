"""``python -m mcpworld [overrides] [-m]``: compose the config with Hydra and run one job (or a sweep).

How a run ends: a job's error is one line. In a single run it is the exit status (2 for an error
the user can fix, 1 for a harness bug, whose traceback is kept in the job's ``error.txt``); in a
sweep the failed job is recorded and the sweep goes on, and the exit status is 1 when any job
failed. Ctrl-C or SIGTERM stop everything cleanly (130 / 143), and the same command resumes.
"""

from __future__ import annotations

import sys
import traceback

import hydra
from omegaconf import DictConfig

from mcpworld.config.schema import register

register()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> float:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from mcpworld.core.errors import UserError
    from mcpworld.run.job import JobFailed, job_dir, one_line, run_job

    try:
        return run_job(cfg)
    except Exception as exc:
        line = one_line(exc)
        expected = isinstance(exc, (UserError, JobFailed))
        if not expected:  # a harness bug: one line here, the whole story on disk
            where = job_dir() / "error.txt"
            where.parent.mkdir(parents=True, exist_ok=True)
            where.write_text(traceback.format_exc())
            line += f" (traceback in {where})"
        if HydraConfig.get().mode == RunMode.MULTIRUN:  # the sweep goes on; its end reports this job
            print(f"mcpworld: job {HydraConfig.get().job.num} failed: {line}", file=sys.stderr)
            return 0.0
        print(f"mcpworld: error: {line}", file=sys.stderr)
        sys.exit(2 if expected else 1)


def run() -> int:
    from mcpworld.run import summary
    from mcpworld.run.interrupt import raise_on_sigterm

    raise_on_sigterm()
    try:
        main()
    except KeyboardInterrupt as exc:
        summary.sweep_interrupted()
        return int(getattr(exc, "exit_code", 130))
    return summary.SWEEP_EXIT_CODE


def cli() -> None:
    """The console script and ``python -m mcpworld``."""
    from mcpworld.core.secrets import hide_from_proc
    from mcpworld.run.sweep_preview import preview, wants_preview

    sys.argv[1:] = hide_from_proc(sys.argv[1:])  # before anything reads them: Hydra, the agent's shell

    if wants_preview(sys.argv[1:]):  # Hydra refuses --multirun with --cfg; print the sweep's jobs instead
        sys.exit(preview(sys.argv[1:]))
    from mcpworld.config.launchers import missing_plugin, quiet_schema_matching

    missing = missing_plugin(sys.argv[1:])
    if missing:
        print(f"mcpworld: error: {missing}", file=sys.stderr)
        sys.exit(2)
    quiet_schema_matching()
    sys.exit(run())
