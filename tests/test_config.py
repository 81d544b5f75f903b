"""The Hydra config tree composed against the structured schema, and secret-free param flattening."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.errors import HydraException
from omegaconf import OmegaConf

from mcpworld.config.schema import ImageFormat, ToolFamily
from mcpworld.telemetry.tracking.keys import flatten
from tests.helpers.config import CONF, make


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OLLAMA_BASE_URL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "VLLM_BASE_URL",
        "LMSTUDIO_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


def test_defaults() -> None:
    cfg = make()
    assert cfg.provider.kind == "oracle" and cfg.provider.name == "oracle"
    assert cfg.model.name == "oracle" and cfg.model.coordinates == "pixels"
    assert (cfg.resolution.name, cfg.resolution.width, cfg.resolution.height) == ("square", 1000, 1000)
    assert cfg.modality.name == "gui" and list(cfg.modality.tools) == ["computer", "done"]
    assert cfg.tracking.backend == "mlflow" and cfg.tracking.experiment == "default"
    assert cfg.app.apps == [] and cfg.task is None
    assert cfg.agent.max_steps == 30 and cfg.agent.keep_screenshots == 3
    assert cfg.evaluator.success_threshold == 1.0
    # the whole config resolves (no dangling interpolations)
    OmegaConf.to_container(cfg, resolve=True)


def test_resolution_rect() -> None:
    cfg = make("resolution=rect")
    assert (cfg.resolution.name, cfg.resolution.width, cfg.resolution.height) == ("rect", 1024, 768)


@pytest.mark.parametrize(
    "name, size", [("square", (1000, 1000)), ("rect", (1024, 768)), ("wxga", (1280, 800)), ("fhd", (1920, 1080))]
)
def test_resolutions(name: str, size: tuple[int, int]) -> None:
    cfg = make(f"resolution={name}")
    assert (cfg.resolution.width, cfg.resolution.height) == size


MODELS = sorted(p.stem for p in (Path(CONF) / "model").glob("*.yaml"))


def test_every_seed_model_family_has_a_file() -> None:
    for name in (
        "qwen3vl_2b",
        "qwen3vl_4b",
        "qwen3vl_8b",
        "qwen3vl_32b",
        "qwen3vl_30b_a3b",
        "qwen3vl_235b_a22b",
        "gemma3_tools_12b",
        "gemma3_tools_27b",
        "llama4_scout",
        "ministral_8b",
        "devstral",
        "claude_3_5_sonnet",
        "claude_3_7_sonnet",
        "claude_sonnet_4_5",
    ):
        assert name in MODELS


@pytest.mark.parametrize("model", MODELS)
def test_every_model_composes_with_its_provider(model: str) -> None:
    from mcpworld.agent.providers import PROVIDERS
    from mcpworld.run.job import check_config

    cfg = make(f"model={model}")
    assert cfg.model.name == model and cfg.provider.kind in PROVIDERS
    # greedy, unless the family's reference agent decodes otherwise (Claude's: the API default, 1.0;
    # Qwen3-VL instruct's model card: 0.7)
    assert cfg.model.temperature == {"claude": 1.0, "qwen3vl": 0.7, "gemma": 1.0}.get(cfg.model.profile, 0.0) or model == "oracle"
    check_config(cfg)  # a valid coordinate convention
    if cfg.provider.kind == "anthropic":
        assert cfg.model.coordinates == "pixels" and cfg.model.computer_tool and cfg.model.betas
    if model.startswith("qwen3vl"):
        assert cfg.model.coordinates == "normalized_1000"
    OmegaConf.to_container(cfg, resolve=True)


@pytest.mark.parametrize(
    "provider, url",
    [
        ("vllm", "localhost:8000/v1"),
        ("lmstudio", "localhost:1234/v1"),
        ("openai", "api.openai.com/v1"),
        ("anthropic", "api.anthropic.com/v1"),
    ],
)
def test_provider_presets(provider: str, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    cfg = make(f"provider={provider}")
    assert url in cfg.provider.base_url
    assert cfg.provider.kind == ("anthropic" if provider == "anthropic" else "openai_compat")
    flat = flatten(OmegaConf.to_container(cfg, resolve=True))
    assert not any("secret" in v for v in flat.values())


def test_modality_cli() -> None:
    assert list(make("modality=cli").modality.tools) == ["bash", "done"]


def test_model_picks_its_provider() -> None:
    cfg = make("model=qwen3vl_32b")
    assert cfg.provider.name == "ollama" and cfg.provider.kind == "ollama"
    assert cfg.provider.pull is True and cfg.provider.unload_others is True
    assert "localhost:11434" in cfg.provider.base_url
    assert cfg.provider.api_key is None
    # the instruct tag (Ollama's bare qwen3-vl:32b is the thinking model)
    assert cfg.model.coordinates == "normalized_1000" and cfg.model.id == "qwen3-vl:32b-instruct"
    from mcpworld.agent.providers import ProviderSettings, make_provider

    hint = make_provider(ProviderSettings.of(cfg), []).start_hint
    assert "`ollama pull qwen3-vl:32b-instruct`" in hint  # the chosen model's id


def test_model_provider_can_be_overridden_on_the_command_line() -> None:
    cfg = make("model=qwen3vl_32b", "provider=openai_compat")
    assert cfg.provider.name == "openai_compat" and cfg.provider.kind == "openai_compat"
    assert cfg.model.name == "qwen3vl_32b" and cfg.model.coordinates == "normalized_1000"


def test_provider_env_var_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://gpu-box:11434/v1")
    assert make("model=qwen3vl_8b").provider.base_url == "http://gpu-box:11434/v1"


@pytest.mark.parametrize(
    "override, name",
    [
        ("resolutoin=square", "resolutoin"),
        ("agent.max_step=3", "agent.max_step"),
        ("agent.max_steps=abc", "agent.max_steps"),
        ("resolution=huge", "huge"),
    ],
)
def test_bad_overrides_name_the_key(override: str, name: str) -> None:
    with pytest.raises(HydraException) as info:
        make(override)
    assert name in str(info.value)


def test_tracking_none() -> None:
    assert make("tracking=none").tracking.backend == "none"


def test_experiment_demo() -> None:
    cfg = make("experiment=demo", hydra_cfg=True)
    assert cfg.tracking.experiment == "demo"
    assert cfg.provider.kind == "oracle" and cfg.model.name == "oracle"
    assert cfg.hydra.sweeper.params.resolution == "square,rect"
    assert str(cfg.hydra.mode) == "RunMode.MULTIRUN"


# --------------------------------------------------------------------------- flatten


def test_flatten_drops_secrets_at_any_depth_and_dots_the_rest() -> None:
    data = {
        "provider": {"name": "x", "api_key": "sk-1", "auth": {"token": "t", "Secret": "s", "url": "u"}},
        "api-key": "top",
        "password": "p",
        "Authorization": "Bearer x",
        "agent": {"max_steps": 3, "settle": {"idle_s": 0.3}},
        "tools": ["computer", "done"],
        "task": None,
    }
    flat = flatten(data)
    assert flat == {
        "provider.name": "x",
        "provider.auth.url": "u",
        "agent.max_steps": "3",
        "agent.settle.idle_s": "0.3",
        "tools": "['computer', 'done']",
        "task": "None",
    }
    assert not any(secret in v for v in flat.values() for secret in ("sk-1", "Bearer", "top"))


def test_flatten_of_a_composed_config_has_no_api_key() -> None:
    cfg = make("model=qwen3vl_32b", "provider=openai_compat")
    flat = flatten(OmegaConf.to_container(cfg, resolve=True))
    assert "provider.base_url" in flat and "model.coordinates" in flat
    assert not any("api_key" in key for key in flat)


def test_flatten_keeps_token_counts() -> None:
    assert flatten({"model": {"max_tokens": 2048}}) == {"model.max_tokens": "2048"}


@pytest.mark.parametrize("family", [str(f) for f in ToolFamily])
def test_every_tool_family_the_schema_accepts_builds(family: str) -> None:
    """A closed choice (a StrEnum, checked at composition) that the code can also build; the choices
    that name an implementation are their registries' own names (tests/extension/test_choices.py)."""
    from types import SimpleNamespace
    from typing import Any, cast

    from mcpworld.agent.tools import build_toolset
    from mcpworld.config.schema import AgentConfig

    env = cast(Any, SimpleNamespace(width=1000, height=1000))
    tools = build_toolset([ToolFamily(family)], env, "pixels", AgentConfig())
    assert "done" in tools and (family in ("done", "mcp") or len(tools) == 2)


@pytest.mark.parametrize("fmt", [str(f) for f in ImageFormat])
def test_every_image_format_the_schema_accepts_encodes(fmt: str) -> None:
    from PIL import Image

    from mcpworld.env.screen import encode

    magic = {"png": b"\x89PNG", "jpeg": b"\xff\xd8\xff"}[fmt]  # a format added without this fails here
    assert encode(Image.new("RGB", (8, 8)), ImageFormat(fmt)).startswith(magic)


@pytest.mark.parametrize(
    "override, choices",
    [
        ("model.coordinates=relative", "pixels, normalized_1000"),
        ("modality.tools=[computer,mouse]", "computer, bash, done, mcp"),
    ],
)
def test_a_choice_outside_the_schema_fails_at_composition_naming_key_and_choices(override: str, choices: str) -> None:
    from hydra.errors import ConfigCompositionException

    key = override.split("=")[0]
    with pytest.raises(ConfigCompositionException) as caught:
        make(override)
    text = f"{caught.value} {caught.value.__cause__}"
    assert f"expected one of [{choices}]" in text and key in text
