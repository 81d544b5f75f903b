"""An app's own settings (``mcpworld/conf/app/<app>.yaml``), whichever app selection runs its tasks: the
selected app config when it is that app's, else the app's file (``app=all`` runs every app).

App files are read from every ``app/`` folder of the run's Hydra search path, so an app config kept in
one's own repository (``hydra.searchpath=[file:///path/to/conf]`` with ``app/myapp.yaml``) is as much
an app as a built-in: its program starts, its tasks resolve. As in Hydra, the first folder that holds
a name wins (the package's own first). Outside a Hydra run, only the package's folder is read."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import yaml
from omegaconf import OmegaConf

from mcpworld.apps.programs import Program
from mcpworld.core.errors import UserError
from mcpworld.core.paths import CONF_DIR, DATA, HOME, project_path

if TYPE_CHECKING:
    from mcpworld.config.schema import AppConfig

CONF_APPS = CONF_DIR / "app"


def app_setting(selected: AppConfig, app: str, key: str, default: Any = None) -> Any:
    """A setting of ``app``'s config: from the run's selected app config (``selected``, with the
    user's overrides) when that is the app, else from the app's file."""
    if selected.name == app:
        value = OmegaConf.select(cast(Any, selected), key, default=default)
        return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value
    return _app_file(app).get(key, default)


def app_folders() -> tuple[Path, ...]:
    """The ``app/`` folders of the run's Hydra search path in its order: the package's, then those of
    each ``hydra.searchpath`` entry (``file://`` or ``pkg://``) that has one."""
    from hydra.core.hydra_config import HydraConfig

    folders = [CONF_APPS]
    if HydraConfig.initialized():
        for source in HydraConfig.get().runtime.config_sources:
            if source.schema == "file":
                folders.append(Path(source.path) / "app")
            elif source.schema == "pkg" and source.provider != "hydra":
                folders += [Path(p) / "app" for p in _package_folders(source.path)]
    return tuple(dict.fromkeys(f.resolve() for f in folders if f.is_dir()))


def _package_folders(package: str) -> list[str]:
    try:
        spec = importlib.util.find_spec(package)
    except ImportError:  # Hydra says so itself when it looks for a config there
        return []
    return list(spec.submodule_search_locations or []) if spec else []


def _app_path(app: str, folders: tuple[Path, ...]) -> Path | None:
    return next((f / f"{app}.yaml" for f in folders if (f / f"{app}.yaml").is_file()), None)


def _app_file(app: str) -> dict[str, Any]:
    """The app's file (asked for at every episode: read once per process and search path)."""
    return _read_app(app, app_folders())


@cache
def _read_app(app: str, folders: tuple[Path, ...]) -> dict[str, Any]:
    path = _app_path(app, folders)
    return (yaml.safe_load(path.read_text()) or {}) if path is not None else {}


def programs() -> tuple[Program, ...]:
    """Every app config's ``program:`` section: the desktop applications a desktop can start."""
    return _programs(app_folders())


@cache
def _programs(folders: tuple[Path, ...]) -> tuple[Program, ...]:
    found = []
    for app in sorted({path.stem for folder in folders for path in folder.glob("*.yaml")}):
        data = _read_app(app, folders)
        if data.get("program"):
            found.append(_program(cast(Path, _app_path(app, folders)), data["program"]))
    return tuple(found)


def _program(path: Path, spec: dict[str, Any]) -> Program:
    where = f"{path}: program"
    if not isinstance(spec, dict) or not spec.get("binary"):
        raise UserError(f"{where}: needs at least 'binary' (the executable) and 'names' (the commands tasks use)")
    unknown = set(spec) - PROGRAM_KEYS
    if unknown:
        raise UserError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(PROGRAM_KEYS))}")
    strays = set(spec.get("sockets") or ()) - set(spec.get("ports") or ())
    if strays:
        raise UserError(f"{where}: sockets: {', '.join(sorted(strays))} must be among its ports")
    packages = spec.get("packages") or {}
    unknown = set(packages) - {"apt", "script"}
    if unknown:
        raise UserError(f"{where}: packages: unknown kind(s) {', '.join(sorted(unknown))}; use apt and script")
    install = (
        f"make apps APPS={path.stem}"
        if packages.get("script")
        else f"apt-get install -y {' '.join(packages['apt'])}"
        if packages.get("apt")
        else ""
    )
    profile = project_path(str(spec["profile"])) if spec.get("profile") else None
    binary, launcher = (_in_project(str(spec[k])) if spec.get(k) else "" for k in ("binary", "launcher"))
    if profile is not None and not profile.is_dir():
        raise UserError(f"{where}: profile folder {spec['profile']!r} does not exist (relative to {DATA})")
    return Program(
        app=path.stem,
        binary=binary,
        names=tuple(spec.get("names") or [spec["binary"]]),
        args=tuple(str(a) for a in spec.get("args") or ()),
        drop=tuple(spec.get("drop") or ()),
        ports=tuple(spec.get("ports") or ()),
        env={k: str(v) for k, v in (spec.get("env") or {}).items()},
        profile=profile,
        install=install or f"install {spec['binary']}",
        ready=dict(spec.get("ready") or {}),
        packages={k: [v] if isinstance(v, str) else list(v) for k, v in packages.items()},
        maximized=bool(spec.get("maximized")),
        window=str(spec.get("window") or ""),
        warm=tuple(str(w) for w in spec.get("warm") or ()),
        launcher=launcher,
        sockets=tuple(str(s) for s in spec.get("sockets") or ()),
    )


