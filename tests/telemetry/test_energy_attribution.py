"""Sharing the job's energy between LLM calls and episodes that overlap: the rule itself, a scripted
two-episode job on a fake NVML with an idle baseline (every figure worked out by hand), and a real
``concurrency=2`` run through the episode pool and the metered provider."""

from __future__ import annotations

import asyncio
import itertools
import random
import threading
import time
from typing import Any

import pytest

from mcpworld.agent.providers.base import Provider, Reply, Usage
from mcpworld.core.result import EpisodeResult, Status
from mcpworld.run.interrupt import StopSignal
from mcpworld.run.metering import MeteredProvider, metered
from mcpworld.run.pool import EpisodePool
from mcpworld.telemetry.energy.attribution import Interval, attribute
from mcpworld.telemetry.energy.meter import EnergyMeter, current_episode
from mcpworld.telemetry.energy.totals import energy_totals
from mcpworld.telemetry.gpu import NvmlBackend
from tests.fakes.nvml import FakeGpu, FakeNvml


def test_the_rule_splits_calls_equally_then_rest_then_outside():
    calls = [Interval(1, 10, 0.0, 2.0), Interval(2, 20, 1.0, 3.0)]
    episodes = [Interval(10, 10, 0.0, 4.0), Interval(20, 20, 0.0, 4.0)]
    shares = attribute(0.0, 5.0, [0.5, 2.5], lambda t: 10.0 * t, calls, episodes)  # 10 W
    assert shares.call_j == pytest.approx({1: 10 + 5, 2: 5 + 10})
    assert shares.call_s == pytest.approx({1: 1.5, 2: 1.5})
    assert shares.rest_j == pytest.approx({10: 5, 20: 5}) and shares.rest_s == pytest.approx({10: 0.5, 20: 0.5})
    assert shares.outside_j == pytest.approx(10) and shares.outside_s == pytest.approx(1)
    assert shares.total_j == pytest.approx(50)


def test_an_open_call_is_active_up_to_the_window_end():
    calls = [Interval(1, 10, 1.0), Interval(2, 10, 0.0, 2.0)]  # call 1 has not ended
    shares = attribute(0.0, 3.0, [], lambda t: 6.0 * t, calls, [Interval(10, 10, 0.0)])
    assert shares.call_j == pytest.approx({2: 6 + 3, 1: 3 + 6})


# -- a scripted job on the fake clock -----------------------------------------------------------------


def test_two_overlapping_episodes_share_and_add_up_to_the_job(monkeypatch):
    nvml = FakeNvml(n=1).install(monkeypatch)
    meter = EnergyMeter({"gpu": NvmlBackend(clock=nvml.clock)}, clock=nvml.clock)
    gpu = nvml.gpus[0]
    open_calls: dict[str, Any] = {}
    eps: dict[str, Any] = {}
    results = {"A": EpisodeResult("a", "x", tokens_out=500), "B": EpisodeResult("b", "x", tokens_out=2000)}

    def call(name: str, episode: str) -> None:
        cm = eps[episode].call()
        cm.__enter__()
        open_calls[name] = cm

    script = {
        0: [("start", "A")],
        1: [("call", "A1", "A"), ("start", "B")],
        2: [("call", "B1", "B")],
        4: [("end", "A1")],
        7: [("call", "A2", "A")],
        9: [("end", "A2")],
        10: [("finish", "A")],
        11: [("end", "B1")],
        12: [("finish", "B")],
    }
    for t in range(-5, 14):
        nvml.now = float(t)
        if t > -5:
            gpu.energy_mj += 40_000 if t <= 0 else 100_000  # 40 W idle, then 100 W
        meter.sample_once()
        for step in script.get(t, []):
            if step[0] == "start":
                eps[step[1]] = meter.episode()
            elif step[0] == "call":
                call(step[1], step[2])
            elif step[0] == "end":
                open_calls.pop(step[1]).__exit__(None, None, None)
            else:
                eps[step[1]].finish(results[step[1]])
        if t == 0:
            meter.set_baseline(-5.0, 0.0)
    meter.close()
    a, b, job = results["A"].gpu, results["B"].gpu, meter.job_metrics()
    # by hand: A alone [0,2) 200 J, A1+B1 [2,4) 100 J each, B1 [4,7) 300, A2+B1 [7,9) 100 each,
    # B1 [9,11) 200 (A ends at 10 while B1 is still open), B's rest [11,12) 100, outside [12,13) 100
    assert a["gpu.energy_j"] == pytest.approx(400) and b["gpu.energy_j"] == pytest.approx(800)
    assert (a["gpu.energy_llm_j"], a["gpu.energy_rest_j"]) == pytest.approx((300, 100))
    assert (b["gpu.energy_llm_j"], b["gpu.energy_rest_j"]) == pytest.approx((700, 100))
    assert results["A"].llm_energy_j == pytest.approx([200, 100]) and results["B"].llm_energy_j == pytest.approx([700])
    assert job["gpu.job_energy_j"] == pytest.approx(1300) and job["gpu.energy_outside_episodes_j"] == pytest.approx(100)
    assert a["gpu.energy_j"] + b["gpu.energy_j"] + job["gpu.energy_outside_episodes_j"] == pytest.approx(
        job["gpu.job_energy_j"], abs=1e-9
    )
    # the idle baseline: 40 W; net = gross - 40 W x the seconds shared the same way (A 4 s, B 8 s)
    assert job["gpu.power_w_idle"] == pytest.approx(40) and a["gpu.power_w_idle"] == pytest.approx(40)
    assert a["gpu.energy_net_j"] == pytest.approx(400 - 160) and b["gpu.energy_net_j"] == pytest.approx(800 - 320)
    assert job["gpu.job_energy_net_j"] == pytest.approx(1300 - 40 * 13)
    # per 1k output tokens and tokens per joule, from the gross energy
    assert a["gpu.j_per_1k_tokens_out"] == pytest.approx(800) and b["gpu.tokens_out_per_j"] == pytest.approx(2.5)
    windows = results["A"].llm_call_windows
    assert [round(e - s, 6) for s, e in windows] == [3.0, 2.0]
    results["A"].status = Status.success
    totals = energy_totals(list(results.values()))
    assert totals["gpu.energy_j"] == pytest.approx(1200) and totals["gpu.energy_net_j"] == pytest.approx(720)
    assert totals["gpu.energy_per_success_j"] == pytest.approx(1200)
    assert totals["gpu.j_per_1k_tokens_out"] == pytest.approx(1200 / 2.5)


