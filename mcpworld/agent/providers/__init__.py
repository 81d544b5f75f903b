"""Model providers, looked up by ``provider.kind`` in a registry: each kind is a function that
builds the provider from the typed config pieces it needs. Adding one: a module with the provider
class and a ``@PROVIDERS.register("kind")`` builder below, given ``ProviderSettings`` only (the registry is the one list of kinds;
run.choices checks ``provider.kind`` against it). Other packages add kinds through ``mcpworld.providers``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcpworld.agent.providers.base import Provider
from mcpworld.config.schema import ModelConfig, ProviderConfig, ResolutionConfig, RootConfig
from mcpworld.core.errors import UserError
from mcpworld.core.registry import Registry
from mcpworld.core.task_parts import OracleStep


@dataclass(frozen=True)
class ProviderSettings:
    """What a provider is built from: the model, its endpoint, the screen, the run's seed."""

    model: ModelConfig
    provider: ProviderConfig
    resolution: ResolutionConfig
    seed: int | None = None

    @classmethod
    def of(cls, cfg: RootConfig) -> ProviderSettings:
        """The pieces of a run config (the one place that reads the root config)."""
        seed = None if cfg.seed is None else int(cfg.seed)
        return cls(model=cfg.model, provider=cfg.provider, resolution=cfg.resolution, seed=seed)


Solution = Sequence[OracleStep]  # a task's solution for the modality: the steps the oracle replays
# a kind's provider, made from the run's settings alone: a model's provider never sees the task's solution
Builder = Callable[[ProviderSettings], Provider]
PROVIDERS: Registry[Builder] = Registry("provider.kind", group="mcpworld.providers")


def http_options(provider: ProviderConfig) -> dict[str, Any]:
    """Constructor arguments every HTTP provider takes (see providers/http.py)."""
    if not provider.base_url:
        raise UserError(f"provider={provider.name} needs provider.base_url")
    return {
        "base_url": provider.base_url.rstrip("/"),
        "api_key": provider.api_key,
        "timeout_s": provider.timeout_s,
        "max_retries": provider.max_retries,
        "label": provider.name,
        "start_hint": provider.start_hint,
    }


def ollama_model_hint(name: str, model_id: str) -> str:
    """What to pull: the chosen model, or (the oracle has no weights) how to choose a real one."""
    from mcpworld.agent.providers.ollama import CHOOSE_MODEL, NOT_MODELS

    if name == "oracle" or model_id in NOT_MODELS:
        return f"No model is chosen: {CHOOSE_MODEL}."
    return f"Then `ollama pull {model_id}` (or let provider.pull=true do it)."


class ReplayBuilder:
    """A kind whose provider replays each task's solution (the oracle), and the one kind of builder that is
    handed it. ``replays_solution`` is what a run asks of a kind (``replays_solution(kind)``): its tasks
    need a solution, and its episodes get the generic profile and the replay's own tools."""

    replays_solution = True

    def __init__(self, make: Callable[[ProviderSettings, Solution], Provider]):
        self.make = make

    def __call__(self, settings: ProviderSettings) -> Provider:
        return self.make(settings, [])  # no task yet (the endpoint check): nothing to replay

    def replay(self, settings: ProviderSettings, solution: Solution) -> Provider:
        return self.make(settings, solution)


def _oracle(s: ProviderSettings, solution: Solution) -> Provider:
    from mcpworld.agent.providers.oracle import OracleProvider

    return OracleProvider(solution, spoil=s.provider.replay == "spoiled")


PROVIDERS.register("oracle")(ReplayBuilder(_oracle))


def replays_solution(kind: str) -> bool:
    """Whether ``provider.kind=kind`` replays each task's solution (a builder that declares it)."""
    return bool(getattr(PROVIDERS.get(kind), "replays_solution", False))


def _chat_options(s: ProviderSettings) -> dict[str, Any]:
    return dict(
        model=s.model.id,
        temperature=s.model.temperature,
        max_tokens=s.model.max_tokens,
        seed=s.seed,
        context_length=s.model.context_length,
        top_p=s.model.top_p,
        top_k=s.model.top_k,
        presence_penalty=s.model.presence_penalty,
        frequency_penalty=s.model.frequency_penalty,
        **http_options(s.provider),
    )


@PROVIDERS.register("openai_compat")
def _openai_compat(s: ProviderSettings) -> Provider:
    from mcpworld.agent.providers.openai_compat import OpenAICompatProvider

    return OpenAICompatProvider(**_chat_options(s))


@PROVIDERS.register("ollama")
def _ollama(s: ProviderSettings) -> Provider:
    from mcpworld.agent.providers.ollama import OllamaProvider

    options = _chat_options(s)
    options["start_hint"] = f"{options['start_hint']} {ollama_model_hint(s.model.name, s.model.id)}".strip()
    options["top_k"] = None  # Ollama's /v1 takes no top_k (its documented fields); the model's Modelfile sets it
    return OllamaProvider(pull=s.provider.pull, unload_others=s.provider.unload_others, **options)