def _in_project(path: str) -> str:
    """A relative path with a folder in it (``scripts/…``: the package's data; ``.apps/…``: this
    machine's, see mcpworld.core.paths) is the project's; a bare name is looked up on PATH."""
    return str(project_path(path)) if "/" in path and not path.startswith("/") else path


PROGRAM_KEYS = {
    "binary",
    "names",
    "args",
    "drop",
    "ports",
    "env",
    "profile",
    "packages",
    "ready",
    "maximized",
    "window",
    "warm",
    "launcher",
    "sockets",
}


def missing_packages(names: list[str] | None = None) -> dict[str, list[str]]:
    """The apt packages (by app) the chosen apps (all with a program when None) need and lack."""
    chosen = [p for p in programs() if not names or p.app in names]
    unknown = sorted(set(names or []) - {p.app for p in programs()})
    if unknown:
        raise UserError(
            f"no app config with a program is named {', '.join(unknown)}; known: {', '.join(p.app for p in programs())}"
        )
    missing: dict[str, list[str]] = {}
    for program in chosen:
        lacking = [
            pkg
            for pkg in program.packages.get("apt", [])
            if subprocess.run(["dpkg", "-s", pkg], capture_output=True).returncode != 0
        ]
        if lacking:
            missing[program.app] = lacking
    return missing


def install(names: list[str] | None = None) -> int:
    """Install the apt packages the chosen apps lack (``make apps [APPS="gimp vlc"]``)."""
    missing = missing_packages(names)
    packages = sorted({pkg for pkgs in missing.values() for pkg in pkgs})
    if packages:
        print(f"apps: installing {' '.join(packages)} (for {', '.join(missing)})")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], env=env, check=True)
    else:
        print("apps: every Debian package is installed")
    for program in programs():  # what Debian lacks, by the app's own script (idempotent)
        if (not names or program.app in names) and program.packages.get("script"):
            for script in program.packages["script"]:
                subprocess.run([_in_project(script)], check=True, env=dict(os.environ, MCPWORLD_HOME=str(HOME)))
    return 0


def main() -> None:
    try:
        sys.exit(install(sys.argv[1:] or None))
    except UserError as exc:
        sys.exit(f"apps: {exc}")
    except subprocess.CalledProcessError as exc:
        sys.exit(f"apps: `{' '.join(map(str, exc.cmd))}` failed (exit {exc.returncode}); see its output above")
