"""Install the catalog's local MCP servers at their pinned versions, each Python server in its own
venv (their ``mcp`` pins disagree: git needs 2.x, terminal and pdf-tools need 1.x) and the npm
servers in one ``npm`` prefix, all under ``servers_dir``. Idempotent: a server whose pins are
already installed is left alone.

    python -m mcpworld.mcp.install [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from mcpworld.core.interpreters import find_python
from mcpworld.core.paths import CONF_DIR, HOME

ROOT = HOME  # this machine's state (mcpworld.core.paths): a relative servers_dir is in it
CATALOG_FILE = CONF_DIR / "mcp" / "default.yaml"


def load_settings() -> dict[str, Any]:
    return yaml.safe_load(CATALOG_FILE.read_text())


def servers_dir(configured: str | None = None) -> Path:
    """``servers_dir`` from the config; a relative one is in HOME (the checkout, or MCPWORLD_HOME), not the cwd."""
    path = Path(configured or load_settings()["servers_dir"])
    return path if path.is_absolute() else ROOT / path


def _pip(name: str, spec: dict[str, Any], root: Path) -> str:
    pins = list(spec["pip"])
    venv = root / name
    stamp = venv / ".pins"
    python = find_python(str(spec.get("python", f"{sys.version_info[0]}.{sys.version_info[1]}")))
    if python is None:
        return f"skipped: needs Python {spec['python']}, not found (tasks using it will be skipped)"
    made = {"pins": pins, "python": python}  # a venv over another interpreter is made again
    if stamp.is_file() and json.loads(stamp.read_text()) == made:
        return "up to date"
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *pins], check=True)
    stamp.write_text(json.dumps(made))
    return "installed " + " ".join(pins)


def _npm(packages: list[str], root: Path) -> str:
    prefix = root / "npm"
    stamp = prefix / ".pins"
    if stamp.is_file() and json.loads(stamp.read_text()) == sorted(packages):
        return "up to date"
    if shutil.which("npm") is None:
        return "skipped: npm is not installed (apt-get install nodejs npm)"
    prefix.mkdir(parents=True, exist_ok=True)
    subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(prefix), *packages], check=True)
    stamp.write_text(json.dumps(sorted(packages)))
    return "installed " + " ".join(packages)


def install(names: list[str] | None = None) -> dict[str, str]:
    settings = load_settings()
    catalog = settings["catalog"]
    unknown = sorted(set(names or []) - set(catalog))
    if unknown:
        raise SystemExit(f"mcpworld.mcp.install: unknown server(s) {', '.join(unknown)}; known: {', '.join(catalog)}")
    root = servers_dir(settings["servers_dir"])
    root.mkdir(parents=True, exist_ok=True)
    chosen = {n: catalog[n] for n in (names or catalog)}
    report = {}
    npm = sorted({s["install"]["npm"] for s in chosen.values() if "npm" in s.get("install", {})})
    if names is None or npm:  # all npm servers share one prefix: install them together
        npm = sorted({s["install"]["npm"] for s in catalog.values() if "npm" in s.get("install", {})})
        outcome = _npm(npm, root)
        report.update({n: outcome for n, s in catalog.items() if "npm" in s.get("install", {})})
    pip = {n: s["install"] for n, s in chosen.items() if "pip" in s.get("install", {})}
    with ThreadPoolExecutor(max_workers=4) as pool:  # downloads overlap; ≈ 2.2 min sequential on 2 cores
        for name, outcome in zip(pip, pool.map(lambda n: _pip(n, pip[n], root), pip), strict=True):
            report[name] = outcome
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.mcp.install", description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="catalog servers to install (default: all)")
    args = parser.parse_args(argv)
    for name, outcome in install(args.names or None).items():
        print(f"  {name:<12} {outcome}")


if __name__ == "__main__":
    main()
