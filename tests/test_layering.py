"""Import-time promises: heavy dependencies load only where used; packages import one way only."""

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mcpworld"

# The packages from the bottom up (docs/ARCHITECTURE.md). A package may import those before it,
# never one after it; packages of one row are siblings and import neither way.
LAYERS: list[tuple[str, ...]] = [
    ("core",),
    ("config",),
    ("telemetry", "probes"),
    ("apps",),
    ("tasks", "env"),
    ("mcp",),
    ("evaluation",),
    ("agent",),
    ("run",),
    ("report",),
    ("certify",),
    ("cli",),
]
RANK = {package: rank for rank, row in enumerate(LAYERS) for package in row}
TOP_LEVEL = {"__init__", "__main__"}  # the only modules outside a package; __main__ only calls cli
DATA = {"conf", "data"}  # folders of data shipped in the package, not code (tasks' graders included)

# Inside env/: one folder per backend, and what they share at the top. A backend's folder imports
# the shared modules and the backends listed here (docker's container runs a local desktop inside,
# through its service); the shared modules import no backend; env/__init__.py (the registry) builds them all.
ENV_BACKENDS: dict[str, set[str]] = {"local": set(), "docker": {"local"}, "vm": set()}


def test_tracking_none_runs_without_importing_mlflow():
    code = (
        "import sys; from omegaconf import OmegaConf; import mcpworld.run.job, mcpworld.run.episode; "
        "from mcpworld.telemetry.tracking.tracker import make_tracker; "
        "t = make_tracker(OmegaConf.create({'backend': 'none'})); "
        "t.start_job('x', {}, {}); t.finish_job({}, []); "
        "print('mlflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_gui_episodes_never_import_the_mcp_sdk():
    code = "import sys, mcpworld.run.job, mcpworld.run.episode; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"  # 0.7 s of imports only when a modality starts MCP servers


def test_the_desktop_service_imports_only_what_its_image_holds():
    """python -m mcpworld.env.docker.service runs in the desktop image, with only
    mcpworld/data/docker/service-requirements.txt."""
    code = (
        "import sys, mcpworld.env.docker.service; "
        "print(sorted(m for m in ('hydra', 'omegaconf', 'mlflow', 'mcp', 'jinja2') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def imported_modules(path: Path) -> set[str]:
    """Every mcpworld module a file imports, at the top or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            if node.module == "mcpworld":  # `from mcpworld import run`
                names.update(f"mcpworld.{a.name}" for a in node.names)
    return {n for n in names if n.startswith("mcpworld.")}


def package_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


def layering_offences(root: Path) -> list[str]:
    offences = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if len(rel.parts) == 1:
            if rel.stem not in TOP_LEVEL:
                offences.append(f"{rel} is a loose top-level module: it belongs in one of {sorted(RANK)}")
            continue
        own = rel.parts[0]
        if own in DATA:
            continue
        if own not in RANK:
            offences.append(f"{rel.parts[0]}/ is not a known layer: add it to LAYERS in tests/test_layering.py")
            continue
        for name in imported_modules(path):
            other = package_of(name)
            if other and other != own and RANK[other] >= RANK[own]:
                offences.append(f"{rel} ({own}) imports {name} ({other}), which is not below it")
    return offences


def test_every_package_imports_only_the_layers_below_it():
    assert layering_offences(PKG) == []


def env_offences(root: Path) -> list[str]:
    """Imports across env/'s backend folders that ENV_BACKENDS does not allow."""
    offences = []
    env = root / "env"
    for path in sorted(env.rglob("*.py")):
        rel = path.relative_to(env)
        if rel.parts == ("__init__.py",):
            continue
        own = rel.parts[0] if len(rel.parts) > 1 else None  # None: a shared module
        if own is not None and own not in ENV_BACKENDS:
            offences.append(f"env/{rel}: env/{own}/ is not a backend: add it to ENV_BACKENDS in tests/test_layering.py")
            continue
        allowed = {own, *ENV_BACKENDS[own]} if own else set()
        for name in imported_modules(path):
            parts = name.split(".")
            if parts[:2] == ["mcpworld", "env"] and len(parts) > 2 and parts[2] in ENV_BACKENDS and parts[2] not in allowed:
                offences.append(f"env/{rel} ({own or 'shared'}) imports {name}, another backend's")
    return offences


def test_env_backends_import_only_what_they_share_and_build_on():
    assert sorted(p.name for p in (PKG / "env").iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(ENV_BACKENDS)
    assert env_offences(PKG) == []


def test_env_backend_imports_across_folders_would_be_caught(tmp_path: Path):
    for rel, line in [
        ("env/steps.py", "from mcpworld.env.local.display import VirtualDisplay"),
        ("env/local/bad.py", "from mcpworld.env.docker.service import host_paths"),
        ("env/vm/bad.py", "import mcpworld.env.local.processes"),
        (
            "env/docker/ok.py",
            "from mcpworld.env.local.environment import LocalEnvironment\nfrom mcpworld.env.base import Environment",
        ),
        ("env/__init__.py", "from mcpworld.env.vm.environment import VmEnvironment"),
    ]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(line + "\n")
    offences = env_offences(tmp_path)
    assert [o.split(" ")[0] for o in offences] == ["env/local/bad.py", "env/steps.py", "env/vm/bad.py"]


def test_the_cycles_that_were_broken_would_be_caught(tmp_path: Path):
    """env <-> tasks and env <-> apps were cycles once: the check must fail on either again."""
    for package, line in [
        ("env", "from mcpworld.tasks.select import discover"),
        ("tasks", "from mcpworld.env.steps import run_steps"),
        ("apps", "from mcpworld.env.local.environment import LocalEnvironment"),
        ("core", "import mcpworld.run.job"),
    ]:
        (tmp_path / package).mkdir(exist_ok=True)
        (tmp_path / package / "bad.py").write_text(line + "\n")
    (tmp_path / "loose.py").write_text("")
    offences = layering_offences(tmp_path)
    assert len(offences) == 5 and all(o.startswith(("env/", "tasks/", "apps/", "core/", "loose.py")) for o in offences)