def test_without_a_baseline_there_is_no_net_energy(monkeypatch):
    nvml = FakeNvml(n=1).install(monkeypatch)
    meter = EnergyMeter({"gpu": NvmlBackend(clock=nvml.clock)}, clock=nvml.clock)
    for t in range(3):
        nvml.now = float(t)
        nvml.gpus[0].energy_mj = t * 10_000
        meter.sample_once()
        if t == 0:
            ep = meter.episode()
    metrics = ep.finish()
    assert metrics["gpu.energy_j"] == pytest.approx(20)
    assert not any("net" in k or "idle" in k for k in [*metrics, *meter.job_metrics()])


# -- concurrency=2 for real: threads, the pool, the metered provider ----------------------------------


class LiveGpu(FakeGpu):
    """Power follows the calls in flight (60 W + 150 W each); the counter is its exact integral."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.active = 0
        self.most = 0
        self.t = time.monotonic()
        self.joules = 0.0
        self.history: list[tuple[float, float]] = [(self.t, 0.0)]  # (time, cumulative J)

    def _advance(self) -> None:
        now = time.monotonic()
        self.joules += (60.0 + 150.0 * self.active) * (now - self.t)
        self.t = now
        self.history.append((now, self.joules))

    def change(self, delta: int) -> None:
        with self.lock:
            self._advance()
            self.active += delta
            self.most = max(self.most, self.active)

    @property
    def energy_mj(self):
        with self.lock:
            self._advance()
            return int(self.joules * 1000)

    @energy_mj.setter
    def energy_mj(self, value):
        pass

    @property
    def power_mw(self):
        return int((60.0 + 150.0 * self.active) * 1000)

    @power_mw.setter
    def power_mw(self, value):
        pass


class SlowModel(Provider):
    def __init__(self, gpu: LiveGpu, rng: random.Random):
        self.gpu, self.rng = gpu, rng
        self.vision = False

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        self.gpu.change(+1)
        try:
            await asyncio.sleep(self.rng.uniform(0.03, 0.09))
        finally:
            self.gpu.change(-1)
        return Reply(text="ok", usage=Usage(10, 40))


class Desk:
    def kill(self) -> None: ...


def test_concurrency_2_episode_energies_add_up_to_the_jobs_integrated_energy(monkeypatch):
    nvml = FakeNvml(n=1)
    live = LiveGpu()
    nvml.gpus = [live]
    nvml.install(monkeypatch)
    meter = EnergyMeter({"gpu": NvmlBackend()}, rate_hz=40)
    meter.start()
    rng = random.Random(7)

    def run_one(env: Desk, item: int) -> EpisodeResult:
        result = EpisodeResult(task_id=f"t{item}", app="x")
        energy = meter.episode()
        with energy:
            provider = metered(SlowModel(live, rng))
            assert isinstance(provider, MeteredProvider) and provider.vision is False

            async def agent() -> None:
                for _ in range(3):
                    reply = await provider.complete([], [])
                    result.llm_calls += 1
                    result.tokens_out += reply.usage.output_tokens
                    await asyncio.sleep(0.02)  # a tool runs: no call of this episode is active

            asyncio.run(agent())
        assert current_episode() is None
        energy.finish(result)
        return result

    results: list[EpisodeResult] = []
    EpisodePool([Desk(), Desk()], run_one, StopSignal()).run(list(range(6)), results.append)
    meter.close()
    job = meter.job_metrics()
    assert live.most == 2  # calls of the two episodes did overlap
    episodes_j = sum(r.gpu["gpu.energy_j"] for r in results)
    assert episodes_j + job["gpu.energy_outside_episodes_j"] == pytest.approx(job["gpu.job_energy_j"], rel=1e-9)
    assert job["gpu.energy_outside_episodes_j"] < 0.05 * job["gpu.job_energy_j"]
    for r in results:
        assert len(r.llm_energy_j) == r.llm_calls == 3 and all(e is not None and e > 0 for e in r.llm_energy_j)
        assert sum(r.llm_energy_j) == pytest.approx(r.gpu["gpu.energy_llm_j"])
        assert len(r.llm_call_windows) == 3
    # the job's integrated energy against the GPU's own integral over the same span (the counter's
    # mJ rounding and the interpolation at the span's start are the only differences)
    ticks = meter.domains["gpu"].ticks
    begin, end = meter.begin_t, ticks[-1][0].t
    truth = _integral(live.history, end) - _integral(live.history, begin)
    assert job["gpu.job_energy_j"] == pytest.approx(truth, rel=0.02)


def _integral(history: list[tuple[float, float]], t: float) -> float:
    for (t0, e0), (t1, e1) in itertools.pairwise(history):
        if t0 <= t <= t1:
            return e0 + (e1 - e0) * (t - t0) / (t1 - t0) if t1 > t0 else e0
    return history[-1][1]


def test_two_jobs_on_one_gpu_share_it_through_the_hosts_ledger(monkeypatch, tmp_path):
    """Two jobs (two meters, as two joblib workers have) read the same GPU and list their spans in one folder."""
    from mcpworld.telemetry.energy.ledger import SharedLedger

    nvml = FakeNvml(n=1).install(monkeypatch)
    jobs = {
        name: EnergyMeter({"gpu": NvmlBackend(clock=nvml.clock)}, clock=nvml.clock, ledger=SharedLedger(tmp_path))
        for name in ("X", "Y")
    }
    eps: dict[str, Any] = {}
    calls: dict[str, Any] = {}
    got: dict[str, dict[str, float]] = {}
    script = {
        0: [("start", "X")],
        1: [("call", "X")],
        2: [("start", "Y")],
        3: [("call", "Y")],
        5: [("end", "X")],
        7: [("end", "Y")],
        8: [("finish", "Y")],
        10: [("finish", "X")],
    }
    for t in range(11):
        nvml.now = float(t)
        nvml.gpus[0].energy_mj = t * 100_000  # 100 W
        for meter in jobs.values():
            meter.sample_once()
        for kind, job in script.get(t, []):
            if kind == "start":
                eps[job] = jobs[job].episode()
            elif kind == "call":
                calls[job] = eps[job].call()
                calls[job].__enter__()
            elif kind == "end":
                calls[job].__exit__(None, None, None)
            else:
                got[job] = eps[job].finish()
    for meter in jobs.values():
        meter.close()
    # X alone [0,1) rest, [1,3) its call; both calls [3,5); Y's call [5,7); both episodes, no call, [7,8); X [8,10)
    assert (got["X"]["gpu.energy_llm_j"], got["X"]["gpu.energy_rest_j"]) == pytest.approx((300, 350))
    assert (got["Y"]["gpu.energy_llm_j"], got["Y"]["gpu.energy_rest_j"]) == pytest.approx((300, 50))
    assert got["X"]["gpu.energy_j"] + got["Y"]["gpu.energy_j"] == pytest.approx(1000)  # 10 s x 100 W, once
    x, y = jobs["X"].job_metrics(), jobs["Y"].job_metrics()
    assert x["gpu.job_energy_j"] == y["gpu.job_energy_j"] == pytest.approx(1000)
    assert x["gpu.energy_other_jobs_j"] == pytest.approx(350) and y["gpu.energy_other_jobs_j"] == pytest.approx(650)
    assert len(list(tmp_path.glob("*.jsonl"))) == 2
