"""Agent profiles by family (``model.profile``): each drives its family as the family's makers' own
agent does (see base.py). Adding one: a module with a Profile subclass, registered below."""

from __future__ import annotations

from collections.abc import Callable

from mcpworld.agent.profiles.base import ModelView, Profile, PromptContext
from mcpworld.core.registry import Registry

PROFILES: Registry[Callable[[ModelView], Profile]] = Registry("model.profile", group="mcpworld.profiles")


@PROFILES.register("generic")
def _generic(model: ModelView) -> Profile:
    from mcpworld.agent.profiles.generic import GenericProfile

    return GenericProfile(model)


@PROFILES.register("claude")
def _claude(model: ModelView) -> Profile:
    from mcpworld.agent.profiles.claude import ClaudeProfile

    return ClaudeProfile(model)


@PROFILES.register("qwen3vl")
def _qwen3vl(model: ModelView) -> Profile:
    from mcpworld.agent.profiles.qwen3vl import Qwen3VLProfile

    return Qwen3VLProfile(model)


@PROFILES.register("gemma")
def _gemma(model: ModelView) -> Profile:
    from mcpworld.agent.profiles.gemma import GemmaProfile

    return GemmaProfile(model)


@PROFILES.register("uitars")
def _uitars(model: ModelView) -> Profile:
    from mcpworld.agent.profiles.uitars import UITarsProfile

    return UITarsProfile(model)


def make_profile(profile: str, model: ModelView) -> Profile:
    return PROFILES.get(profile)(model)


__all__ = ["PROFILES", "ModelView", "Profile", "PromptContext", "make_profile"]
