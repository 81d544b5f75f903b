"""GPU readers and energy integration against a fake NVML (pynvml's functions monkeypatched, on a clock
the test sets): the job's meter, its series, the episode's GPU figures and gpu.csv, the factory."""

import csv
import subprocess
import sys
import threading
import time

import pynvml
import pytest

from mcpworld.config.schema import TelemetryConfig
from mcpworld.core.errors import UserError
from mcpworld.telemetry import gpu
from mcpworld.telemetry.energy import meter as meter_module
from mcpworld.telemetry.energy.factory import make_energy_meter
from mcpworld.telemetry.energy.meter import EnergyMeter
from mcpworld.telemetry.gpu import NvmlBackend, Sample, make_gpu_backend
from tests.fakes.nvml import MIB, FakeNvml, at


@pytest.fixture
def nvml(monkeypatch):
    return FakeNvml().install(monkeypatch)


@pytest.fixture
def fresh_announce(monkeypatch):
    monkeypatch.setattr(gpu, "_announced", False)


def make_meter(nvml, **kw) -> EnergyMeter:
    """A meter over the fake GPUs, driven by ``sample_once()`` at the fake clock (no thread)."""
    return EnergyMeter({"gpu": NvmlBackend(clock=nvml.clock)}, clock=nvml.clock, **kw)


def job_j(m):
    return m.job_metrics()["gpu.job_energy_j"]


def window(m, nvml, t0, t1):
    """The energy of an episode that ran alone from t0 to t1 (all of it is its rest share)."""
    nvml.now = t0
    ep = m.episode()
    nvml.now = t1
    return ep.finish()["gpu.energy_j"]


# -- energy -------------------------------------------------------------------------------------------


def test_energy_from_counter_differences_on_two_gpus(nvml):
    m = make_meter(nvml)
    # power says 900 W: the counter must win
    at(m, nvml, 0.0, energy_mj=[10_000, 500_000], power_mw=[900_000, 900_000])
    at(m, nvml, 0.5, energy_mj=[60_000, 525_000])  # +50 J, +25 J
    at(m, nvml, 1.0, energy_mj=[160_000, 575_000])  # +100 J, +50 J
    at(m, nvml, 2.0, energy_mj=[260_000, 576_000])  # +100 J, +1 J
    m.close()
    assert job_j(m) == pytest.approx(250 + 76, abs=1e-9)
    assert m.domains["gpu"].method == "counter"
    assert m.job_metrics()["gpu.counter_fallbacks"] == 0


def three_seconds(nvml):
    m = make_meter(nvml)
    at(m, nvml, 0.0, energy_mj=[0, 0])
    at(m, nvml, 1.0, energy_mj=[100_000, 10_000])  # 100 J, 10 J
    at(m, nvml, 2.0, energy_mj=[300_000, 30_000])  # 200 J, 20 J
    at(m, nvml, 3.0, energy_mj=[600_000, 60_000])  # 300 J, 30 J
    return m


@pytest.mark.parametrize(
    ("t0", "t1", "joules"),
    [
        (0.5, 2.25, 50 + 200 + 75 + 5 + 20 + 7.5),  # 0.5 of the first interval + the second + 0.25 of the third
        (1.2, 1.7, 0.5 * 220),  # shorter than one sample interval: that interval's energy pro rata
        (0.0, 3.0, 660),
        (2.0, 2.0, 0.0),
    ],
)
def test_a_window_gets_the_interpolated_energy(nvml, t0, t1, joules):
    m = three_seconds(nvml)
    assert window(m, nvml, t0, t1) == pytest.approx(joules)


def test_episodes_that_overlap_share_the_time_they_overlap(nvml):
    m = three_seconds(nvml)
    nvml.now = 0.5
    first = m.episode()
    nvml.now = 1.5
    second = m.episode()
    nvml.now = 2.5
    a, b = first.finish()["gpu.energy_j"], second.finish()["gpu.energy_j"]
    # [0.5, 1.5]: the first alone (55 + 110); [1.5, 2.5]: half each of 110 + 165
    assert a == pytest.approx(55 + 110 + 137.5) and b == pytest.approx(137.5)


