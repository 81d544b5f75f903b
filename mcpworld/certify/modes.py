"""The three ways a task is run to certify it, and the outcome each must have."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mode:
    name: str
    overrides: tuple[str, ...]  # on top of the user's: they replace the user's value of the same key
    must_pass: bool  # the oracle passes; doing nothing and the nearly right answer fail


ORACLE = Mode("oracle", ("provider=oracle", "provider.replay=solution"), must_pass=True)
NOOP = Mode("noop", ("provider=oracle", "provider.replay=solution", "agent.max_steps=0"), must_pass=False)
SPOILED = Mode("spoiled", ("provider=oracle", "provider.replay=spoiled"), must_pass=False)
MODES = (ORACLE, NOOP, SPOILED)

# what certify sets itself, and where a user's override of it belongs instead
REFUSED = {
    "attempts": "--n",
    "concurrency": "--concurrency",
    "hydra.run.dir": "--out",
    "provider": "nothing: certify replays the oracle",
    "provider.kind": "nothing: certify replays the oracle",
    "provider.replay": "nothing: certify runs both replays",
    "-m": "nothing: one certificate is one run",
    "--multirun": "nothing: one certificate is one run",
}


def override_key(override: str) -> str:
    """``+a.b=1`` / ``~a.b`` / ``a.b=1`` → ``a.b``."""
    return override.split("=", 1)[0].lstrip("+~")


def job_overrides(user: list[str], mode: Mode, task_ids: list[str], n: int, concurrency: int, out: str) -> list[str]:
    """One mode's job: the user's selection and settings, its tasks by id, N attempts each, no tracking of
    its own (the certificate's MLflow run holds the result), the mode's keys in place of the user's."""
    own = {override_key(o) for o in mode.overrides} | {"task"}
    kept = [o for o in user if override_key(o) not in own and not override_key(o).startswith("tracking")]
    return [
        *kept,
        *mode.overrides,
        f"task=[{','.join(hydra_quoted(t) for t in task_ids)}]",
        f"attempts={n}",
        f"concurrency={concurrency}",
        "tracking=none",
        f"hydra.run.dir={hydra_quoted(out)}",
    ]


def hydra_quoted(text: str) -> str:
    """A task id as one quoted string in a Hydra override list (ids hold '/', '-', '.')."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
