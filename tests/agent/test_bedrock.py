"""BedrockProvider against a real local server speaking Bedrock's wire format: SigV4 checked down to
the signature, replies framed as AWS event-stream messages that botocore's own parser reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer
from botocore.session import Session

from mcpworld.agent.loop import AgentLoop, Limits
from mcpworld.agent.providers import PROVIDERS, ProviderSettings, cloud_model_id
from mcpworld.agent.providers.bedrock import BedrockProvider
from mcpworld.agent.tools.bash import BashTool
from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap
from mcpworld.agent.tools.done import DoneTool
from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.result import EpisodeResult
from mcpworld.telemetry.trace import Trace
from tests.fakes.bedrock_server import FakeBedrockServer, chunk_message, frames
from tests.helpers.anthropic import USER, Sleeps, tool_schemas, walk_blocks
from tests.helpers.config import make as compose
from tests.helpers.environments import FakeDesktop

KEY_ID, SECRET = "AKIDFAKEBEDROCK0001", "fake-secret-key-for-tests-only"
AWS_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
)


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """Only what a test gives: no profile files, no instance metadata, the fake's key in the environment."""
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    return monkeypatch


def make(server: FakeBedrockServer, **kw: Any) -> BedrockProvider:
    kw.setdefault("retry_base_s", 0.001)
    kw.setdefault("computer_tool", "computer_20250124")
    kw.setdefault("bash_tool", "bash_20250124")
    kw.setdefault("betas", ["computer-use-2025-01-24"])
    kw.setdefault("region", server.region)
    return BedrockProvider(base_url=server.base_url, model=server.model, display_size=(1024, 768), **kw)


async def complete(server: FakeBedrockServer, messages=USER, tools=(), **kw: Any):
    provider = make(server, **kw)
    try:
        return await provider.complete(list(messages), list(tools))
    finally:
        await provider.aclose()


# ----------------------------------------------------------------------------- wire format


