"""Agent profiles by family (``model.profile``): each drives its family as the family's makers' own
agent does (see base.py). Adding one: a module with a Profile subclass, registered below."""

from __future__ import annotations

from typing import Callable

from mcpworld.agent.profiles.base import ModelView, Profile, PromptContext
from mcpworld.core.registry import Registry

PROFILES: Registry[Callable[[ModelView], Profile]] = Registry("model.profile")


@PROFILES.register("generic")
def _generic(model: ModelView) -> Profile:
    from mcpworld.agent.profiles.generic import GenericProfile

    return GenericProfile(model)


def make_profile(profile: str, model: ModelView) -> Profile:
    return PROFILES.get(profile)(model)


__all__ = ["PROFILES", "ModelView", "Profile", "PromptContext", "make_profile"]
