"""A fake NVML: pynvml's functions monkeypatched over scripted GPUs, on a clock the test sets."""

from __future__ import annotations

import pynvml

MIB = 1024 * 1024


class FakeGpu:
    def __init__(self) -> None:
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


def at(meter, nvml, t, **per_gpu):
    """Set the clock and each GPU's readings (lists, one value per GPU), then sample once."""
    nvml.now = t
    for name, values in per_gpu.items():
        for g, v in zip(nvml.gpus, values, strict=True):
            setattr(g, name, v)
    meter.sample_once()


class SteadyGpu(FakeGpu):
    """A GPU at a steady power on the real clock: its counter (mJ) is that power times the seconds."""

    def __init__(self, watts: float) -> None:
        super().__init__()
        import time

        self._clock = time.monotonic
        self._t0 = self._clock()
        self.watts = watts

    @property  # type: ignore[override]
    def energy_mj(self) -> int:
        return int((self._clock() - self._t0) * self.watts * 1000)

    @energy_mj.setter
    def energy_mj(self, value) -> None:
        pass

    @property  # type: ignore[override]
    def power_mw(self) -> int:
        return int(self.watts * 1000)

    @power_mw.setter
    def power_mw(self, value) -> None:
        pass
