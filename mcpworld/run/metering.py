"""The provider as the energy meter sees it: every request's window is marked in the job's ledger, so
the GPU energy of calls served at the same time (``concurrency>1``) is shared, not counted twice."""

from __future__ import annotations

from typing import Any

from mcpworld.agent.messages import Message, ToolSchema
from mcpworld.agent.providers.base import ModelInfo, Provider, Reply
from mcpworld.telemetry.energy.meter import EpisodeEnergy, current_episode


class MeteredProvider(Provider):
    """Delegates everything to the wrapped provider; ``complete`` runs inside ``energy.call()``."""

    def __init__(self, inner: Provider, energy: EpisodeEnergy):
        self.inner = inner
        self.energy = energy
        self.name = inner.name

    async def complete(self, messages: list[Message], tools: list[ToolSchema], *, temperature: float | None = None) -> Reply:
        with self.energy.call():
            if temperature is None:  # (wrapped providers of tests may take no temperature)
                return await self.inner.complete(messages, tools)
            return await self.inner.complete(messages, tools, temperature=temperature)

    async def preflight(self) -> ModelInfo:
        return await self.inner.preflight()

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __getattr__(self, name: str) -> Any:  # vision, model … as the wrapped provider has them
        return getattr(self.inner, name)


def metered(provider: Provider) -> Provider:
    """The provider wrapped when this thread's episode is metered, else itself."""
    energy = current_episode()
    return MeteredProvider(provider, energy) if energy is not None else provider