def test_a_window_beyond_the_samples_is_clipped_and_says_so(nvml):
    m = make_meter(nvml)
    at(m, nvml, 0.0, energy_mj=[0, 0])
    at(m, nvml, 1.0, energy_mj=[100_000, 0])
    nvml.now = 0.5
    ep = m.episode()
    nvml.now = 1.5  # no sample after the end (no thread to take one)
    metrics = ep.finish()
    assert metrics["gpu.energy_j"] == pytest.approx(50)
    assert metrics["gpu.uncovered_s"] == pytest.approx(0.5)


def test_without_samples_an_episode_has_no_energy(nvml):
    m = make_meter(nvml)
    assert m.episode().finish() == {"gpu.samples": 0.0}
    assert m.job_metrics() == {"gpu.samples": 0.0, "gpu.sampling_errors": 0.0}


def test_unsupported_counter_integrates_constant_power(nvml):
    m = make_meter(nvml)
    for k in range(41):  # 200 W on one GPU, 0 W on the other, for 10 s at 4 Hz
        at(m, nvml, k * 0.25, energy_mj=[None, None], power_mw=[200_000, 0])
    assert job_j(m) == pytest.approx(2000)
    assert m.domains["gpu"].method == "power"
    assert window(m, nvml, 2.0, 3.1) == pytest.approx(220)


def test_unsupported_counter_integrates_a_power_ramp_by_trapezoid(nvml):
    m = make_meter(nvml)
    at(m, nvml, 0.0, energy_mj=[None, None], power_mw=[0, 0])
    at(m, nvml, 1.0, power_mw=[100_000, 0])
    at(m, nvml, 3.0, power_mw=[0, 40_000])
    # GPU0: 50 + 100; GPU1: 0 + 40 (left or right rectangles would give other values)
    assert job_j(m) == pytest.approx(190)
    # within the ramp-down interval: mean power of that interval (70 W total) times 1 s
    assert window(m, nvml, 1.5, 2.5) == pytest.approx(70)


def test_each_gpu_picks_its_method(nvml):
    m = make_meter(nvml)
    at(m, nvml, 0.0, energy_mj=[0, None], power_mw=[500_000, 100_000])
    at(m, nvml, 2.0, energy_mj=[30_000, None])  # GPU0: counter 30 J; GPU1: 100 W × 2 s
    assert job_j(m) == pytest.approx(230)
    assert m.domains["gpu"].method == "power"


@pytest.mark.parametrize("bad", [5_000, 2**62], ids=["reset", "absurd-jump"])
def test_counter_reset_falls_back_to_power_for_that_interval(nvml, bad):
    m = make_meter(nvml)
    at(m, nvml, 0.0, energy_mj=[1_000_000, 0], power_mw=[3_000, 0])
    at(m, nvml, 1.0, energy_mj=[1_001_000, 0])  # +1 J
    at(m, nvml, 2.0, energy_mj=[bad, 0])  # reset/wrap: 3 W × 1 s
    at(m, nvml, 3.0, energy_mj=[bad + 1_000, 0])  # counter again: +1 J
    assert job_j(m) == pytest.approx(5)
    assert m.job_metrics()["gpu.counter_fallbacks"] == 1
    assert m.domains["gpu"].method == "counter"
    assert window(m, nvml, 1.0, 2.0) == pytest.approx(3)


# -- an episode's GPU figures and gpu.csv -------------------------------------------------------------


