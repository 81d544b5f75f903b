"""What an episode cost in US dollars: its tokens at ``model.price`` and its measured energy at
``telemetry.kwh_price``. An unpriced model or an unmetered episode has no cost (None), never 0: a
paper table must not show a local model as free because nobody gave it a price."""

from __future__ import annotations

from mcpworld.config.schema import PriceConfig
from mcpworld.core.errors import UserError
from mcpworld.core.result import EpisodeResult

PER_TOKENS = 1_000_000  # prices are USD per 1M tokens, as providers list them
J_PER_KWH = 3.6e6


def check_price(price: PriceConfig, kwh_price: float | None) -> None:
    """A negative price is a typo; say which key, before any episode."""
    for key, value in (
        ("model.price.input", price.input),
        ("model.price.output", price.output),
        ("model.price.cached_input", price.cached_input),
        ("telemetry.kwh_price", kwh_price),
    ):
        if value is not None and value < 0:
            raise UserError(f"{key}={value} must be 0 or more (USD per 1M tokens; per kWh for telemetry.kwh_price)")
    if (price.input is None) != (price.output is None):
        given, missing = ("input", "output") if price.output is None else ("output", "input")
        raise UserError(f"model.price.{given} is set but model.price.{missing} is not: set both (USD per 1M tokens)")


def token_cost(price: PriceConfig, tokens_in: int, tokens_out: int, tokens_cached: int = 0) -> float | None:
    """USD for one episode's tokens. Cache reads (part of ``tokens_in``) at ``cached_input`` when it
    is set, else at ``input``; prompt-cache writes are priced as plain input (Anthropic bills them at
    1.25x: a small undercount we accept rather than a fourth price key)."""
    if price.input is None or price.output is None:
        return None
    cached = min(tokens_cached, tokens_in)
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    return ((tokens_in - cached) * price.input + cached * cached_rate + tokens_out * price.output) / PER_TOKENS


def energy_cost(energy_j: float | None, kwh_price: float | None) -> float | None:
    """USD for measured energy (J); None when either is unknown."""
    if energy_j is None or kwh_price is None:
        return None
    return energy_j / J_PER_KWH * kwh_price


def measured_energy_j(gpu: dict[str, float]) -> float | None:
    """The episode's measured energy: ``gpu.energy_j`` plus ``cpu.energy_j`` where recorded."""
    parts = [gpu[k] for k in ("gpu.energy_j", "cpu.energy_j") if k in gpu]
    return float(sum(parts)) if parts else None


def price_episode(result: EpisodeResult, price: PriceConfig, kwh_price: float | None) -> None:
    """Set the episode's ``cost_usd`` and ``energy_cost_usd`` (None where there is no price or energy)."""
    tokens = token_cost(price, result.tokens_in, result.tokens_out, result.tokens_cached)
    energy = energy_cost(measured_energy_j(result.gpu), kwh_price)
    result.cost_usd = None if tokens is None else round(tokens, 8)
    result.energy_cost_usd = None if energy is None else round(energy, 8)
