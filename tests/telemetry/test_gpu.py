"""GPU telemetry against a fake NVML: pynvml's functions monkeypatched, driven by a clock the test sets."""

import csv
import subprocess
import sys
import threading
import time

import pynvml
import pytest

from mcpworld.core.errors import UserError
from mcpworld.telemetry import gpu
from mcpworld.telemetry.gpu import (
    EpisodeGpu,
    GpuMonitor,
    NvmlBackend,
    Sample,
    make_gpu_monitor,
)

MIB = 1024 * 1024


class FakeGpu:
    def __init__(self):
        self.util = 0.0
        self.mem_bytes = 0
        self.temp = 30
        self.power_mw = 0
        self.energy_mj: int | None = 0  # None: the counter is NotSupported


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class FakeNvml:
    """Scripted GPUs; ``now`` is the backend's clock."""

    def __init__(self, n=2):
        self.now = 0.0
        self.gpus = [FakeGpu() for _ in range(n)]
        self.calls: list[str] = []
        self.init_error: Exception | None = None

    def clock(self):
        return self.now

    def install(self, monkeypatch):
        def rec(name, fn):
            def wrapped(*a):
                self.calls.append(name)
                return fn(*a)
            monkeypatch.setattr(pynvml, name, wrapped)

        def init():
            if self.init_error:
                raise self.init_error

        def energy(h):
            if h.energy_mj is None:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
            return h.energy_mj

        rec("nvmlInit", init)
        rec("nvmlShutdown", lambda: None)
        rec("nvmlDeviceGetCount", lambda: len(self.gpus))
        rec("nvmlDeviceGetHandleByIndex", lambda i: self.gpus[i])
        rec("nvmlDeviceGetUtilizationRates", lambda h: Obj(gpu=h.util, memory=0))
        rec("nvmlDeviceGetMemoryInfo", lambda h: Obj(used=h.mem_bytes, total=80 * 1024 * MIB, free=0))
        rec("nvmlDeviceGetTemperature", lambda h, sensor: h.temp)
        rec("nvmlDeviceGetPowerUsage", lambda h: h.power_mw)
        rec("nvmlDeviceGetTotalEnergyConsumption", energy)
        return self


@pytest.fixture
def nvml(monkeypatch):
    return FakeNvml().install(monkeypatch)


@pytest.fixture
def fresh_announce(monkeypatch):
    monkeypatch.setattr(gpu, "_announced", False)


def episode(nvml, tmp_path) -> EpisodeGpu:
    """An episode driven by ``sample_once()`` at the fake clock (no thread)."""
    return GpuMonitor(NvmlBackend(clock=nvml.clock)).episode(tmp_path / "ep" / "gpu.csv")


def at(ep, nvml, t, **per_gpu):
    """Set the clock and each GPU's readings (lists, one value per GPU), then sample once."""
    nvml.now = t
    for name, values in per_gpu.items():
        for g, v in zip(nvml.gpus, values, strict=True):
            setattr(g, name, v)
    ep.sample_once()


# -- energy -------------------------------------------------------------------------------------------

def test_energy_from_counter_differences_on_two_gpus(nvml, tmp_path):
    ep = episode(nvml, tmp_path)
    # power says 900 W: the counter must win
    at(ep, nvml, 0.0, energy_mj=[10_000, 500_000], power_mw=[900_000, 900_000])
    at(ep, nvml, 0.5, energy_mj=[60_000, 525_000])   # +50 J, +25 J
    at(ep, nvml, 1.0, energy_mj=[160_000, 575_000])  # +100 J, +50 J
    at(ep, nvml, 2.0, energy_mj=[260_000, 576_000])  # +100 J, +1 J
    ep.stop()
    assert ep.metrics()["gpu.energy_j"] == pytest.approx(250 + 76, abs=1e-9)
    assert ep.method == "counter"
    assert ep.counter_fallbacks == 0


