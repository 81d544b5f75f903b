"""Every provider's preflight, against local fakes speaking each server's own model API: the endpoint
answers, the model is served with the context the model config needs, the served identity becomes
``served.*`` params; otherwise one line naming the fix, before any desktop starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hydra import compose, initialize_config_dir

from mcpworld.agent.providers import ProviderSettings, make_provider
from mcpworld.agent.providers.base import ModelInfo
from mcpworld.config.schema import register
from mcpworld.core.errors import EndpointUnreachable, InfraError, UserError
from mcpworld.run.job import preflight as job_preflight
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.ollama_server import FakeOllamaServer, ps_entry, tag_entry
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.scripted_server import free_port

ROOT = Path(__file__).resolve().parents[2]
CONF = str(ROOT / "mcpworld" / "conf")
QWEN_235B = "Qwen/Qwen3-VL-235B-A22B-Instruct"  # model=qwen3vl_235b_a22b, served by vLLM
# the model files' ids and context lengths change with their profiles: the tests pin what they check
VLLM = ("model=qwen3vl_235b_a22b", f"model.id={QWEN_235B}", "model.context_length=32768")
QWEN8 = ("model=qwen3vl_8b", "model.id=qwen3-vl:8b", "model.context_length=32768")
SNAPSHOT = "/models/hub/models--Qwen--Qwen3-VL-235B-A22B-Instruct/snapshots/" + "a1" * 20

register()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OLLAMA_BASE_URL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "VLLM_BASE_URL",
        "VLLM_API_KEY",
        "LMSTUDIO_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)


def config(*overrides: str) -> Any:
    with initialize_config_dir(config_dir=CONF, version_base="1.3"):
        return compose("config", overrides=list(overrides))


async def check(*overrides: str) -> ModelInfo:
    """The preflight of the provider a run with these overrides builds."""
    provider = make_provider(ProviderSettings.of(config(*overrides)), [])
    try:
        return await provider.preflight()
    finally:
        await provider.aclose()


# ---------------------------------------------------------------------- vLLM / OpenAI-compatible


async def test_vllm_serving_the_model_records_who_it_is() -> None:
    with FakeOpenAIServer(model=QWEN_235B, flavour="vllm", max_model_len=65536, root=SNAPSHOT) as server:
        info = await check(*VLLM, f"provider.base_url={server.base_url}")
    assert info.params == {
        "served.id": QWEN_235B,
        "served.root": SNAPSHOT,
        "served.owned_by": "vllm",
        "served.max_model_len": "65536",
        "served.revision": "a1" * 20,
        "served.server_version": "0.11.0",
    }
    assert server.gets == ["/v1/models", "/version"] and server.requests == []  # no tokens spent


async def test_vllm_with_less_context_than_the_model_config_needs_names_both_and_the_fix() -> None:
    with FakeOpenAIServer(model=QWEN_235B, flavour="vllm", max_model_len=8192) as server, pytest.raises(UserError) as err:
        await check(*VLLM, f"provider.base_url={server.base_url}")
    msg = str(err.value)
    assert "8192-token context" in msg and "model.context_length=32768" in msg
    assert "`--max-model-len 32768`" in msg and "model.context_length=8192" in msg and "\n" not in msg


async def test_a_context_override_that_fits_passes() -> None:
    with FakeOpenAIServer(model=QWEN_235B, flavour="vllm", max_model_len=8192) as server:
        info = await check(*VLLM, "model.context_length=8192", f"provider.base_url={server.base_url}")
    assert info.params["served.max_model_len"] == "8192"


async def test_vllm_serving_another_model_names_the_serve_command() -> None:
    with (
        FakeOpenAIServer(model="meta-llama/Llama-3.1-8B-Instruct", flavour="vllm", max_model_len=131072) as server,
        pytest.raises(UserError) as err,
    ):
        await check(*VLLM, f"provider.base_url={server.base_url}")
    msg = str(err.value)
    assert f"does not serve {QWEN_235B} (it serves meta-llama/Llama-3.1-8B-Instruct)" in msg
    assert f"`vllm serve {QWEN_235B} --enable-auto-tool-choice --tool-call-parser hermes`" in msg


async def test_vllm_serving_it_under_another_name_says_which() -> None:
    with (
        FakeOpenAIServer(model=QWEN_235B, flavour="vllm", served_name="qwen", max_model_len=32768) as server,
        pytest.raises(UserError, match=r"under the name 'qwen': run with model.id=qwen\."),
    ):
        await check(*VLLM, f"provider.base_url={server.base_url}")


async def test_a_dead_vllm_endpoint_names_how_to_start_it() -> None:
    with pytest.raises(EndpointUnreachable, match=f"`vllm serve {QWEN_235B} "):
        await check(*VLLM, f"provider.base_url=http://127.0.0.1:{free_port()}/v1")


def test_the_jobs_preflight_makes_it_one_line_user_error() -> None:
    with pytest.raises(UserError) as err:
        job_preflight(config(*VLLM, f"provider.base_url=http://127.0.0.1:{free_port()}/v1"))
    assert "is unreachable" in str(err.value) and "vllm serve" in str(err.value) and "\n" not in str(err.value)


async def test_lmstudio_loaded_with_a_small_context_names_lms_load() -> None:
    with (
        FakeOpenAIServer(model="qwen3-vl:8b", flavour="lmstudio", loaded_context_length=4096) as server,
        pytest.raises(UserError) as err,
    ):
        await check(*QWEN8, "provider=lmstudio", f"provider.base_url={server.base_url}")
    assert "4096-token context" in str(err.value) and "`lms load qwen3-vl:8b --context-length 32768`" in str(err.value)


async def test_lmstudio_describes_the_model_from_its_own_api() -> None:
    with FakeOpenAIServer(model="qwen3-vl:8b", flavour="lmstudio", loaded_context_length=32768) as server:
        info = await check(*QWEN8, "provider=lmstudio", f"provider.base_url={server.base_url}")
    assert server.gets == ["/v1/models", "/api/v0/models/qwen3-vl%3A8b"]
    assert info.params == {
        "served.id": "qwen3-vl:8b",
        "served.owned_by": "organization_owner",
        "served.quantization": "Q4_K_M",
        "served.format": "gguf",
        "served.arch": "qwen3vl",
        "served.state": "loaded",
        "served.max_model_len": "32768",
        "served.trained_context_length": "262144",
    }


async def test_a_refused_key_names_the_variable_and_never_shows_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    with FakeOpenAIServer(model="gpt-4.1", models_status=401) as server, pytest.raises(InfraError) as err:
        await check("model=qwen3vl_8b", "model.id=gpt-4.1", "provider=openai", f"provider.base_url={server.base_url}")
    assert "HTTP 401" in str(err.value) and "OPENAI_API_KEY" in str(err.value) and "sk-secret" not in str(err.value)
    assert server.gets == ["/v1/models"]


async def test_a_server_without_a_model_listing_warns_and_goes_on(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(model="qwen3-vl:8b", models_status=404) as server:
        info = await check(*QWEN8, "provider=openai_compat", f"provider.base_url={server.base_url}")
    assert info.params == {"served.id": "qwen3-vl:8b"}
    assert "lists no models" in capsys.readouterr().err


# ---------------------------------------------------------------------- Ollama


async def test_ollama_serving_less_context_than_needed_is_an_error() -> None:
    tag = tag_entry("qwen3-vl:8b")
    with FakeOllamaServer([tag], context_length=4096) as server, pytest.raises(UserError) as err:
        await check(*QWEN8, f"provider.base_url={server.base_url}")
    msg = str(err.value)
    assert "4096-token context" in msg and "model.context_length=32768" in msg
    assert "OLLAMA_CONTEXT_LENGTH=32768 ollama serve" in msg and "PARAMETER num_ctx 32768" in msg


async def test_ollama_context_from_the_modelfile_when_the_runner_does_not_say() -> None:
    with (
        FakeOllamaServer([tag_entry("qwen3-vl:8b")], num_ctx=8192) as server,
        pytest.raises(UserError, match="8192-token context"),
    ):
        await check(*QWEN8, f"provider.base_url={server.base_url}")
    with FakeOllamaServer([tag_entry("qwen3-vl:8b", digest="sha256:" + "9f" * 32)], num_ctx=32768) as server:
        info = await check(*QWEN8, f"provider.base_url={server.base_url}")
    assert {k: v for k, v in info.params.items() if k.startswith("served.")} == {
        "served.id": "qwen3-vl:8b",
        "served.revision": "sha256:" + "9f" * 32,
        "served.quantization": "Q4_K_M",
        "served.max_model_len": "32768",
        "served.trained_context_length": "262144",
    }


async def test_ollama_runner_context_wins_over_the_modelfile() -> None:
    loaded = [ps_entry("qwen3-vl:8b", context_length=65536)]
    with FakeOllamaServer([tag_entry("qwen3-vl:8b")], loaded=loaded, num_ctx=2048, context_length=65536) as server:
        info = await check(*QWEN8, f"provider.base_url={server.base_url}")
    assert info.params["served.max_model_len"] == "65536"


# ---------------------------------------------------------------------- Anthropic


async def test_anthropic_without_a_key_says_which_variable_and_sends_nothing() -> None:
    with (
        FakeAnthropicServer(model="claude-3-7-sonnet-20250219") as server,
        pytest.raises(UserError, match="export ANTHROPIC_API_KEY="),
    ):
        await check("model=claude_3_7_sonnet", f"provider.base_url={server.base_url}")
    assert server.gets == []


async def test_anthropic_model_lookup_records_the_served_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    with FakeAnthropicServer(model="claude-3-7-sonnet-20250219", api_key="sk-ant-secret") as server:
        info = await check("model=claude_3_7_sonnet", f"provider.base_url={server.base_url}")
    ((path, headers),) = server.gets
    assert path == "/v1/models/claude-3-7-sonnet-20250219" and headers["anthropic-version"] == "2023-06-01"
    assert info.params == {
        "served.id": "claude-3-7-sonnet-20250219",
        "served.display_name": "Claude Fake",
        "served.created_at": "2025-02-19T00:00:00Z",
        "served.max_model_len": "200000",
        "served.max_output_tokens": "64000",
    }
    assert server.requests == []  # no message, no tokens


async def test_anthropic_wrong_key_or_unknown_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    with (
        FakeAnthropicServer(model="claude-3-7-sonnet-20250219", api_key="sk-ant-right") as server,
        pytest.raises(InfraError) as err,
    ):
        await check("model=claude_3_7_sonnet", f"provider.base_url={server.base_url}")
    assert "HTTP 401: invalid x-api-key" in str(err.value) and "ANTHROPIC_API_KEY" in str(err.value)
    assert "sk-ant-wrong" not in str(err.value)
    with (
        FakeAnthropicServer(model="claude-sonnet-4-5-20250929") as server,
        pytest.raises(UserError, match=r"has no model claude-3-7-sonnet-20250219 .*check model\.id"),
    ):
        await check("model=claude_3_7_sonnet", f"provider.base_url={server.base_url}")


# ---------------------------------------------------------------------- the real CLI


def test_the_cli_with_a_dead_vllm_fails_before_any_desktop_naming_the_fix(tmp_path: Path) -> None:
    port = free_port()
    # a task that needs no program, and env.network=host (the fence needs root and iptables): what this
    # machine has installed must not stop the run before the endpoint check this test is about
    task = tmp_path / "suite" / "mousepad" / "t" / "task.yaml"
    task.parent.mkdir(parents=True)
    task.write_text("app: mousepad\ninstruction: Do it.\nevaluator: {func: infeasible}\n")
    cmd = [
        sys.executable,
        "-m",
        "mcpworld",
        *VLLM,
        f"provider.base_url=http://127.0.0.1:{port}/v1",
        f"tasks.root={tmp_path}/suite",
        "env.network=host",
        "tracking=none",
        f"hydra.run.dir={tmp_path}/run",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("VLLM_BASE_URL", "VLLM_API_KEY")}
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mcpworld: error:")]
    assert len(errors) == 1, proc.stderr[-2000:]
    assert f"vllm endpoint http://127.0.0.1:{port}/v1 is unreachable" in errors[0]
    assert f"`vllm serve {QWEN_235B} --enable-auto-tool-choice --tool-call-parser hermes`" in errors[0]
    assert "Traceback" not in proc.stderr
    run = tmp_path / "run"
    assert not (run / "episodes").exists() and "episode(s) of" not in proc.stdout  # no desktop, no episode
    summary = json.loads((run / "summary.json").read_text())
    assert summary["status"] == "FAILED" and "vllm serve" in summary["reason"] and summary["episodes"] == 0
