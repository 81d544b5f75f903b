"""OllamaProvider's preflight (pull, unload, load, describe) and chat, against a real local fake Ollama."""

from __future__ import annotations

import pytest

from mcpworld.agent.providers.ollama import OllamaProvider, full_tag
from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
from mcpworld.core.errors import EndpointUnreachable, InfraError, UserError
from tests.fakes.ollama_server import FakeOllamaServer, ps_entry, tag_entry
from tests.fakes.scripted_server import free_port

TAG = "qwen3-vl:32b"
DIGEST = "sha256:" + "cd" * 32


def make(server: FakeOllamaServer | str, **kw) -> OllamaProvider:
    base_url = server if isinstance(server, str) else server.base_url
    kw.setdefault("model", TAG)
    kw.setdefault("retry_base_s", 0.001)
    return OllamaProvider(base_url=base_url, label="ollama", **kw)


async def preflight(server: FakeOllamaServer | str, **kw):
    provider = make(server, **kw)
    try:
        return await provider.preflight()
    finally:
        await provider.aclose()


def generate_calls(server: FakeOllamaServer) -> list[dict]:
    return server.bodies("/api/generate")


async def test_present_model_is_loaded_and_described_without_pull():
    models = [tag_entry(TAG, digest=DIGEST, quantization="Q4_K_M", parameter_size="33.4B")]
    with FakeOllamaServer(models, context_length=32768) as server:
        info = await preflight(server, context_length=32768)
    assert "/api/pull" not in server.paths()
    ours = {k: v for k, v in info.params.items() if k.startswith("ollama.")}  # served.*: test_preflight.py
    assert ours == {
        "ollama.digest": DIGEST,
        "ollama.quantization": "Q4_K_M",
        "ollama.parameter_size": "33.4B",
        "ollama.family": "qwen3vl",
        "ollama.format": "gguf",
    }
    assert info.metrics["ollama.vram_bytes"] == 24_000_000_000
    assert info.metrics["ollama.context_length"] == 32768
    assert info.metrics["ollama.size_bytes"] > 0
    assert generate_calls(server) == [{"model": TAG, "keep_alive": "30m"}]
    assert [m["name"] for m in server.loaded] == [TAG]


async def test_missing_model_is_pulled_with_progress_then_loaded():
    with FakeOllamaServer([tag_entry("other:7b")]) as server:
        info = await preflight(server, pull=True)
    assert server.paths() == ["/api/tags", "/api/pull", "/api/tags", "/api/ps", "/api/generate", "/api/ps", "/api/show"]
    assert server.bodies("/api/pull") == [{"model": TAG, "stream": True}]
    assert any(t["name"] == TAG for t in server.tags)
    assert info.params["ollama.digest"].startswith("sha256:")
    assert "ollama.vram_bytes" in info.metrics


async def test_missing_model_without_pull_names_the_command():
    with FakeOllamaServer([tag_entry("other:7b")]) as server, pytest.raises(UserError) as err:
        await preflight(server, pull=False)
    assert "ollama pull qwen3-vl:32b" in str(err.value)
    assert "provider.pull=true" in str(err.value) and server.url in str(err.value)
    assert "/api/pull" not in server.paths() and "/api/generate" not in server.paths()


async def test_pull_error_line_is_a_user_error_with_the_servers_message():
    script = [{"status": "pulling manifest"}, {"error": "pull model manifest: file does not exist"}]
    with FakeOllamaServer([], pull_script=script) as server, pytest.raises(UserError, match="file does not exist"):
        await preflight(server)
    assert server.tags == [] and "/api/generate" not in server.paths()


async def test_pull_http_error_is_infra_error_with_the_servers_message():
    server = FakeOllamaServer([], pull_script=[{"status": 500, "error": "disk full"}])
    with server, pytest.raises(InfraError, match="disk full"):
        await preflight(server)


async def test_other_loaded_models_are_unloaded_and_ours_loaded():
    loaded = [ps_entry("llama3.2:3b"), ps_entry("gemma3:latest")]
    models = [tag_entry(TAG), tag_entry("llama3.2:3b"), tag_entry("gemma3:latest")]
    with FakeOllamaServer(models, loaded=loaded) as server:
        await preflight(server, unload_others=True)
    assert generate_calls(server) == [
        {"model": "llama3.2:3b", "keep_alive": 0},
        {"model": "gemma3:latest", "keep_alive": 0},
        {"model": TAG, "keep_alive": "30m"},
    ]
    assert [m["name"] for m in server.loaded] == [TAG]


async def test_ours_already_loaded_is_not_unloaded():
    with FakeOllamaServer([tag_entry(TAG)], loaded=[ps_entry(TAG)]) as server:
        await preflight(server)
    assert generate_calls(server) == [{"model": TAG, "keep_alive": "30m"}]


async def test_unload_others_false_leaves_them_loaded():
    loaded = [ps_entry("llama3.2:3b")]
    with FakeOllamaServer([tag_entry(TAG), tag_entry("llama3.2:3b")], loaded=loaded) as server:
        await preflight(server, unload_others=False)
    assert generate_calls(server) == [{"model": TAG, "keep_alive": "30m"}]
    assert sorted(m["name"] for m in server.loaded) == ["llama3.2:3b", TAG]


# a served context smaller than model.context_length is an error: tests/agent/test_preflight.py


async def test_enough_context_or_none_reported_is_silent(capsys):
    with FakeOllamaServer([tag_entry(TAG)], context_length=None) as server:
        info = await preflight(server, context_length=32768)
    assert capsys.readouterr().err == ""
    assert "ollama.context_length" not in info.metrics


async def test_untagged_name_means_latest():
    with FakeOllamaServer([tag_entry("llava:latest")]) as server:
        info = await preflight(server, model="llava", pull=False)
    assert info.params["ollama.digest"]
    assert full_tag("llava") == "llava:latest" and full_tag("localhost:5000/ns/llava") == "localhost:5000/ns/llava:latest"


async def test_unreachable_endpoint_raises_with_hint():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EndpointUnreachable) as err:
        await preflight(url, start_hint="Start it with `ollama serve`.")
    assert "is unreachable" in str(err.value) and "Start it with `ollama serve`." in str(err.value)


async def test_native_http_error_is_infra_error_and_key_is_scrubbed():
    with FakeOllamaServer([tag_entry(TAG)]) as server:
        # a load failure whose message echoes the key (proxies sometimes do)
        server._generate = lambda body: (500, {"error": "model requires more system memory; key sk-secret"})
        with pytest.raises(InfraError) as err:
            await preflight(server, api_key="sk-secret")
    message = str(err.value)
    assert "requires more system memory" in message and "/api/generate" in message
    assert "sk-secret" not in message and "***" in message


async def test_generate_of_unknown_model_is_ollamas_404():
    with FakeOllamaServer([]) as server:
        provider = make(server)
        try:
            with pytest.raises(InfraError, match="model 'nope:1b' not found"):
                await provider._request("POST", "/api/generate", {"model": "nope:1b"})
        finally:
            await provider.aclose()


async def test_chat_goes_through_openai_compat_on_the_same_server():
    with FakeOllamaServer([tag_entry(TAG)], chat_script=[{"text": "Hello from Ollama"}]) as server:
        provider = make(server)
        try:
            await provider.preflight()
            reply = await provider.complete([{"role": "user", "content": "hi"}], [])
        finally:
            await provider.aclose()
    assert isinstance(provider, OpenAICompatProvider)
    assert reply.text == "Hello from Ollama"
    assert server.requests[0]["model"] == TAG
    assert server.paths("POST")[-1] == "/v1/chat/completions"