def test_episode_figures_are_the_whole_gpus_while_it_ran(nvml):
    m = make_meter(nvml)
    at(m, nvml, 0.0, util=[5, 5], mem_bytes=[9000 * MIB, 0], temp=[99, 99], power_mw=[0, 0], energy_mj=[0, 0])
    nvml.now = 0.5
    ep = m.episode()
    at(
        m,
        nvml,
        1.0,
        util=[10, 30],
        mem_bytes=[1000 * MIB, 500 * MIB],
        temp=[40, 50],
        power_mw=[100_000, 50_000],
        energy_mj=[0, 0],
    )
    at(
        m,
        nvml,
        2.0,
        util=[90, 70],
        mem_bytes=[2000 * MIB, 100 * MIB],
        temp=[71, 60],
        power_mw=[300_000, 10_000],
        energy_mj=[200_000, 30_000],
    )
    at(
        m,
        nvml,
        3.0,
        util=[20, 0],
        mem_bytes=[1800 * MIB, 400 * MIB],
        temp=[65, 66],
        power_mw=[80_000, 10_000],
        energy_mj=[400_000, 40_000],
    )
    metrics = ep.finish()
    assert metrics == {  # (the sample at t=0 is before the episode)
        "gpu.energy_j": pytest.approx(440),
        "gpu.energy_llm_j": 0.0,
        "gpu.energy_rest_j": pytest.approx(440),
        "gpu.samples": 3.0,
        "gpu.power_w_mean": pytest.approx((150 + 310 + 90) / 3),
        "gpu.power_w_max": pytest.approx(310),
        "gpu.util_mean": pytest.approx(220 / 6),
        "gpu.mem_peak_mb": pytest.approx(2200),  # total used, not the largest single GPU
        "gpu.temp_max_c": pytest.approx(71),
    }
    assert all(isinstance(v, float) for v in metrics.values())


