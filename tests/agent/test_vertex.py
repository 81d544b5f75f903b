"""VertexProvider against a real local server speaking Claude-on-Vertex (SSE) and Google's token
endpoint: Application Default Credentials from a service-account file, refreshed over HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpworld.agent.providers import PROVIDERS, ProviderSettings, cloud_model_id
from mcpworld.agent.providers.vertex import VertexProvider, vertex_base_url
from mcpworld.core.errors import InfraError, UserError
from tests.fakes.vertex_server import FakeVertexServer, rsa_key_pair
from tests.helpers.anthropic import USER, Sleeps, tool_schemas, walk_blocks
from tests.helpers.config import make as compose

GOOGLE_VARS = (
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "GCLOUD_PROJECT",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "CLOUD_ML_REGION",
    "ANTHROPIC_VERTEX_BASE_URL",
)


@pytest.fixture(autouse=True)
def google_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No ADC but what a test gives: an empty gcloud folder, no metadata server."""
    for name in GOOGLE_VARS:
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "gcloud").mkdir()
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    return monkeypatch


@pytest.fixture
def server(google_env: pytest.MonkeyPatch, tmp_path: Path):
    with FakeVertexServer() as fake:
        google_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake.service_account_file(tmp_path)))
        yield fake


def make(server: FakeVertexServer, **kw: Any) -> VertexProvider:
    kw.setdefault("retry_base_s", 0.001)
    kw.setdefault("computer_tool", "computer_20250124")
    kw.setdefault("bash_tool", "bash_20250124")
    kw.setdefault("betas", ["computer-use-2025-01-24"])
    kw.setdefault("region", server.region)
    return VertexProvider(base_url=server.base_url, model=server.model, display_size=(1024, 768), **kw)


async def complete_all(server: FakeVertexServer, n: int = 1, tools=(), **kw: Any):
    provider = make(server, **kw)
    try:
        return [await provider.complete(list(USER), list(tools)) for _ in range(n)]
    finally:
        await provider.aclose()


async def test_tool_use_from_a_recorded_stream_with_vertex_body_and_bearer(server: FakeVertexServer, tmp_path: Path):
    server.script.append({"transcript": "anthropic_computer_use.sse"})
    (reply,) = await complete_all(server, tools=tool_schemas(tmp_path))
    assert server.rejected == []
    (call,) = reply.tool_calls
    assert (call.name, call.arguments) == ("computer", {"action": "left_click", "coordinate": [512, 384]})
    body, headers = server.requests[0], server.headers[0]
    assert body["anthropic_version"] == "vertex-2023-10-16" and "model" not in body and body["stream"] is True
    assert headers["authorization"] == f"Bearer {server.tokens[0]}" and "x-api-key" not in headers
    assert headers["anthropic-beta"] == "computer-use-2025-01-24" and "anthropic-version" not in headers
    assert any(t.get("type") == "computer_20250124" for t in body["tools"])


async def test_project_comes_from_the_credentials_when_not_configured(server: FakeVertexServer):
    provider = make(server)
    info = await provider.preflight()
    await provider.aclose()
    assert provider.project == "fake-project" and info.params["vertex.project"] == "fake-project"
    assert len(server.tokens) == 1  # preflight fetched a token: the credentials work


async def test_an_expired_token_is_refreshed_before_the_request(google_env: pytest.MonkeyPatch, tmp_path: Path):
    # google-auth treats a token as expired 3m45s before its end: a 60 s token is stale at once
    with FakeVertexServer(token_lifetime_s=60) as fake:
        google_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake.service_account_file(tmp_path)))
        replies = await complete_all(fake, n=3)
    assert [r.text for r in replies] == ["done"] * 3 and fake.rejected == []
    assert len(fake.tokens) == 3  # one fresh token per request
    assert fake.auth_seen == [f"Bearer {t}" for t in fake.tokens]


async def test_a_token_refused_by_the_server_is_refreshed_and_the_request_retried(server: FakeVertexServer):
    provider = make(server, sleep=Sleeps())
    try:
        await provider.complete(list(USER), [])
        server.expire(server.tokens[-1])  # revoked on Google's side before its expiry
        reply = await provider.complete(list(USER), [])
    finally:
        await provider.aclose()
    assert reply.text == "done" and len(server.tokens) == 2
    assert server.auth_seen == [f"Bearer {server.tokens[0]}"] * 2 + [f"Bearer {server.tokens[1]}"]
    assert server.rejected[0].startswith("401: Request had invalid authentication credentials")


async def test_overloaded_then_success_is_retried(server: FakeVertexServer):
    server.script.extend([{"status": 429}, {"overloaded": True}, {"text": "fine"}])
    (reply,) = await complete_all(server, sleep=Sleeps())
    assert reply.text == "fine" and len(server.requests) == 3


async def test_a_revoked_service_account_key_is_a_clear_error(google_env: pytest.MonkeyPatch, tmp_path: Path):
    with FakeVertexServer() as fake:
        other_key, _ = rsa_key_pair()
        google_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake.service_account_file(tmp_path, other_key)))
        provider = make(fake)
        with pytest.raises(InfraError) as info:
            await provider.preflight()
    message = str(info.value)
    assert "invalid_grant" in message and "Invalid JWT Signature" in message
    assert "gcloud auth application-default login" in message and "PRIVATE KEY" not in message
    assert fake.auth_seen == []


