"""Model providers, looked up by ``provider.kind``."""

from __future__ import annotations

from typing import Any

from mcpworld.agent.providers.base import Provider
from mcpworld.core.errors import UserError

KINDS = ("oracle", "openai_compat", "ollama", "anthropic")


def http_options(cfg: Any) -> dict[str, Any]:
    """Constructor arguments every HTTP provider takes (see providers/http.py)."""
    if not cfg.provider.base_url:
        raise UserError(f"provider={cfg.provider.name} needs provider.base_url")
    return {"base_url": cfg.provider.base_url.rstrip("/"), "api_key": cfg.provider.api_key,
            "timeout_s": cfg.provider.timeout_s, "max_retries": cfg.provider.max_retries,
            "label": cfg.provider.name, "start_hint": cfg.provider.start_hint}


def ollama_model_hint(name: str, model_id: str) -> str:
    """What to pull: the chosen model, or (the oracle has no weights) how to choose a real one."""
    from mcpworld.agent.providers.ollama import CHOOSE_MODEL, NOT_MODELS

    if name == "oracle" or model_id in NOT_MODELS:
        return f"No model is chosen: {CHOOSE_MODEL}."
    return f"Then `ollama pull {model_id}` (or let provider.pull=true do it)."


def make_provider(cfg: Any, solution: list[dict[str, Any]]) -> Provider:
    """The provider for one episode; ``solution`` is what the oracle replays."""
    kind = cfg.provider.kind
    if kind == "oracle":
        from mcpworld.agent.providers.oracle import OracleProvider

        return OracleProvider(solution)
    if kind in ("openai_compat", "ollama"):
        from mcpworld.agent.providers.openai_compat import OpenAICompatProvider

        options = dict(model=cfg.model.id, temperature=cfg.model.temperature, max_tokens=cfg.model.max_tokens,
                       seed=cfg.seed, **http_options(cfg))
        if kind == "openai_compat":
            return OpenAICompatProvider(**options)
        from mcpworld.agent.providers.ollama import OllamaProvider

        options["start_hint"] = f"{options['start_hint']} {ollama_model_hint(cfg.model.name, cfg.model.id)}".strip()
        return OllamaProvider(pull=cfg.provider.pull, unload_others=cfg.provider.unload_others,
                              context_length=cfg.model.context_length, **options)
    if kind == "anthropic":
        from mcpworld.agent.providers.anthropic import AnthropicProvider
        from mcpworld.agent.tools.computer import image_size

        return AnthropicProvider(
            model=cfg.model.id, temperature=cfg.model.temperature, max_tokens=cfg.model.max_tokens,
            display_size=image_size((cfg.resolution.width, cfg.resolution.height), cfg.model.image_max),
            computer_tool=cfg.model.computer_tool, bash_tool=cfg.model.bash_tool, betas=list(cfg.model.betas),
            prompt_caching=cfg.provider.prompt_caching, api_version=cfg.provider.api_version, **http_options(cfg))
    raise UserError(f"provider.kind={kind!r} is unknown; known: {', '.join(KINDS)}")
