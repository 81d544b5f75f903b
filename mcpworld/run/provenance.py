"""Which rendering drove a model: the episode's profile, and what its first request said.

Each episode writes ``system_prompt.txt`` and ``request.json`` (the first request as the provider
sent it, images elided; every file in the episode folder is logged as an artifact). The job logs the
profile's name and version and the sha256 of its system prompt and tool definitions as params,
rendered once before any episode for the modality's own tools on the configured screen (an MCP
task's servers and a task's own system prompt are per episode: its request.json has its hashes).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from mcpworld.agent.profiles import ModelView, Profile, PromptContext, make_profile
from mcpworld.agent.providers import replays_solution
from mcpworld.agent.tools import build_toolset
from mcpworld.agent.tools.base import Tool
from mcpworld.config.schema import RootConfig
from mcpworld.env.base import Environment


def episode_profile(cfg: RootConfig) -> Profile:
    """The model family's profile (``model.profile``), built from the model config. A provider that replays
    solutions (the oracle) replays them in our own tool vocabulary, so it always gets the generic profile."""
    m = cfg.model
    view = ModelView(
        name=m.name,
        id=m.id,
        coordinates=str(m.coordinates),
        image_max=(int(m.image_max[0]), int(m.image_max[1])) if m.image_max else None,
        variant=str(m.variant),
        options=dict(m.profile_options or {}),
        computer_tool=m.computer_tool,
    )
    return make_profile("generic" if replays_solution(cfg.provider.kind) else m.profile, view)


def sha256(value: str | list[dict[str, Any]] | dict[str, Any]) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def tool_definitions(tools: dict[str, Tool]) -> list[dict[str, Any]]:
    """What the model is told of its tools: the schemas, whether a profile sends them in the request's
    ``tools`` field or writes them into its prompt."""
    return [t.schema() for t in tools.values()]


def profile_params(cfg: RootConfig) -> dict[str, str]:
    """``profile``, ``profile.version``, ``prompt.sha256``, ``tools.sha256`` for the job's params."""
    profile = episode_profile(cfg)
    screen = (cfg.resolution.width, cfg.resolution.height)
    families = [str(f) for f in cfg.modality.tools]
    coords = profile.screen(screen) if "computer" in families else None
    # tools are built here only to be described, never called: a stand-in with the screen's size will do
    stand_in = cast(Environment, SimpleNamespace(width=screen[0], height=screen[1]))
    image_max = list(cfg.model.image_max) if cfg.model.image_max else None
    tools = profile.tools(build_toolset(families, stand_in, cfg.model.coordinates, cfg.agent, image_max, coords))
    prompt = profile.system_prompt(PromptContext(list(tools), coords.image if coords else screen, cfg.agent.system_prompt))
    return {**profile.params(), "prompt.sha256": sha256(prompt), "tools.sha256": sha256(tool_definitions(tools))}


def elide_images(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages with each image's data replaced by its kind and size in bytes."""

    def part(p: object) -> object:
        if isinstance(p, dict) and p.get("type") == "image_url":
            url = str((p.get("image_url") or {}).get("url", ""))
            head, _, data = url.partition(",")
            return {"type": "image_url", "image_url": {"url": f"{head},<{len(data) * 3 // 4} bytes elided>"}}
        return p

    return [{**m, "content": [part(p) for p in m["content"]]} if isinstance(m.get("content"), list) else m for m in messages]


def write_request(
    folder: Path,
    profile: Profile,
    system: str,
    tools: dict[str, Tool],
    first: tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]] | None,
) -> None:
    """``system_prompt.txt`` and ``request.json`` in the episode folder."""
    (folder / "system_prompt.txt").write_text(system, encoding="utf-8")
    messages, schemas = first or ([], [])
    record = {
        **profile.params(),
        "prompt.sha256": sha256(system),
        "tools.sha256": sha256(tool_definitions(tools)),
        "tool_definitions": tool_definitions(tools),
        "request": {"messages": elide_images(messages), "tools": schemas},
    }
    (folder / "request.json").write_text(json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8")
