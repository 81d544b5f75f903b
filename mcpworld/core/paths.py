"""Where mcpworld's files are: the one place that knows the layout.

What a run reads ships inside the package, so a wheel carries it and a checkout has it at the same
place: the Hydra config tree (``conf/``) and ``data/`` (the built-in tasks, oracle solutions, the
apps' golden profiles, app scripts, the desktop image's Docker files). What a machine builds or
downloads for runs (``.apps/``, ``.mcp-servers/``, ``.toolathlon-python/``) goes to HOME: the
checkout when mcpworld runs from one (or from a copy of one, as in the desktop image), a per-user
folder when it is installed in site-packages; ``MCPWORLD_HOME`` sets it for either.
"""

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # mcpworld/
PROJECT = PACKAGE.parent  # the folder holding the package: a checkout (or the image's copy), or site-packages
CONF_DIR = PACKAGE / "conf"  # the Hydra config tree
DATA = PACKAGE / "data"  # tasks/, solutions/, profiles/, scripts/, docker/
BUILTIN_TASKS = DATA / "tasks"  # the built-in tasks (tasks.root when unset)
DOCKER = DATA / "docker"  # the desktop image (desktop.Dockerfile) and compose files
INSTALLED = PROJECT.name in ("site-packages", "dist-packages")  # a wheel's install, not a checkout


def _home() -> Path:
    if os.environ.get("MCPWORLD_HOME"):
        return Path(os.environ["MCPWORLD_HOME"]).expanduser().resolve()
    if not INSTALLED:
        return PROJECT
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share").expanduser() / "mcpworld"


HOME = _home()  # this machine's state for runs: .apps/, .mcp-servers/, .toolathlon-python/
APPS = HOME / ".apps"  # what the apps' install scripts build (code-server, the VS Code probe's client)


def project_path(path: str) -> Path:
    """A relative path a config names (``scripts/code.sh``, ``profiles/vscode``, ``.apps/…``): the
    package's data when its first folder is one of data/'s, else this machine's HOME. An absolute
    path stays as it is."""
    first = Path(path).parts[0] if path else ""
    return (DATA if first and (DATA / first).is_dir() else HOME) / path
