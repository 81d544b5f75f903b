"""A reply cut off by the output limit is counted, traced and told to the model as what it is: real
providers replaying recorded server streams (OpenAI ``finish_reason: length``, Anthropic
``stop_reason: max_tokens`` with a tool call's JSON cut mid-way) into the real loop."""

from __future__ import annotations

import json
from pathlib import Path

from mcpworld.agent.loop import NUDGE
from mcpworld.agent.providers.anthropic import AnthropicProvider
from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
from mcpworld.core.result import EpisodeResult
from mcpworld.run.job import summarize
from tests.fakes.replay_server import Recorded, ReplayServer
from tests.helpers.agent_loop import events, gui_tools, make_loop, run
from tests.helpers.environments import FakeDesktop

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "data" / "transcripts"


def recorded(name: str) -> Recorded:
    return Recorded((TRANSCRIPTS / name).read_bytes())


async def test_an_openai_length_stop_is_a_truncation_not_a_nudge(tmp_path: Path) -> None:
    with ReplayServer([recorded("openai_length.sse")]) as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="gpt-4o", max_retries=0)
        loop, result, trace = make_loop(tmp_path, provider, gui_tools(FakeDesktop(tmp_path)), max_llm_calls=2)
        await run(loop, trace)
        await provider.aclose()
    assert result.truncations == 2 and result.numbers()["truncations"] == 2
    assert result.hallucinations == 0 and result.termination == "max_llm_calls"
    (_, second) = server.requests
    told = second["messages"][-1]
    assert told["role"] == "user" and told["content"] != NUDGE
    assert "cut off" in told["content"] and "output token limit (1 tokens" in told["content"]
    cut = events(tmp_path, "truncation")
    assert [(e["finish_reason"], e["tokens_out"], e["cut_calls"]) for e in cut] == [("length", 1, [])] * 2
    assert cut[0]["text"] == '{"'


async def test_an_anthropic_max_tokens_stop_cutting_a_call_is_told_and_not_a_hallucination(tmp_path: Path) -> None:
    with ReplayServer([recorded("anthropic_max_tokens_partial_json.sse")]) as server:
        provider = AnthropicProvider(base_url=server.base_url, model="claude-3-7-sonnet-20250219", api_key="k", max_retries=0)
        loop, result, trace = make_loop(tmp_path, provider, gui_tools(FakeDesktop(tmp_path)), max_llm_calls=2)
        await run(loop, trace)
        await provider.aclose()
    assert result.truncations == 2 and result.hallucinations == 0 and result.steps == 2 and result.actions == 0
    assert "make_file" not in result.tool_calls and "unknown" not in result.tool_calls  # never dispatched
    assert events(tmp_path, "hallucination") == []
    (cut, _) = events(tmp_path, "truncation")
    assert cut["finish_reason"] == "max_tokens" and cut["cut_calls"] == ["make_file"] and cut["tokens_out"] == 124
    # the cut call is answered (the API requires a tool_result for every tool_use) with what happened
    answer = server.requests[1]["messages"][-1]["content"][0]
    assert answer["type"] == "tool_result" and answer["tool_use_id"] == "toolu_01EKqbqmZrGRXy18eN7m9kvY"
    assert "cut off" in json.dumps(answer["content"]) and "max_tokens" in json.dumps(answer["content"])


async def test_a_whole_call_after_which_the_limit_hit_is_run_and_not_counted(tmp_path: Path) -> None:
    body = (
        (TRANSCRIPTS / "openai_tool_call.sse").read_bytes().replace(b'"finish_reason":"tool_calls"', b'"finish_reason":"length"')
    )
    assert b'"finish_reason":"length"' in body
    with ReplayServer([Recorded(body)]) as server:
        provider = OpenAICompatProvider(base_url=server.base_url, model="gpt-4o", max_retries=0)
        loop, result, trace = make_loop(tmp_path, provider, gui_tools(FakeDesktop(tmp_path)), max_llm_calls=1)
        await run(loop, trace)
        await provider.aclose()
    assert result.truncations == 0 and events(tmp_path, "truncation") == []


def test_the_job_sums_truncations_and_old_results_read_as_none() -> None:
    results = [EpisodeResult(task_id="a", app="x", truncations=2), EpisodeResult(task_id="b", app="x", truncations=1)]
    assert summarize(results, 2)["truncations_total"] == 3.0
    old = {k: v for k, v in results[0].to_dict().items() if k != "truncations"}  # a result.json from before
    assert EpisodeResult.from_dict(old).truncations == 0
