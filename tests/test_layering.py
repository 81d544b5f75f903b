"""Import-time promises: heavy dependencies load only where used; lower layers never import higher ones."""

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mcpworld"


def test_tracking_none_runs_without_importing_mlflow():
    code = ("import sys; from omegaconf import OmegaConf; import mcpworld.experiment, mcpworld.episode; "
            "from mcpworld.telemetry.tracking import make_tracker; "
            "t = make_tracker(OmegaConf.create({'tracking': {'backend': 'none'}})); "
            "t.start_job('x', {}, {}); t.finish_job({}, []); "
            "print('mlflow' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_gui_episodes_never_import_the_mcp_sdk():
    code = "import sys, mcpworld.experiment, mcpworld.episode; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"  # 0.7 s of imports only when a modality starts MCP servers


# package → packages it must never import (DESIGN.md: one direction only)
FORBIDDEN = {
    "env": ("mcpworld.agent", "mcpworld.evaluation", "mcpworld.episode", "mcpworld.experiment", "mcpworld.telemetry.tracking"),
    "evaluation": ("mcpworld.agent", "mcpworld.episode", "mcpworld.experiment"),
    "agent": ("mcpworld.evaluation", "mcpworld.episode", "mcpworld.experiment"),
    "tasks": ("mcpworld.agent", "mcpworld.evaluation", "mcpworld.episode", "mcpworld.experiment"),
    "mcp": ("mcpworld.agent", "mcpworld.env", "mcpworld.tasks", "mcpworld.evaluation", "mcpworld.episode",
            "mcpworld.experiment", "mcpworld.servers"),
    "telemetry": ("mcpworld.agent", "mcpworld.env", "mcpworld.evaluation", "mcpworld.episode", "mcpworld.experiment"),
    "probes": ("mcpworld.agent", "mcpworld.evaluation", "mcpworld.tasks", "mcpworld.episode", "mcpworld.experiment"),
}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_lower_layers_never_import_higher_ones():
    offences = []
    for package, forbidden in FORBIDDEN.items():
        for path in (PKG / package).rglob("*.py"):
            for name in imported_modules(path):
                if name.startswith(forbidden):
                    offences.append(f"{path.relative_to(PKG)} imports {name}")
    assert offences == []
