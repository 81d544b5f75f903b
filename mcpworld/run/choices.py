"""The config values that name an implementation, checked against the registries that hold them.

``provider.kind``, ``model.profile``, ``env.backend``, ``env.mcp_sandbox`` and ``tracking.backend``
are plain strings in the schema: the registry is the one list of their names (the built-ins, other
installed packages' entry points, or a ``package.module:Name`` reference). The job checks them all
before anything starts, so a typo is one line naming the key, the value and every known name.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from mcpworld.config.schema import RootConfig
from mcpworld.core.registry import Registry


def registries() -> list[Registry[Any]]:
    """Every registry a config value picks from, each knowing its config key."""
    from mcpworld.agent.profiles import PROFILES
    from mcpworld.agent.providers import PROVIDERS
    from mcpworld.env import BACKENDS
    from mcpworld.mcp.servers import SANDBOXES
    from mcpworld.telemetry.tracking.tracker import BACKENDS as TRACKERS

    return [PROVIDERS, PROFILES, BACKENDS, SANDBOXES, TRACKERS]


def check_choices(cfg: RootConfig) -> None:
    """UserError for the first value no registry knows (a reference is imported only when built)."""
    for registry in registries():
        registry.check(attrgetter(registry.key)(cfg))
