"""GPUs on the model host: a DCGM exporter (a local HTTP server speaking its exposition format) and
our gpu_agent (serving a fake NVML) are read over real HTTP, and their energy is shared the same way."""

from __future__ import annotations

import time
import urllib.request

import pytest

from mcpworld.config.schema import GpuSource, TelemetryConfig
from mcpworld.core.errors import UserError
from mcpworld.telemetry.energy.factory import make_energy_meter
from mcpworld.telemetry.energy.meter import EnergyMeter
from mcpworld.telemetry.energy.prometheus import PrometheusBackend, parse
from mcpworld.telemetry.gpu import NvmlBackend, make_gpu_backend
from mcpworld.telemetry.gpu_agent import serve
from tests.fakes.dcgm_server import DcgmExporter
from tests.fakes.nvml import MIB, FakeNvml

TOKEN = "gpu-agent-token-for-the-test"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def exporter():
    server = DcgmExporter(n=2)
    yield server
    server.close()


def test_a_scrape_reads_each_gpu_on_our_clock(exporter):
    exporter.gpus[0].energy_mj, exporter.gpus[0].power_w = 128_996_013, 250.5
    exporter.gpus[1].util, exporter.gpus[1].fb_used_mib, exporter.gpus[1].temp_c = 87, 40_000, 66
    backend = PrometheusBackend(exporter.url, clock=Clock())
    (a, b) = backend.read()
    assert (a.gpu, a.t, a.energy_mj, a.power_w) == (0, 0.0, 128_996_013, 250.5)
    assert (b.gpu, b.util_pct, b.mem_mb, b.temp_c) == (1, 87, 40_000, 66)
    assert backend.count == 2 and backend.clock_offset_s is None  # dcgm-exporter sends no clock
    backend.close()


def test_a_blank_counter_falls_back_to_power(exporter):
    exporter.gpus[1].energy_mj = None  # DCGM's blank: the field is not supported
    samples, _ = parse(exporter.text(), 1.0)
    assert samples[0].energy_mj == 0 and samples[1].energy_mj is None


def test_remote_gpu_energy_is_shared_like_a_local_ones(exporter):
    clock = Clock()
    meter = EnergyMeter({"gpu": PrometheusBackend(exporter.url, clock=clock)}, clock=clock)
    first = second = None
    for t in range(0, 7):
        clock.now = float(t)
        for g in exporter.gpus:  # 300 W on GPU 0, 100 W on GPU 1
            g.energy_mj = t * (300_000 if g is exporter.gpus[0] else 100_000)
        meter.sample_once()
        if t == 1:
            first = meter.episode()
            call = first.call()
            call.__enter__()
        if t == 2:
            second = meter.episode()
            other = second.call()
            other.__enter__()
        if t == 4:
            call.__exit__(None, None, None)
            other.__exit__(None, None, None)
        if t == 5:
            first_metrics, second_metrics = first.finish(), second.finish()
    meter.close()
    job = meter.job_metrics()
    # 400 W: [1,2) the first's call 400 J; [2,4) both calls 400 J each; [4,5) rest, half each
    assert first_metrics["gpu.energy_llm_j"] == pytest.approx(800) and second_metrics["gpu.energy_llm_j"] == pytest.approx(400)
    assert first_metrics["gpu.energy_j"] == pytest.approx(1000) and second_metrics["gpu.energy_j"] == pytest.approx(600)
    assert job["gpu.job_energy_j"] == pytest.approx(2400)  # 6 s x 400 W
    assert first_metrics["gpu.energy_j"] + second_metrics["gpu.energy_j"] + job["gpu.energy_outside_episodes_j"] == pytest.approx(
        job["gpu.job_energy_j"]
    )
    assert exporter.scrapes == 1 + 7 + 1  # connect, every sample, close


def test_the_gpu_agent_serves_nvml_to_the_same_reader(monkeypatch):
    nvml = FakeNvml(n=2).install(monkeypatch)
    nvml.gpus[0].energy_mj, nvml.gpus[0].power_mw, nvml.gpus[0].mem_bytes = 2**40 + 7, 123_456, 2048 * MIB
    nvml.gpus[1].energy_mj = None  # NotSupported on this one
    server = serve(NvmlBackend(), TOKEN, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.server_port}/metrics"
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        text = urllib.request.urlopen(urllib.request.Request(url, headers=auth)).read().decode()
        assert 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0"} 1099511627783' in text  # the int, exactly
        assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter" in text
        with pytest.raises(UserError, match="MCPWORLD_GPU_AGENT_TOKEN"):  # the agent answers only its token
            PrometheusBackend(url)
        monkeypatch.setenv("MCPWORLD_GPU_AGENT_TOKEN", TOKEN)
        backend = make_gpu_backend("prometheus", url)  # sends the variable's token
        assert isinstance(backend, PrometheusBackend)
        (a, b) = backend.read()
        assert a.energy_mj == 2**40 + 7 and a.power_w == pytest.approx(123.456) and a.mem_mb == 2048
        assert b.energy_mj is None
        assert backend.clock_offset_s is not None and abs(backend.clock_offset_s) < 1.0  # same host, same clock
        backend.close()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(urllib.request.Request(url.replace("/metrics", "/other"), headers=auth))
    finally:
        server.shutdown()
        server.server_close()


def test_an_endpoint_that_is_down_is_one_user_error_naming_the_key():
    with pytest.raises(UserError) as e:
        PrometheusBackend("http://127.0.0.1:9/metrics", timeout_s=1.0)
    assert "telemetry.gpu.url=http://127.0.0.1:9/metrics" in str(e.value) and "gpu_agent" in str(e.value)


def test_a_page_without_dcgm_fields_is_a_user_error():
    server = DcgmExporter(page="# TYPE up gauge\nup 1\n")
    try:
        with pytest.raises(UserError, match="DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"):
            PrometheusBackend(server.url)
    finally:
        server.close()


def test_the_factory_builds_a_remote_meter_and_records_what_it_reads(exporter, tmp_path):
    cfg = TelemetryConfig()
    cfg.gpu.source, cfg.gpu.url = GpuSource.prometheus, exporter.url
    cfg.cpu.powercap_root = str(tmp_path)
    cfg.ledger_dir = str(tmp_path / "ledger")
    meter, params = make_energy_meter(cfg)
    assert isinstance(meter, EnergyMeter)
    # jobs reading the same endpoint share one ledger folder; other sources are other folders
    port = exporter.url.split(":")[2].split("/")[0]
    assert meter.ledger is not None and meter.ledger.path.parent.name == f"http_127.0.0.1_{port}_metrics"
    assert params["energy.gpu"] == f"prometheus {exporter.url}, 2 GPU(s)"
    meter.close()


def test_a_remote_read_that_fails_mid_job_is_counted_not_raised(exporter):
    meter = EnergyMeter({"gpu": PrometheusBackend(exporter.url)}, rate_hz=50, max_errors=2)
    meter.start()
    exporter.close()
    deadline = time.monotonic() + 5
    while meter.running and time.monotonic() < deadline:
        time.sleep(0.02)
    meter.close()
    assert meter.domains["gpu"].errors == 2 and not meter.running