@PROVIDERS.register("anthropic")
def _anthropic(s: ProviderSettings) -> Provider:
    from mcpworld.agent.providers.anthropic import AnthropicProvider

    return AnthropicProvider(
        model=s.model.id, api_version=s.provider.api_version, **_claude_options(s), **http_options(s.provider)
    )


def _claude_options(s: ProviderSettings) -> dict[str, Any]:
    """What every Claude transport (anthropic, bedrock, vertex) builds its Messages body from."""
    from mcpworld.agent.tools.computer import image_size

    warn_legacy(s.model)
    from mcpworld.agent.providers.anthropic import INTERLEAVED_THINKING

    options = s.model.profile_options or {}
    if s.model.interleaved_thinking and not s.model.thinking_budget:
        raise UserError(
            f"model.interleaved_thinking=true needs extended thinking: set model.thinking_budget "
            f"(e.g. 2048) for model={s.model.name}, or drop model.interleaved_thinking"
        )
    betas = list(s.model.betas) + ([INTERLEAVED_THINKING] if s.model.interleaved_thinking else [])
    return dict(
        temperature=s.model.temperature,
        max_tokens=s.model.max_tokens,
        display_size=claude_display(s)
        if s.model.profile == "claude"
        else image_size((s.resolution.width, s.resolution.height), s.model.image_max),
        computer_tool=s.model.computer_tool,
        bash_tool=s.model.bash_tool,
        betas=betas,
        prompt_caching=s.provider.prompt_caching,
        thinking_budget=s.model.thinking_budget,
        enable_zoom=options.get("enable_zoom"),
    )


_WARNED: set[str] = set()


def warn_legacy(model: ModelConfig) -> None:
    """One line on stderr, once per model and process, when a legacy preset is used."""
    if model.legacy and model.name not in _WARNED:
        _WARNED.add(model.name)
        print(f"mcpworld: warning: model={model.name} is legacy: {model.legacy}", file=sys.stderr)


def claude_display(s: ProviderSettings) -> tuple[int, int]:
    """The display size the Claude profile sends screenshots at (its ``screen``), so the tool's
    display_width_px/height_px are the image the model sees."""
    from mcpworld.agent.profiles.claude import claude_image_size

    return claude_image_size((s.resolution.width, s.resolution.height), s.model.image_max)


# What a model id looks like on each cloud, to catch a preset that names only Anthropic's id.
CLOUD_ID = {"bedrock": ("anthropic.", "arn:"), "vertex": ("@",)}


def cloud_model_id(s: ProviderSettings) -> str:
    """The model's id on this cloud: ``model.ids.<kind>``, else ``model.id`` if it looks like one."""
    kind = str(s.provider.kind)
    chosen = (s.model.ids or {}).get(kind) or s.model.id
    if not any(mark in chosen for mark in CLOUD_ID[kind]):
        example = {"bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "vertex": "claude-sonnet-4-5@20250929"}[kind]
        raise UserError(
            f"model={s.model.name} has no {kind} id (model.id is {chosen!r}): set model.ids.{kind}=<id>, "
            f"e.g. model.ids.{kind}={example}"
        )
    return chosen


def _cloud_http(provider: ProviderConfig) -> dict[str, Any]:
    """http_options without requiring base_url: the cloud providers derive it from the region."""
    return {
        "base_url": (provider.base_url or "").rstrip("/"),
        "timeout_s": provider.timeout_s,
        "max_retries": provider.max_retries,
        "label": provider.name,
        "start_hint": provider.start_hint,
    }


@PROVIDERS.register("bedrock")
def _bedrock(s: ProviderSettings) -> Provider:
    from mcpworld.agent.providers.bedrock import BedrockProvider

    return BedrockProvider(model=cloud_model_id(s), region=s.provider.region, **_claude_options(s), **_cloud_http(s.provider))


@PROVIDERS.register("vertex")
def _vertex(s: ProviderSettings) -> Provider:
    from mcpworld.agent.providers.vertex import VertexProvider

    return VertexProvider(
        model=cloud_model_id(s),
        region=s.provider.region,
        project=s.provider.project,
        **_claude_options(s),
        **_cloud_http(s.provider),
    )


def make_provider(settings: ProviderSettings, solution: Solution | None = None) -> Provider:
    """The provider for one episode; ``solution`` goes to a kind that replays it, and to no other."""
    builder = PROVIDERS.get(settings.provider.kind)
    if isinstance(builder, ReplayBuilder):
        return builder.replay(settings, solution or [])
    return builder(settings)
