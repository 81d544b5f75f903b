"""Shared by the notes tasks' hooks (a hook dependency, as PC-Canary's anki tasks share common/)."""
import os
from pathlib import Path


def vault() -> Path:
    return Path(os.environ["HOME"]) / "workspace" / ".mcpworld" / "notes" / "vault"