def test_energy_of_an_llm_call_window_is_interpolated(nvml, tmp_path):
    ep = episode(nvml, tmp_path)
    at(ep, nvml, 0.0, energy_mj=[0, 0])
    at(ep, nvml, 1.0, energy_mj=[100_000, 10_000])  # 100 J, 10 J
    at(ep, nvml, 2.0, energy_mj=[300_000, 30_000])  # 200 J, 20 J
    at(ep, nvml, 3.0, energy_mj=[600_000, 60_000])  # 300 J, 30 J
    # 0.5 of the first interval + all of the second + 0.25 of the third, on both GPUs
    assert ep.energy_between(0.5, 2.25) == pytest.approx(50 + 200 + 75 + 5 + 20 + 7.5)
    # shorter than one sample interval: that interval's energy pro rata
    assert ep.energy_between(1.2, 1.7) == pytest.approx(0.5 * 220)
    assert ep.energy_between(0.0, 3.0) == pytest.approx(660)
    assert ep.energy_between(2.0, 2.0) == pytest.approx(0)
    # not covered by the samples
    assert ep.energy_between(3.5, 4.0) is None
    assert ep.energy_between(-1.0, 1.0) is None
    assert ep.energy_between(2.0, 3.1) is None
    with pytest.raises(ValueError):
        ep.energy_between(2.0, 1.0)
    ep.stop()


def test_energy_between_without_samples_is_none(nvml, tmp_path):
    ep = episode(nvml, tmp_path)
    assert ep.energy_between(0.0, 1.0) is None
    assert ep.metrics() == {"gpu.samples": 0.0}


def test_unsupported_counter_integrates_constant_power(nvml, tmp_path):
    ep = episode(nvml, tmp_path)
    for k in range(41):  # 200 W on one GPU, 0 W on the other, for 10 s at 4 Hz
        at(ep, nvml, k * 0.25, energy_mj=[None, None], power_mw=[200_000, 0])
    ep.stop()
    assert ep.metrics()["gpu.energy_j"] == pytest.approx(2000)
    assert ep.method == "power"
    assert ep.energy_between(2.0, 3.1) == pytest.approx(220)


def test_unsupported_counter_integrates_a_power_ramp_by_trapezoid(nvml, tmp_path):
    ep = episode(nvml, tmp_path)
    at(ep, nvml, 0.0, energy_mj=[None, None], power_mw=[0, 0])
    at(ep, nvml, 1.0, power_mw=[100_000, 0])
    at(ep, nvml, 3.0, power_mw=[0, 40_000])
    # GPU0: 50 + 100; GPU1: 0 + 40 (left or right rectangles would give other values)
    assert ep.metrics()["gpu.energy_j"] == pytest.approx(190)
    # within the ramp-down interval: mean power of that interval (70 W total) times 1 s
    assert ep.energy_between(1.5, 2.5) == pytest.approx(70)
    ep.stop()


def test_each_gpu_picks_its_method(nvml, tmp_path):
    ep = episode(nvml, tmp_path)
    at(ep, nvml, 0.0, energy_mj=[0, None], power_mw=[500_000, 100_000])
    at(ep, nvml, 2.0, energy_mj=[30_000, None])  # GPU0: counter 30 J; GPU1: 100 W × 2 s
    ep.stop()
    assert ep.metrics()["gpu.energy_j"] == pytest.approx(230)
    assert ep.method == "power"


@pytest.mark.parametrize("bad", [5_000, 2**62], ids=["reset", "absurd-jump"])
def test_counter_reset_falls_back_to_power_for_that_interval(nvml, tmp_path, bad):
    ep = episode(nvml, tmp_path)
    at(ep, nvml, 0.0, energy_mj=[1_000_000, 0], power_mw=[3_000, 0])
    at(ep, nvml, 1.0, energy_mj=[1_001_000, 0])       # +1 J
    at(ep, nvml, 2.0, energy_mj=[bad, 0])             # reset/wrap: 3 W × 1 s
    at(ep, nvml, 3.0, energy_mj=[bad + 1_000, 0])     # counter again: +1 J
    ep.stop()
    energy = ep.metrics()["gpu.energy_j"]
    assert energy == pytest.approx(5)
    assert ep.counter_fallbacks == 1
    assert ep.method == "counter"
    assert ep.energy_between(1.0, 2.0) == pytest.approx(3)


# -- metrics and gpu.csv ------------------------------------------------------------------------------

