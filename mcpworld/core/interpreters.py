"""Finding a Python interpreter of a given version that the desktop account can run too."""

from __future__ import annotations

import glob
import shutil
import subprocess
import sys
from pathlib import Path


def find_python(version: str) -> str | None:
    """An interpreter of ``version`` (e.g. "3.12"): the distribution's first (the desktop account,
    which runs the servers, can run it; one under /root is closed to it), then ours, then pyenv's."""
    system = Path(f"/usr/bin/python{version}")
    if system.is_file():
        return str(system)
    if sys.version_info[:2] == tuple(int(p) for p in version.split(".")):
        return sys.executable
    found = shutil.which(f"python{version}")
    if found and subprocess.run([found, "--version"], capture_output=True).returncode == 0:
        return found
    for candidate in sorted(glob.glob(str(Path.home() / f".pyenv/versions/{version}*/bin/python{version}"))):
        return candidate
    return None
