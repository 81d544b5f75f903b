"""The file probe (mcpworld/probes/files.py): sees changes anywhere under the home, quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# Folders made with their subfolders at once, as an app's first start on a fresh machine makes its
# profile: watchdog's recursive watch adds some of them twice and warns (a RuntimeWarning of kilobytes).
SCRIPT = """
import shutil, subprocess, sys, time
from pathlib import Path
from mcpworld.probes.files import HomeChanges

home = Path(sys.argv[1])
probe = HomeChanges(home)
for i in range(30):  # (mkdir -p: each level made after the last, while the probe walks the tree)
    subprocess.run(["mkdir", "-p", str(home / f"profile{i}/a/b/c/d/e")], check=True)
    (home / f"profile{i}/a/b/c/d/e/prefs.js").write_text("x")
shutil.copytree(sys.argv[2], home / "copy")
time.sleep(1)
probe.close()
print("changed" if probe.take() else "unchanged")
"""


def test_a_tree_made_at_once_is_seen_without_library_warnings(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    tree = Path(__file__).resolve().parents[2] / "mcpworld" / "tasks"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(home), str(tree)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "changed"
    assert done.stderr == ""  # watchdog's duplicate-watch RuntimeWarning is not dumped on the user