def test_metrics_keys_and_values(nvml, tmp_path):
    ep = episode(nvml, tmp_path)
    at(ep, nvml, 0.0, util=[10, 30], mem_bytes=[1000 * MIB, 500 * MIB], temp=[40, 50],
       power_mw=[100_000, 50_000], energy_mj=[0, 0])
    at(ep, nvml, 1.0, util=[90, 70], mem_bytes=[2000 * MIB, 100 * MIB], temp=[71, 60],
       power_mw=[300_000, 10_000], energy_mj=[200_000, 30_000])
    at(ep, nvml, 2.0, util=[20, 0], mem_bytes=[1800 * MIB, 400 * MIB], temp=[65, 66],
       power_mw=[80_000, 10_000], energy_mj=[400_000, 40_000])
    ep.stop()
    assert ep.metrics() == {
        "gpu.samples": 3.0,
        "gpu.energy_j": pytest.approx(440),
        "gpu.power_w_mean": pytest.approx((150 + 310 + 90) / 3),
        "gpu.power_w_max": pytest.approx(310),
        "gpu.util_mean": pytest.approx(220 / 6),
        "gpu.mem_peak_mb": pytest.approx(2200),  # total used, not the largest single GPU
        "gpu.temp_max_c": pytest.approx(71),
    }
    assert all(isinstance(v, float) for v in ep.metrics().values())


def test_gpu_csv_has_the_header_and_one_row_per_gpu_per_sample_flushed_as_it_goes(nvml, tmp_path):
    ep = episode(nvml, tmp_path)
    at(ep, nvml, 0.0, energy_mj=[7, None], power_mw=[1500, 2500], mem_bytes=[3 * MIB, 0])
    at(ep, nvml, 0.25, energy_mj=[9, None])
    path = tmp_path / "ep" / "gpu.csv"
    with open(path, newline="") as f:  # before stop(): what was sampled is on disk already
        rows = list(csv.reader(f))
    assert rows[0] == ["t", "gpu", "util_pct", "mem_mb", "temp_c", "power_w", "energy_mj"]
    assert [r[:2] for r in rows[1:]] == [["0.0", "0"], ["0.0", "1"], ["0.25", "0"], ["0.25", "1"]]
    assert rows[1][3] == "3.0" and rows[1][5] == "1.5" and rows[2][5] == "2.5"
    assert rows[3][6] == "9" and rows[4][6] == ""  # empty when the counter is unsupported
    ep.stop()


# -- the factory --------------------------------------------------------------------------------------

def test_no_library_returns_none_with_one_info_line(nvml, fresh_announce, capsys):
    nvml.init_error = pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    assert make_gpu_monitor() is None
    assert make_gpu_monitor("local", 2.0) is None
    err = capsys.readouterr().err
    assert err.splitlines() == ["mcpworld: no NVIDIA GPU here (NVMLError_LibraryNotFound): GPU metrics are off"]
    assert "nvmlDeviceGetCount" not in nvml.calls


def test_no_pynvml_module_returns_none_with_one_info_line(monkeypatch, fresh_announce, capsys):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml → ImportError
    assert make_gpu_monitor() is None
    assert make_gpu_monitor() is None
    assert capsys.readouterr().err.splitlines() == [
        "mcpworld: no NVIDIA GPU here (pynvml is not installed): GPU metrics are off"]


def test_zero_devices_returns_none_and_shuts_nvml_down(monkeypatch, fresh_announce, capsys):
    fake = FakeNvml(n=0).install(monkeypatch)
    assert make_gpu_monitor() is None
    assert "nvmlShutdown" in fake.calls
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_source_none_makes_no_nvml_call(nvml, fresh_announce, capsys):
    assert make_gpu_monitor("none") is None
    assert nvml.calls == []
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("source", ["remote", "Local", ""])
def test_unknown_source_is_a_user_error(nvml, source):
    with pytest.raises(UserError) as e:
        make_gpu_monitor(source)
    assert "telemetry.gpu.source" in str(e.value)
    assert "local" in str(e.value) and "none" in str(e.value)
    assert nvml.calls == []


def test_bad_rate_is_a_user_error(nvml):
    with pytest.raises(UserError, match="telemetry.gpu.rate_hz"):
        make_gpu_monitor("local", 0)


def test_local_source_with_a_gpu_gives_a_monitor_that_shuts_nvml_down(nvml, fresh_announce, capsys):
    monitor = make_gpu_monitor("local", 8.0)
    assert isinstance(monitor, GpuMonitor) and monitor.rate_hz == 8.0
    assert nvml.calls[0] == "nvmlInit"
    monitor.close()
    monitor.close()
    assert nvml.calls.count("nvmlShutdown") == 1
    assert capsys.readouterr().err == ""


# -- the sampler thread -------------------------------------------------------------------------------

