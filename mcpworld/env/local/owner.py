"""Who made a leftover: cgroups, network and mount namespaces are named after the process that made
them (its pid and start time, epoch ms), so a later run removes only those whose maker is gone."""

from __future__ import annotations

from collections.abc import Sequence

import psutil


def maker_alive(parts: Sequence[str]) -> bool:
    """Whether the process a leftover's name starts with (``parts``: its pid, then its start time in
    epoch ms) still runs, and is not a recycled pid. A name of another shape: True (not ours to judge)."""
    try:
        pid, started = int(parts[0]), int(parts[1])
        return abs(psutil.Process(pid).create_time() * 1000 - started) < 1000
    except psutil.NoSuchProcess:
        return False
    except (IndexError, ValueError, psutil.Error):
        return True
