"""GPUs on another host (where the model is served), read from a Prometheus exposition endpoint.

Either NVIDIA's DCGM exporter (``dcgm-exporter``, ``:9400/metrics``) or our own
``python -m mcpworld.telemetry.gpu_agent`` on the model host: both speak the text exposition format with
DCGM's field names, one series per GPU (label ``gpu``). We read ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``
(mJ since the driver loaded, a counter), ``DCGM_FI_DEV_POWER_USAGE`` (W), ``DCGM_FI_DEV_GPU_UTIL`` (%),
``DCGM_FI_DEV_FB_USED`` (MiB) and ``DCGM_FI_DEV_GPU_TEMP`` (°C). The parser is ``prometheus_client``'s.

Clock: a sample is stamped with OUR monotonic clock at the middle of the scrape (request sent, reply
read), never with the remote's timestamps, so no clock offset enters the attribution; the error is at
most half the round trip. The agent also reports its wall clock (``mcpworld_gpu_agent_time_seconds``);
its offset from ours, measured at connect, is recorded as a param for the reader's information only.
DCGM answers from its cache, refreshed every collect interval (``dcgm-exporter -c MS``, 30 s by
default): run it with ``-c 100`` or so for per-call attribution.

Our gpu_agent answers only its token (``mcpworld.core.listener``): the reader sends
``MCPWORLD_GPU_AGENT_TOKEN`` as ``Authorization: Bearer …`` when that variable is set (a DCGM
exporter ignores the header).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from mcpworld.core.errors import UserError
from mcpworld.telemetry.gpu import Sample

ENERGY = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
POWER = "DCGM_FI_DEV_POWER_USAGE"
FIELDS = {
    POWER: "power_w",
    ENERGY: "energy_mj",
    "DCGM_FI_DEV_GPU_UTIL": "util_pct",
    "DCGM_FI_DEV_FB_USED": "mem_mb",
    "DCGM_FI_DEV_GPU_TEMP": "temp_c",
}
AGENT_TIME = "mcpworld_gpu_agent_time_seconds"
AGENT_TOKEN = "MCPWORLD_GPU_AGENT_TOKEN"  # gpu_agent's token, on the model host and where the harness runs
BLANK = 9.2e18  # DCGM's "blank" sentinels (not supported / no data) sit just below 2**63
TIMEOUT_S = 2.0


def parse(text: str, t: float) -> tuple[list[Sample], float | None]:
    """Samples (one per GPU, at our time ``t``) and the agent's wall clock if it sent one."""
    from prometheus_client.parser import text_string_to_metric_families

    per_gpu: dict[int, dict[str, float | None]] = {}
    agent_time = None
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name not in (family.name, f"{family.name}_total"):
                continue  # (the parser names a counter's samples …_total; DCGM's lines have no suffix)
            if family.name == AGENT_TIME:
                agent_time = float(s.value)
            elif family.name in FIELDS and "gpu" in s.labels:
                value = float(s.value)
                per_gpu.setdefault(int(s.labels["gpu"]), {})[FIELDS[family.name]] = None if value >= BLANK else value
    samples = []
    for gpu, v in sorted(per_gpu.items()):
        if v.get("power_w") is None and v.get("energy_mj") is None:
            continue  # neither energy nor power: nothing to integrate
        samples.append(
            Sample(
                t=t,
                gpu=gpu,
                util_pct=v.get("util_pct") or 0.0,
                mem_mb=v.get("mem_mb") or 0.0,
                temp_c=v.get("temp_c") or 0.0,
                power_w=v.get("power_w") or 0.0,
                energy_mj=v.get("energy_mj"),
            )
        )
    return samples, agent_time


class PrometheusBackend:
    """Scrapes ``url`` once per ``read()``. The constructor scrapes once and fails with a UserError."""

    def __init__(
        self, url: str, clock: Callable[[], float] = time.monotonic, timeout_s: float = TIMEOUT_S, token: str | None = None
    ):
        self.url = url
        self._clock = clock
        self._client = httpx.Client(timeout=timeout_s, headers={"Authorization": f"Bearer {token}"} if token else None)
        self.clock_offset_s: float | None = None  # the agent's wall clock minus ours, at connect
        self.rtt_s = 0.0
        try:
            wall0 = time.time()
            first, agent_time = self._scrape()
        except (httpx.HTTPError, ValueError) as e:
            self._client.close()
            if isinstance(e, httpx.HTTPStatusError) and e.response.status_code == 401:
                raise UserError(
                    f"telemetry.gpu.url={url} wants a token: set {AGENT_TOKEN} to the gpu_agent's "
                    "(the file its start line names, or the variable it was started with)"
                ) from e
            raise UserError(
                f"telemetry.gpu.url={url}: cannot read GPU metrics there ({type(e).__name__}: {e}); "
                "start dcgm-exporter or `python -m mcpworld.telemetry.gpu_agent` on the model host, "
                "or set telemetry.gpu.source=none"
            ) from e
        if not first:
            self._client.close()
            raise UserError(
                f"telemetry.gpu.url={url}: no {ENERGY} or {POWER} series with a gpu label there; "
                "is it a DCGM exporter's (or mcpworld gpu_agent's) /metrics?"
            )
        self.count = len(first)
        if agent_time is not None:
            self.clock_offset_s = agent_time - (wall0 + self.rtt_s / 2)

    def _scrape(self) -> tuple[list[Sample], float | None]:
        t0 = self._clock()
        reply = self._client.get(self.url)
        t1 = self._clock()
        reply.raise_for_status()
        self.rtt_s = t1 - t0
        return parse(reply.text, (t0 + t1) / 2)

    def read(self) -> list[Sample]:
        return self._scrape()[0]

    def close(self) -> None:
        self._client.close()
