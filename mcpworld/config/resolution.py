"""A model's preferred screen, and the one place that picks it.

A model file picks its screen in its defaults list (``- override /resolution: square``), which
Hydra applies whenever nothing else chooses: ``resolution=`` on the command line or in a sweep wins,
and so does an experiment that fixes one. ``model.preferred_resolution`` says the same as data (it
is logged with the run); the defaults line is what acts, so a model that states a preference its
defaults list does not pick (a model file written before that line existed) is one error naming
the line to add, instead of a run on the wrong screen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpworld.core.errors import UserError

if TYPE_CHECKING:
    from mcpworld.config.schema import RootConfig

OVERRIDE_KEYS = ("resolution", "+resolution", "++resolution")


def check_preference(model: str, preferred: str | None, chosen: str, explicit: bool) -> None:
    """Raise when the model prefers a screen that nothing explicit overrode and its file did not pick."""
    if not preferred or explicit or chosen == preferred:
        return
    raise UserError(
        f"model={model} prefers resolution={preferred} (model.preferred_resolution), but the run would "
        f"use resolution={chosen}: add `- override /resolution: {preferred}` under `defaults:` in its model "
        f"file (conf/model/{model}.yaml; a resolution= on the command line still wins), or run with "
        f"resolution={preferred}."
    )


def explicitly_chosen(overrides: list[str], experiment: str | None) -> bool:
    """Whether the run's screen was chosen on purpose: a ``resolution=`` override (the command line's,
    or one job's value of a sweep) or an experiment preset (which may fix one for the whole study)."""
    named = any(o.split("=", 1)[0] in OVERRIDE_KEYS for o in overrides)
    return named or experiment not in (None, "null")


def check_run(cfg: RootConfig) -> None:
    """``check_preference`` for the running Hydra job; outside Hydra (tests) there is nothing to read."""
    from hydra.core.hydra_config import HydraConfig

    try:
        hc = HydraConfig.get()
    except ValueError:
        return
    choices = hc.runtime.choices
    explicit = explicitly_chosen(list(hc.overrides.task), choices.get("experiment"))
    check_preference(str(cfg.model.name), cfg.model.preferred_resolution, str(cfg.resolution.name), explicit)
