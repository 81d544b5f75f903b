"""A golden home laid out on a full disk is the machine's failure, said in one line (found by
benchmarks/soak.py filling the work folders' disk: it was a "harness error" with every file's error)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from mcpworld.core.errors import InfraError
from mcpworld.env.context import build_golden


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs (root)")
def test_a_full_disk_under_the_golden_home_is_an_infra_error_in_one_line(tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    (profile / ".config" / "app").mkdir(parents=True)
    for i in range(3):
        (profile / ".config" / "app" / f"state{i}.bin").write_bytes(os.urandom(64 << 10))
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32k", "soak-test", str(disk)], check=True)
    try:
        with pytest.raises(InfraError) as caught:
            build_golden([], disk / "golden", under=[profile])
        message = str(caught.value)
        assert "No space left on device" in message and f"{disk / 'golden'}" in message
        assert "more file(s)" in message and message.count("No space left") == 1
    finally:
        subprocess.run(["umount", str(disk)], check=True)
