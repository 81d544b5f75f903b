"""``python -m mcpworld -m a=x,y b=u,v --cfg job``: print every job a sweep would run, without running it.

Hydra 1.3 refuses ``--multirun`` together with ``--cfg``; a researcher checking a sweep before
spending GPU hours wants exactly that, so the sweep is expanded here the way the basic sweeper
does it (the cartesian product of the command line's sweeps and the experiment's
``hydra.sweeper.params``) and each job's config is composed and printed.
"""

from __future__ import annotations

import itertools
from typing import Any, cast

from hydra import compose, initialize_config_dir
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override
from omegaconf import OmegaConf

from mcpworld.core.paths import CONF_DIR

MULTIRUN_FLAGS = ("-m", "--multirun")
CFG_FLAGS = ("-c", "--cfg")


def wants_preview(argv: list[str]) -> bool:
    return any(a in MULTIRUN_FLAGS for a in argv) and any(a in CFG_FLAGS for a in argv)


def _split(argv: list[str]) -> tuple[list[str], str, bool]:
    """(overrides, which part to print: job|hydra|all, resolve?)."""
    overrides, part, resolve = [], "job", False
    args = iter(argv)
    for arg in args:
        if arg in MULTIRUN_FLAGS:
            continue
        if arg in CFG_FLAGS:
            part = next(args, "job")
        elif arg == "--resolve":
            resolve = True
        elif not arg.startswith("-"):
            overrides.append(arg)
    return overrides, part, resolve


def _line(override: Override) -> str:
    """The override as written (the parser keeps every one's text)."""
    assert override.input_line is not None
    return override.input_line


def expand(overrides: list[str]) -> list[list[str]]:
    """Every job's override list: the cartesian product of the sweeps (command line, then experiment)."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        fixed = [o for o in OverridesParser.create().parse_overrides(overrides) if not o.is_sweep_override()]
        base = compose("config", overrides=[_line(o) for o in fixed], return_hydra_config=True)
    node = base.hydra.sweeper.get("params")
    # the sweeper's params: override keys -> sweep strings
    params = cast(dict[str, Any], OmegaConf.to_container(node, resolve=False) if node else {})
    given = {o.key_or_group for o in OverridesParser.create().parse_overrides(overrides)}
    lines = overrides + [f"{k}={v}" for k, v in params.items() if k not in given]
    axes = []
    for override in OverridesParser.create().parse_overrides(lines):
        if override.is_sweep_override():
            values = list(override.sweep_string_iterator())
            axes.append([f"{override.get_key_element()}={v}" for v in values])
        else:
            axes.append([_line(override)])
    return [list(job) for job in itertools.product(*axes)]


def preview(argv: list[str]) -> int:
    overrides, part, resolve = _split(argv)
    jobs = expand(overrides)
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for n, job in enumerate(jobs):
            cfg = compose("config", overrides=job, return_hydra_config=part in ("hydra", "all"))
            if part == "job" and "hydra" in cfg:
                del cfg["hydra"]
            node = cfg.hydra if part == "hydra" else cfg
            print(f"# job {n}: {' '.join(job)}")
            print(OmegaConf.to_yaml(node, resolve=resolve))
    print(f"# {len(jobs)} job(s)")
    return 0