def test_gpu_csv_of_an_episode_holds_its_samples_and_the_jobs_all(nvml, tmp_path):
    m = make_meter(nvml)
    at(m, nvml, 0.0, energy_mj=[7, None], power_mw=[1500, 2500], mem_bytes=[3 * MIB, 0])
    ep = m.episode(tmp_path / "ep" / "gpu.csv")
    at(m, nvml, 0.25, energy_mj=[9, None])
    at(m, nvml, 0.5, energy_mj=[11, None])
    nvml.now = 0.5
    ep.finish()
    at(m, nvml, 0.75, energy_mj=[13, None])
    m.close(tmp_path / "gpu.csv")
    with open(tmp_path / "ep" / "gpu.csv", newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["t", "gpu", "util_pct", "mem_mb", "temp_c", "power_w", "energy_mj"]
    assert [r[:2] for r in rows[1:]] == [["0.0", "0"], ["0.0", "1"], ["0.25", "0"], ["0.25", "1"], ["0.5", "0"], ["0.5", "1"]]
    assert rows[1][3] == "3.0" and rows[1][5] == "1.5" and rows[2][5] == "2.5"
    assert rows[3][6] == "9" and rows[4][6] == ""  # empty when the counter is unsupported
    with open(tmp_path / "gpu.csv", newline="") as f:
        assert len(list(csv.reader(f))) == 1 + 2 * 5  # the job's: every sample, the last one at close


# -- the factory --------------------------------------------------------------------------------------


def test_no_library_gives_no_backend_with_one_info_line(nvml, fresh_announce, capsys):
    nvml.init_error = pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    assert make_gpu_backend() is None
    assert make_gpu_backend("local") is None
    err = capsys.readouterr().err
    assert err.splitlines() == ["mcpworld: no NVIDIA GPU here (NVMLError_LibraryNotFound): GPU metrics are off"]
    assert "nvmlDeviceGetCount" not in nvml.calls


def test_no_pynvml_module_gives_no_backend_with_one_info_line(monkeypatch, fresh_announce, capsys):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml → ImportError
    assert make_gpu_backend() is None
    assert make_gpu_backend() is None
    assert capsys.readouterr().err.splitlines() == ["mcpworld: no NVIDIA GPU here (pynvml is not installed): GPU metrics are off"]


def test_zero_devices_gives_no_backend_and_shuts_nvml_down(monkeypatch, fresh_announce, capsys):
    fake = FakeNvml(n=0).install(monkeypatch)
    assert make_gpu_backend() is None
    assert "nvmlShutdown" in fake.calls
    assert len(capsys.readouterr().err.splitlines()) == 1


def test_source_none_makes_no_nvml_call(nvml, fresh_announce, capsys):
    assert make_gpu_backend("none") is None
    assert nvml.calls == []
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("source", ["remote", "Local", ""])
def test_unknown_source_is_a_user_error(nvml, source):
    with pytest.raises(UserError) as e:
        make_gpu_backend(source)
    assert "telemetry.gpu.source" in str(e.value)
    assert "local" in str(e.value) and "prometheus" in str(e.value) and "none" in str(e.value)
    assert nvml.calls == []


def test_prometheus_without_a_url_is_a_user_error(nvml):
    with pytest.raises(UserError, match=r"telemetry\.gpu\.url"):
        make_gpu_backend("prometheus", None)


@pytest.mark.parametrize(("key", "value"), [("rate_hz", 0), ("idle_s", -1)])
def test_bad_rate_or_idle_time_is_a_user_error(nvml, key, value):
    cfg = TelemetryConfig()
    if key == "rate_hz":
        cfg.gpu.rate_hz = value
    else:
        cfg.idle_s = value
    with pytest.raises(UserError, match=f"telemetry.*{key}"):
        make_energy_meter(cfg)


def test_local_source_with_a_gpu_gives_a_meter_that_shuts_nvml_down(nvml, fresh_announce, capsys, tmp_path):
    cfg = TelemetryConfig()
    cfg.cpu.powercap_root = str(tmp_path / "no-powercap")
    cfg.ledger_dir = str(tmp_path / "ledger")
    meter, params = make_energy_meter(cfg)
    assert meter is not None and meter.ledger is not None and meter.ledger.path.parent == tmp_path / "ledger" / "local"
    assert isinstance(meter, EnergyMeter) and meter.interval == 0.25 and meter.idle_s == 5.0
    assert params["energy.gpu"] == "local NVML, 2 GPU(s)"
    assert nvml.calls[0] == "nvmlInit"
    meter.close()
    meter.close()
    assert nvml.calls.count("nvmlShutdown") == 1


# -- the sampler thread -------------------------------------------------------------------------------


def sampler_threads():
    return [t for t in threading.enumerate() if t.name == "energy-sampler"]


def test_thread_is_gone_after_close_and_stops_promptly(nvml):
    m = EnergyMeter({"gpu": NvmlBackend()}, rate_hz=0.1)  # a 10 s interval: close must not wait for it
    started = time.monotonic()
    m.start()
    assert m.running and len(sampler_threads()) == 1
    m.close()
    assert time.monotonic() - started < 1.5
    assert not m.running and sampler_threads() == []
    assert m.job_metrics()["gpu.samples"] == 2  # the first and the last


def test_the_thread_samples_and_an_episode_end_takes_a_sample_now(nvml):
    m = EnergyMeter({"gpu": NvmlBackend()}, rate_hz=0.01)
    m.start()
    try:
        ep = m.episode()
        ep.finish()
        assert len(m.domains["gpu"].ticks) == 2  # the start's and the finish's
    finally:
        m.close()


class Broken:
    def __init__(self):
        self.reads = 0

    def read(self) -> list[Sample]:
        self.reads += 1
        raise OSError("sensor gone")

    def close(self) -> None: ...


def test_a_backend_that_always_fails_never_raises_and_is_given_up(capsys):
    backend = Broken()
    m = EnergyMeter({"gpu": backend}, rate_hz=500, max_errors=3)
    m.start()
    deadline = time.monotonic() + 5
    while m.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not m.running  # gave up on its own
    m.episode().finish()
    m.close()
    assert backend.reads == 3 and m.domains["gpu"].errors == 3
    assert m.domains["gpu"].stopped_reason == "3 consecutive errors, last: OSError: sensor gone"
    assert m.job_metrics() == {"gpu.samples": 0.0, "gpu.sampling_errors": 3.0}
    assert sampler_threads() == []
    assert capsys.readouterr().err.count("gpu energy sampling stopped") == 1


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


def test_close_is_bounded_when_a_read_hangs(monkeypatch):
    monkeypatch.setattr(meter_module, "STOP_TIMEOUT_S", 0.2)
    backend = Hanging()
    m = EnergyMeter({"gpu": backend}, rate_hz=100)
    try:
        m.start()
        deadline = time.monotonic() + 5
        while backend.reads < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        started = time.monotonic()
        m.close()
        assert time.monotonic() - started < 1.5
    finally:
        backend.release.set()
    m._thread.join(5)
    assert sampler_threads() == []


# -- import cost --------------------------------------------------------------------------------------


def test_importing_the_modules_does_not_import_pynvml():
    code = (
        "import sys, mcpworld.telemetry.gpu, mcpworld.telemetry.energy.meter, mcpworld.telemetry.energy.factory; "
        "print('pynvml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
