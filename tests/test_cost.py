"""What an episode cost: tokens at model.price (cache reads at cached_input, as the provider's usage
reports them over the wire) and measured energy at telemetry.kwh_price; an unpriced model has no cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpworld.agent.loop import AgentLoop, Limits
from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
from mcpworld.agent.tools.done import DoneTool
from mcpworld.config.schema import PriceConfig
from mcpworld.core.errors import UserError
from mcpworld.core.result import EpisodeResult, Status
from mcpworld.run.job import check_config, summarize
from mcpworld.telemetry.cost import energy_cost, price_episode, token_cost
from mcpworld.telemetry.trace import Trace
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.helpers.anthropic import make as anthropic
from tests.helpers.config import make

SONNET = PriceConfig(input=3.0, output=15.0, cached_input=0.3)  # USD per 1M tokens


async def run_loop(provider, tmp_path: Path) -> EpisodeResult:
    trace = Trace(tmp_path / "trace.jsonl")
    result = EpisodeResult(task_id="t", app="a")
    try:
        await AgentLoop(provider, {"done": DoneTool()}, Limits(5, 5, 30.0), trace, result).run("sys", "do it", None)
    finally:
        trace.close()
        await provider.aclose()
    return result


async def test_anthropic_cache_reads_are_counted_and_priced_apart(tmp_path):
    usage = {"input_tokens": 1000, "cache_creation_input_tokens": 500, "cache_read_input_tokens": 20_000, "output_tokens": 200}
    done = {"id": "toolu_1", "name": "done", "input": {"status": "DONE"}}
    with FakeAnthropicServer([{"tool_uses": [done], "usage": usage}]) as server:
        result = await run_loop(anthropic(server), tmp_path)
    assert (result.tokens_in, result.tokens_cached, result.tokens_out) == (21_500, 20_000, 200)
    price_episode(result, SONNET, None)
    # 1 500 plain input at $3, 20 000 cache reads at $0.30, 200 output at $15 (per 1M)
    assert result.cost_usd == pytest.approx((1500 * 3 + 20_000 * 0.3 + 200 * 15) / 1e6)
    assert result.numbers()["cost_usd"] == result.cost_usd and result.numbers()["tokens_cached"] == 20_000
    assert result.energy_cost_usd is None and "energy_cost_usd" not in result.numbers()


async def test_openai_cached_tokens_come_from_prompt_tokens_details(tmp_path):
    usage = {"prompt_tokens": 5000, "completion_tokens": 50, "prompt_tokens_details": {"cached_tokens": 4096}}
    with FakeOpenAIServer([{"tool_calls": [{"name": "done", "arguments": {"status": "DONE"}}], "usage": usage}]) as s:
        result = await run_loop(OpenAICompatProvider(base_url=s.base_url, model="fake-model"), tmp_path)
    assert (result.tokens_in, result.tokens_cached, result.tokens_out) == (5000, 4096, 50)


def test_without_cached_price_cache_reads_cost_as_input_and_an_unpriced_model_costs_nothing_known():
    assert token_cost(PriceConfig(input=2.0, output=8.0), 1_000_000, 0, 400_000) == pytest.approx(2.0)
    assert token_cost(PriceConfig(), 10**6, 10**6) is None  # no price: no number, never 0
    assert energy_cost(3.6e6, 0.25) == pytest.approx(0.25) and energy_cost(None, 0.25) is None
    result = EpisodeResult(task_id="t", app="a", tokens_in=100, gpu={"gpu.energy_j": 7.2e6, "cpu.energy_j": 3.6e6})
    price_episode(result, PriceConfig(), 0.10)
    assert result.cost_usd is None and result.energy_cost_usd == pytest.approx(0.30)  # GPU + CPU energy


def test_job_cost_totals_and_per_success():
    def episode(status: Status, cost: float | None) -> EpisodeResult:
        return EpisodeResult(task_id="t", app="a", status=status, cost_usd=cost, energy_cost_usd=cost and cost / 10)

    out = summarize([episode(Status.success, 0.02), episode(Status.failure, 0.04), episode(Status.success, 0.06)], 3)
    assert out["cost_usd_total"] == pytest.approx(0.12) and out["cost_usd"] == pytest.approx(0.04)
    assert out["cost_usd_per_success"] == pytest.approx(0.06)
    assert out["energy_cost_usd_total"] == pytest.approx(0.012)
    unpriced = summarize([episode(Status.success, None)], 1)
    assert not [k for k in unpriced if "cost" in k]
    assert "cost_usd_per_success" not in summarize([episode(Status.failure, 0.5)], 1)


def test_a_negative_or_half_given_price_is_refused_before_any_episode():
    with pytest.raises(UserError, match=r"model.price.input=-1.0 must be 0 or more"):
        check_config(make("model.price.input=-1", "model.price.output=1"))
    with pytest.raises(UserError, match=r"model.price.input is set but model.price.output is not"):
        check_config(make("model.price.input=3"))
    with pytest.raises(UserError, match=r"telemetry.kwh_price=-0.2"):
        check_config(make("telemetry.kwh_price=-0.2"))
    check_config(make("model.price.input=3", "model.price.output=15", "telemetry.kwh_price=0.3"))