async def test_tool_use_from_a_recorded_stream_with_bedrocks_body_path_and_signature(tmp_path: Path):
    with FakeBedrockServer([{"transcript": "anthropic_computer_use.sse"}]) as server:
        reply = await complete(server, tools=tool_schemas(tmp_path), temperature=0.2)
    assert server.rejected == []  # the fake recomputed the SigV4 signature and it matched
    (call,) = reply.tool_calls
    assert (call.name, call.arguments) == ("computer", {"action": "left_click", "coordinate": [512, 384]})
    assert reply.finish_reason == "tool_use" and not reply.usage.estimated and reply.usage.input_tokens > 0
    (path,) = server.paths
    assert path == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream"
    body, headers = server.requests[0], server.headers[0]
    assert body["anthropic_version"] == "bedrock-2023-05-31" and "model" not in body and "stream" not in body
    assert body["anthropic_beta"] == ["computer-use-2025-01-24"] and body["temperature"] == 0.2
    assert {"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 768} in body["tools"]
    assert headers["authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={KEY_ID}/")
    assert "/us-east-1/bedrock/aws4_request" in headers["authorization"]
    assert headers["accept"] == "application/vnd.amazon.eventstream" and "x-api-key" not in headers
    assert SECRET not in json.dumps(headers)


async def test_temporary_credentials_send_and_sign_the_session_token(aws_env: pytest.MonkeyPatch):
    aws_env.setenv("AWS_SESSION_TOKEN", "FwoGZXIvYXdzEFAKE-session-token")
    with FakeBedrockServer([{"text": "ok"}]) as server:
        reply = await complete(server)
    assert reply.text == "ok" and server.rejected == []
    assert server.headers[0]["x-amz-security-token"] == "FwoGZXIvYXdzEFAKE-session-token"
    assert "x-amz-security-token" in server.headers[0]["authorization"]  # a signed header


def test_the_fakes_frames_are_real_event_stream_messages():
    """botocore's parser (prelude and message CRCs) reads the fake's bytes; one flipped bit fails it."""
    data = b"".join(frames({"messages": []}, {"transcript": "anthropic_text.sse"}, "m"))
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    messages = list(buffer)
    assert {m.headers[":event-type"] for m in messages} == {"chunk"}
    assert json.loads(messages[-1].payload)["bytes"]
    damaged = bytearray(chunk_message({"type": "ping"}))
    damaged[-10] ^= 1
    buffer = EventStreamBuffer()
    buffer.add_data(bytes(damaged))
    with pytest.raises(ChecksumMismatch):
        list(buffer)


# ----------------------------------------------------------------------------- retries and errors


async def test_throttling_exception_mid_stream_is_retried():
    sleeps = Sleeps()
    script = [
        {"text": "Half an answer that", "exception": "throttlingException", "exception_after": 3},
        {"transcript": "anthropic_tool_use.sse"},
    ]
    with FakeBedrockServer(script) as server:
        reply = await complete(server, sleep=sleeps)
    assert len(server.requests) == 2 and len(sleeps) == 1
    assert [c.name for c in reply.tool_calls] == ["get_weather"] and "Half" not in reply.text


async def test_exceptions_until_the_budget_is_spent_name_the_exception():
    script = [{"exception": "modelStreamErrorException", "error": "Model stream failed"}] * 3
    with FakeBedrockServer(script) as server, pytest.raises(InfraError, match="modelStreamErrorException: Model stream failed"):
        await complete(server, max_retries=2, sleep=Sleeps())
    assert len(server.requests) == 3


async def test_validation_exception_event_is_not_retried():
    with (
        FakeBedrockServer([{"exception": "validationException", "error": "prompt is too long"}]) as server,
        pytest.raises(InfraError, match="validationException: prompt is too long"),
    ):
        await complete(server, sleep=Sleeps())
    assert len(server.requests) == 1


async def test_http_throttling_is_retried():
    with FakeBedrockServer([{"status": 429}, {"text": "fine"}]) as server:
        reply = await complete(server, sleep=Sleeps())
    assert reply.text == "fine" and len(server.requests) == 2


async def test_a_wrong_secret_is_one_clear_error_without_the_secret(aws_env: pytest.MonkeyPatch):
    aws_env.setenv("AWS_SECRET_ACCESS_KEY", "not-the-right-secret-key")
    with FakeBedrockServer([{"text": "never"}]) as server, pytest.raises(InfraError) as info:
        await complete(server, sleep=Sleeps())
    message = str(info.value)
    assert "HTTP 403" in message and "InvalidSignatureException" in message and "signature we calculated" in message
    assert "AWS_PROFILE" in message and "not-the-right-secret-key" not in message
    assert len(server.paths) == 1  # a credentials problem is not retried


async def test_an_unknown_access_key_is_named(aws_env: pytest.MonkeyPatch):
    aws_env.setenv("AWS_ACCESS_KEY_ID", "AKIDUNKNOWN00000000")
    with FakeBedrockServer() as server, pytest.raises(InfraError, match="UnrecognizedClientException"):
        await complete(server)


async def test_preflight_without_credentials_names_the_fix(aws_env: pytest.MonkeyPatch):
    aws_env.delenv("AWS_ACCESS_KEY_ID")
    aws_env.delenv("AWS_SECRET_ACCESS_KEY")
    provider = BedrockProvider(model="anthropic.claude-x-v1:0", region="us-east-1", session=Session())
    with pytest.raises(UserError, match=r"found no AWS credentials.*AWS_PROFILE"):
        await provider.preflight()


async def test_preflight_without_region_names_the_key():
    provider = BedrockProvider(model="anthropic.claude-x-v1:0", session=Session())
    assert provider.base_url == ""
    with pytest.raises(UserError, match=r"no AWS region.*provider\.region="):
        await provider.preflight()


async def test_region_from_the_aws_config_gives_the_endpoint(aws_env: pytest.MonkeyPatch):
    aws_env.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    provider = BedrockProvider(model="anthropic.claude-x-v1:0", session=Session())
    info = await provider.preflight()
    assert provider.base_url == "https://bedrock-runtime.eu-central-1.amazonaws.com"
    assert info.params == {"bedrock.region": "eu-central-1", "bedrock.model_id": "anthropic.claude-x-v1:0"}


# ----------------------------------------------------------------------------- config and loop


def test_presets_name_their_bedrock_id_and_the_builder_uses_it():
    cfg = compose("model=claude_sonnet_4_5", "provider=bedrock", "provider.region=us-west-2")
    settings = ProviderSettings.of(cfg)
    assert cloud_model_id(settings) == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    provider = PROVIDERS.get("bedrock")(settings)
    assert isinstance(provider, BedrockProvider) and provider.region == "us-west-2"
    assert provider.base_url == "https://bedrock-runtime.us-west-2.amazonaws.com"
    assert provider.betas == ["computer-use-2025-01-24"] and provider.computer_tool == "computer_20250124"
    for name in ("claude_3_5_sonnet", "claude_3_7_sonnet"):
        assert "anthropic.claude" in cloud_model_id(ProviderSettings.of(compose(f"model={name}", "provider=bedrock")))


def test_a_model_without_a_bedrock_id_is_a_clear_error():
    cfg = compose("model=claude_sonnet_4_5", "provider=bedrock", "~model.ids.bedrock")
    with pytest.raises(UserError, match=r"model=claude_sonnet_4_5 has no bedrock id.*model\.ids\.bedrock="):
        cloud_model_id(ProviderSettings.of(cfg))


async def test_full_loop_episode_through_bedrock(tmp_path: Path):
    """The loop's real history (tool results, screenshots) passes Bedrock's and Messages' checks every turn."""
    desk = FakeDesktop(tmp_path, 1024, 768)
    tools = {"computer": ComputerTool(desk, CoordinateMap("pixels", (1024, 768))), "bash": BashTool(desk), "done": DoneTool()}
    script = [
        {
            "text": "Clicking.",
            "tool_uses": [
                {"id": "toolu_1", "name": "computer", "input": {"action": "left_click", "coordinate": [10, 20]}},
                {"id": "toolu_2", "name": "bash", "input": {"command": "echo hi"}},
            ],
        },
        {"exception": "throttlingException"},
        {"tool_uses": [{"id": "toolu_3", "name": "computer", "input": {"action": "screenshot"}}]},
        {"tool_uses": [{"id": "toolu_4", "name": "done", "input": {"status": "DONE"}}]},
    ]
    trace = Trace(tmp_path / "trace.jsonl")
    result = EpisodeResult(task_id="app/task", app="app")
    with FakeBedrockServer(script) as server:
        provider = make(server, sleep=Sleeps())
        loop = AgentLoop(provider, tools, Limits(10, 10, 30.0, keep_screenshots=2), trace, result)
        try:
            await loop.run("You operate a desktop.", "Do the task.", desk.screenshot())
        finally:
            trace.close()
            await provider.aclose()
    assert result.termination == "done", result.reason
    assert result.llm_calls == 3 and len(server.requests) == 4 and server.rejected == []
    assert desk.actions[0]["kind"] == "click" and desk.shell_calls == ["echo hi"]
    last = server.requests[-1]["messages"]
    assert sum(b["type"] == "image" for m in last for b in walk_blocks(m["content"])) == 2


# ----------------------------------------------------------------------------- end to end


@pytest.mark.desktop
@pytest.mark.slow
def test_provider_bedrock_completes_an_episode_end_to_end(tmp_path: Path):
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
        {"exception": "throttlingException"},
        {"tool_uses": [{"name": "computer", "input": {"action": "wait", "duration": 0.5}}]},
        {"tool_uses": [{"name": "done", "input": {"status": "DONE"}}]},
    ]
    with FakeBedrockServer(script, region="eu-west-1") as server:
        proc = run_cli(
            tmp_path,
            "model=claude_sonnet_4_5",
            "provider=bedrock",
            f"provider.base_url={server.base_url}",
            "provider.region=eu-west-1",
            f"tasks.root={tmp_path / 'suite'}",
            "tracking=none",
            env={"AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_EC2_METADATA_DISABLED": "true"},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
    assert server.rejected == [] and len(server.requests) == 4
    assert any(b["type"] == "image" for m in server.requests[-1]["messages"] for b in walk_blocks(m["content"]))
    (result,) = results(tmp_path / "run")
    assert (result["status"], result["score"]) == ("success", 1.0)
    written = "".join(
        p.read_text(errors="replace")
        for p in (tmp_path / "run").rglob("*")
        if p.is_file() and p.suffix in {".json", ".jsonl", ".yaml", ".log", ".txt"}
    )
    assert SECRET not in written


@pytest.mark.slow
def test_provider_bedrock_without_credentials_fails_before_any_desktop(tmp_path: Path):
    proc_env = {
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ACCESS_KEY_ID": "",
        "AWS_SECRET_ACCESS_KEY": "",
    }
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update({k: v for k, v in proc_env.items() if v})
    cmd = [
        sys.executable,
        "-m",
        "mcpworld",
        "model=claude_sonnet_4_5",
        "provider=bedrock",
        "provider.region=us-east-1",
        "task=xterm/set_theme",
        "tracking=none",
        f"hydra.run.dir={tmp_path}/run",
    ]
    proc = subprocess.run(cmd, cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode != 0
    assert "found no AWS credentials" in proc.stderr and "AWS_PROFILE" in proc.stderr
    assert not list((tmp_path / "run").rglob("result.json"))  # no episode ran