def sampler_threads():
    return [t for t in threading.enumerate() if t.name.startswith("gpu-sampler")]


def test_thread_is_gone_after_the_episode_and_stops_promptly(nvml, tmp_path):
    monitor = GpuMonitor(NvmlBackend(), rate_hz=0.1)  # a 10 s interval: stop must not wait for it
    started = time.monotonic()
    with monitor.episode(tmp_path / "gpu.csv") as g:
        assert g.running and len(sampler_threads()) == 1
    assert time.monotonic() - started < 1.5
    assert not g.running and sampler_threads() == []
    assert g.metrics()["gpu.samples"] == 2  # the first and the last
    monitor.close()


def test_thread_is_gone_when_the_episode_body_raises(nvml, tmp_path):
    monitor = GpuMonitor(NvmlBackend(), rate_hz=200)
    with pytest.raises(RuntimeError, match="agent blew up"), monitor.episode(tmp_path / "gpu.csv") as g:
        time.sleep(0.05)
        raise RuntimeError("agent blew up")
    assert not g.running and sampler_threads() == []
    assert g.metrics()["gpu.samples"] >= 3
    assert g.errors == 0


def test_energy_between_samples_now_when_the_window_ends_after_the_newest_sample(nvml, tmp_path):
    with GpuMonitor(NvmlBackend(), rate_hz=0.01).episode(tmp_path / "gpu.csv") as g:
        t0 = time.monotonic()
        t1 = time.monotonic()
        assert g.energy_between(t0, t1) == 0.0
        assert len(g.ticks) == 2


class Broken:
    def __init__(self):
        self.reads = 0

    def read(self) -> list[Sample]:
        self.reads += 1
        raise OSError("sensor gone")

    def close(self) -> None: ...


def test_a_backend_that_always_fails_never_crashes_the_episode_and_gives_up(tmp_path, capsys):
    backend = Broken()
    with GpuMonitor(backend, rate_hz=500, max_errors=3).episode(tmp_path / "gpu.csv") as g:
        deadline = time.monotonic() + 5
        while g.running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not g.running  # gave up on its own, while the episode still runs
    assert backend.reads == 3 and g.errors == 3
    assert g.stopped_reason == "3 consecutive sampling errors, last: OSError: sensor gone"
    assert g.metrics() == {"gpu.samples": 0.0}
    assert g.energy_between(0.0, time.monotonic()) is None
    assert sampler_threads() == []
    assert capsys.readouterr().err.count("GPU sampling stopped") == 1


def test_an_error_in_between_is_counted_and_sampling_goes_on(nvml, tmp_path):
    backend = NvmlBackend(clock=nvml.clock)
    ep = GpuMonitor(backend, max_errors=2).episode(tmp_path / "gpu.csv")
    flaky = iter([True, False, True, False, False])

    def read():
        if next(flaky):
            raise OSError("blip")
        return NvmlBackend.read(backend)

    backend.read = read
    results = [ep._safe_sample() for _ in range(5)]
    assert results == [False, True, False, True, True]
    assert ep.errors == 2 and ep.stopped_reason is None and len(ep.ticks) == 3


# -- import cost --------------------------------------------------------------------------------------

def test_importing_the_module_does_not_import_pynvml():
    code = "import sys, mcpworld.telemetry.gpu; print('pynvml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


class Hanging:
    """The first read answers; later ones block until released."""

    def __init__(self):
        self.release = threading.Event()
        self.reads = 0

    def read(self) -> list[Sample]:
        self.reads += 1
        if self.reads > 1:
            self.release.wait(10)
        return [Sample(t=time.monotonic(), gpu=0, util_pct=0, mem_mb=0, temp_c=0, power_w=0, energy_mj=None)]

    def close(self) -> None: ...


def test_stop_is_bounded_when_a_read_hangs(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu, "STOP_TIMEOUT_S", 0.2)
    backend = Hanging()
    g = GpuMonitor(backend, rate_hz=100).episode(tmp_path / "gpu.csv")
    try:
        g.start()
        deadline = time.monotonic() + 5
        while backend.reads < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        g.stop()
        assert time.monotonic() - started < 1.5
        assert g.stopped_reason == "the sampler thread did not stop in time"
    finally:
        backend.release.set()
    g._thread.join(5)
    assert sampler_threads() == []
    assert g._file.closed  # the thread closed the csv once its read returned
