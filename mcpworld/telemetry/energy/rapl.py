"""CPU package energy from RAPL through the Linux powercap tree (``/sys/class/powercap``).

Each top-level zone ``intel-rapl:N`` is one CPU package (AMD's Zen packages appear under the same
name). Its ``energy_uj`` is a counter that wraps to 0 after ``max_energy_range_uj``; the reader
unwraps it, so the energy series sees a counter that only grows. Sub-zones (``intel-rapl:N:M``: core,
uncore, dram) are not read: core and uncore are inside the package's figure and DRAM is not counted.
Since Linux 5.10 ``energy_uj`` is readable by root only; where nothing is readable the factory says
why once and the job records it as a param.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from mcpworld.telemetry.gpu import Sample

POWERCAP = Path("/sys/class/powercap")
ZONE = re.compile(r"intel-rapl:(\d+)")


class RaplUnavailable(Exception):
    """No readable RAPL package zone under the powercap root."""


class RaplBackend:
    """``read()`` gives one sample per package: the unwrapped counter in mJ, power from the last step."""

    def __init__(self, root: Path = POWERCAP, clock: Callable[[], float] = time.monotonic):
        self.root = Path(root)
        self._clock = clock
        if not self.root.is_dir():
            raise RaplUnavailable(f"no {self.root}")
        zones = sorted((p for p in self.root.iterdir() if ZONE.fullmatch(p.name)), key=lambda p: int(p.name[11:]))
        if not zones:
            raise RaplUnavailable(f"no intel-rapl:N zone under {self.root}")
        self.zones: list[Path] = zones
        self.names = [_text(z / "name", z.name) for z in zones]
        try:
            self._range = [int((z / "max_energy_range_uj").read_text()) for z in zones]
            raw = [int((z / "energy_uj").read_text()) for z in zones]
        except OSError as e:  # PermissionError: root only since Linux 5.10
            raise RaplUnavailable(f"{type(e).__name__} reading {zones[0]}/energy_uj") from e
        self._raw = raw
        self._wraps = [0] * len(zones)
        self._last: list[tuple[float, float] | None] = [None] * len(zones)  # t, unwrapped µJ

    def read(self) -> list[Sample]:
        t = self._clock()
        out = []
        for i, zone in enumerate(self.zones):
            raw = int((zone / "energy_uj").read_text())
            if raw < self._raw[i]:
                self._wraps[i] += 1  # wrapped past max_energy_range_uj
            self._raw[i] = raw
            uj = raw + self._wraps[i] * self._range[i]
            last = self._last[i]
            power = (uj - last[1]) / 1e6 / (t - last[0]) if last and t > last[0] else 0.0
            self._last[i] = (t, uj)
            out.append(Sample(t=t, gpu=i, util_pct=0.0, mem_mb=0.0, temp_c=0.0, power_w=power, energy_mj=uj / 1000))
        return out

    def close(self) -> None:
        pass


def _text(path: Path, default: str) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return default
