"""Model providers, looked up by ``provider.kind`` in a registry: each kind is a function that
builds the provider from the typed config pieces it needs. Adding one: a module with the provider
class and a ``@PROVIDERS.register("kind")`` builder below, and the kind in config.schema.ProviderKind."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from mcpworld.agent.providers.base import Provider
from mcpworld.config.schema import ModelConfig, ProviderConfig, ResolutionConfig
from mcpworld.core.errors import UserError
from mcpworld.core.registry import Registry


@dataclass(frozen=True)
class ProviderSettings:
    """What a provider is built from: the model, its endpoint, the screen, the run's seed."""

    model: ModelConfig
    provider: ProviderConfig
    resolution: ResolutionConfig
    seed: int = 0

    @classmethod
    def of(cls, cfg: Any) -> ProviderSettings:
        """The pieces of a run config (the one place that reads the root config)."""
        return cls(model=cfg.model, provider=cfg.provider, resolution=cfg.resolution, seed=int(cfg.seed))


Builder = Callable[[ProviderSettings, list[dict[str, Any]]], Provider]
PROVIDERS: Registry[Builder] = Registry("provider.kind")


def http_options(provider: ProviderConfig) -> dict[str, Any]:
    """Constructor arguments every HTTP provider takes (see providers/http.py)."""
    if not provider.base_url:
        raise UserError(f"provider={provider.name} needs provider.base_url")
    return {"base_url": provider.base_url.rstrip("/"), "api_key": provider.api_key,
            "timeout_s": provider.timeout_s, "max_retries": provider.max_retries,
            "label": provider.name, "start_hint": provider.start_hint}


def ollama_model_hint(name: str, model_id: str) -> str:
    """What to pull: the chosen model, or (the oracle has no weights) how to choose a real one."""
    from mcpworld.agent.providers.ollama import CHOOSE_MODEL, NOT_MODELS

    if name == "oracle" or model_id in NOT_MODELS:
        return f"No model is chosen: {CHOOSE_MODEL}."
    return f"Then `ollama pull {model_id}` (or let provider.pull=true do it)."


@PROVIDERS.register("oracle")
def _oracle(s: ProviderSettings, solution: list[dict[str, Any]]) -> Provider:
    from mcpworld.agent.providers.oracle import OracleProvider

    return OracleProvider(solution)


def _chat_options(s: ProviderSettings) -> dict[str, Any]:
    return dict(model=s.model.id, temperature=s.model.temperature, max_tokens=s.model.max_tokens, seed=s.seed,
                **http_options(s.provider))


@PROVIDERS.register("openai_compat")
def _openai_compat(s: ProviderSettings, solution: list[dict[str, Any]]) -> Provider:
    from mcpworld.agent.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(**_chat_options(s))


@PROVIDERS.register("ollama")
def _ollama(s: ProviderSettings, solution: list[dict[str, Any]]) -> Provider:
    from mcpworld.agent.providers.ollama import OllamaProvider

    options = _chat_options(s)
    options["start_hint"] = f"{options['start_hint']} {ollama_model_hint(s.model.name, s.model.id)}".strip()
    return OllamaProvider(pull=s.provider.pull, unload_others=s.provider.unload_others,
                          context_length=s.model.context_length, **options)


@PROVIDERS.register("anthropic")
def _anthropic(s: ProviderSettings, solution: list[dict[str, Any]]) -> Provider:
    from mcpworld.agent.providers.anthropic import AnthropicProvider
    from mcpworld.agent.tools.computer import image_size

    return AnthropicProvider(
        model=s.model.id, temperature=s.model.temperature, max_tokens=s.model.max_tokens,
        display_size=image_size((s.resolution.width, s.resolution.height), s.model.image_max),
        computer_tool=s.model.computer_tool, bash_tool=s.model.bash_tool, betas=list(s.model.betas),
        prompt_caching=s.provider.prompt_caching, api_version=s.provider.api_version, **http_options(s.provider))


def make_provider(settings: ProviderSettings, solution: list[dict[str, Any]]) -> Provider:
    """The provider for one episode; ``solution`` is what the oracle replays."""
    return PROVIDERS.get(settings.provider.kind)(settings, solution)