async def test_no_credentials_names_the_fix():
    provider = VertexProvider(model="claude-sonnet-4-5@20250929", region="us-east5", project="p")
    with pytest.raises(UserError, match=r"found no Google credentials.*gcloud auth application-default login"):
        await provider.preflight()


async def test_no_project_names_the_key(google_env: pytest.MonkeyPatch, tmp_path: Path):
    with FakeVertexServer() as fake:
        google_env.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(fake.service_account_file(tmp_path, project=False)))
        with pytest.raises(UserError, match=r"no Google Cloud project.*provider\.project="):
            await make(fake).preflight()


async def test_no_region_names_the_key():
    provider = VertexProvider(model="claude-sonnet-4-5@20250929", project="p")
    with pytest.raises(UserError, match=r"no region.*provider\.region="):
        await provider.preflight()


def test_endpoints_by_region():
    assert vertex_base_url("us-east5") == "https://us-east5-aiplatform.googleapis.com/v1"
    assert vertex_base_url("global") == "https://aiplatform.googleapis.com/v1"
    provider = VertexProvider(model="claude-sonnet-4-5@20250929", region="global", project="my-proj")
    assert f"{provider.base_url}/{provider.path()}" == (
        "https://aiplatform.googleapis.com/v1/projects/my-proj/locations/global/publishers/anthropic/models/"
        "claude-sonnet-4-5@20250929:streamRawPredict"
    )


def test_presets_name_their_vertex_id_and_the_builder_uses_it():
    cfg = compose("model=claude_3_7_sonnet", "provider=vertex", "provider.region=europe-west1", "provider.project=proj")
    settings = ProviderSettings.of(cfg)
    assert cloud_model_id(settings) == "claude-3-7-sonnet@20250219"
    provider = PROVIDERS.get("vertex")(settings)
    assert isinstance(provider, VertexProvider) and provider.project == "proj"
    assert provider.base_url == "https://europe-west1-aiplatform.googleapis.com/v1"
    with pytest.raises(UserError, match=r"model\.ids\.vertex="):
        cloud_model_id(ProviderSettings.of(compose("model=claude_3_7_sonnet", "provider=vertex", "~model.ids.vertex")))


@pytest.mark.desktop
@pytest.mark.slow
def test_provider_vertex_completes_an_episode_end_to_end(tmp_path: Path):
    from tests.helpers.cli import results, run_cli

    suite = tmp_path / "suite" / "notes" / "answer"
    suite.mkdir(parents=True)
    (suite / "task.yaml").write_text(
        "app: xterm\ninstruction: Write 42 into ~/out.txt\n"
        "setup: [{launch: {command: [xterm], window: xterm}}]\n"
        "evaluator:\n  func: exact_match\n"
        "  result: {type: content_from_vm_file, path: ~/out.txt, file_type: txt}\n"
        "  expected: {type: rule, rules: {expected: '42'}}\n"
    )
    script = [
        {"tool_uses": [{"name": "computer", "input": {"action": "type", "text": "echo 42 > ~/out.txt\n"}}]},
        {"tool_uses": [{"name": "computer", "input": {"action": "wait", "duration": 0.5}}]},
        {"tool_uses": [{"name": "done", "input": {"status": "DONE"}}]},
    ]
    (tmp_path / "gcloud").mkdir(exist_ok=True)
    with FakeVertexServer(script, token_lifetime_s=60) as server:
        env = {
            "GOOGLE_APPLICATION_CREDENTIALS": str(server.service_account_file(tmp_path)),
            "NO_GCE_CHECK": "true",
            "CLOUDSDK_CONFIG": str(tmp_path / "gcloud"),
        }
        proc = run_cli(
            tmp_path,
            "model=claude_sonnet_4_5",
            "provider=vertex",
            f"provider.base_url={server.base_url}",
            "provider.region=us-east5",
            f"tasks.root={tmp_path / 'suite'}",
            "tracking=none",
            env=env,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert server.rejected == [] and len(server.requests) == 3
    assert len(server.tokens) >= 3  # 60 s tokens: each request refreshed first
    assert any(b["type"] == "image" for m in server.requests[-1]["messages"] for b in walk_blocks(m["content"]))
    (result,) = results(tmp_path / "run")
    assert (result["status"], result["score"]) == ("success", 1.0)
    written = "".join(
        p.read_text(errors="replace")
        for p in (tmp_path / "run").rglob("*")
        if p.is_file() and p.suffix in {".json", ".jsonl", ".yaml", ".log", ".txt"}
    )
    assert not any(token in written for token in server.tokens)


@pytest.mark.slow
def test_provider_vertex_without_credentials_fails_before_any_desktop(tmp_path: Path):
    import os
    import subprocess

    (tmp_path / "gcloud").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in GOOGLE_VARS}
    env.update(CLOUDSDK_CONFIG=str(tmp_path / "gcloud"), NO_GCE_CHECK="true")
    cmd = [
        sys.executable,
        "-m",
        "mcpworld",
        "model=claude_sonnet_4_5",
        "provider=vertex",
        "provider.region=us-east5",
        "provider.project=p",
        "task=xterm/set_theme",
        "tracking=none",
        f"hydra.run.dir={tmp_path}/run",
    ]
    proc = subprocess.run(cmd, cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode != 0
    assert "found no Google credentials" in proc.stderr and "gcloud auth application-default login" in proc.stderr
    assert not list((tmp_path / "run").rglob("result.json"))
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == "FAILED" and "Google credentials" in summary["reason"]
