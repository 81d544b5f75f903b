"""Local copies of application config files (VLC's vlcrc and its live status.xml, GIMP's gimprc,
LibreOffice's registrymodifications.xcu, a file a VS Code command writes), for the app-state metrics.

Text config files are copied with the episode's home written as ``/home/user`` (see ``base``); a
file the app never wrote gives None.
"""

from __future__ import annotations

import logging
import posixpath
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import InfraError
from mcpworld.evaluation.getters.base import copy_to_cache, first_existing, require
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)


@getter("vlc_config")
def vlc_config(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Local copy of VLC's ``vlcrc`` (``path``, default ``~/.config/vlc/vlcrc``) at ``dest``, or None."""
    path = cfg.get("path") or "~/.config/vlc/vlcrc"
    return copy_to_cache(env, cfg, path, cfg.get("dest") or "vlcrc", "vlc_config")


@getter("vlc_playing_info")
def vlc_playing_info(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Local copy (at ``dest``, default ``status.xml``) of the running VLC's ``status.xml`` from its
    HTTP interface (this desktop's port and password), or None when no VLC answers there."""
    import httpx

    port = getattr(env, "ports", {}).get("vlc")
    if port is None:
        raise InfraError("getter 'vlc_playing_info': this environment starts no VLC HTTP interface")
    try:
        reply = httpx.get(f"http://127.0.0.1:{port}/requests/status.xml", auth=("", env.app_password), timeout=10)
    except httpx.HTTPError as exc:
        log.info("vlc_playing_info: VLC's HTTP interface did not answer: %s", exc)
        return None
    if reply.status_code != 200:
        log.info("vlc_playing_info: VLC's HTTP interface answered %s", reply.status_code)
        return None
    target = Path(env.cache_dir) / (cfg.get("dest") or "status.xml")
    target.write_bytes(reply.content)
    return str(target)


GIMP_CONFIG_DIRS = ["~/.config/GIMP/2.10", "~/.config/GIMP/3.0"]


@getter("gimp_config_file")
def gimp_config_file(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Local copy of a GIMP config file (``file_name``, default ``gimprc``) at ``dest``, or None.

    The folder is ``config_dir`` if given, else ``~/.config/GIMP/2.10``, else ``.../3.0``
    (the first that holds the file).
    """
    name = cfg.get("file_name") or "gimprc"
    folders = [cfg["config_dir"]] if cfg.get("config_dir") else GIMP_CONFIG_DIRS
    path = first_existing(env, [posixpath.join(folder, name) for folder in folders])
    return copy_to_cache(env, cfg, path, cfg.get("dest") or posixpath.basename(name), "gimp_config_file")


@getter("libreoffice_config")
def libreoffice_config(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Local copy of LibreOffice's ``registrymodifications.xcu`` (``path`` overrides), or None.

    The metrics ``find_default_font`` and ``check_libre_locale`` read it.
    """
    path = cfg.get("path") or "~/.config/libreoffice/4/user/registrymodifications.xcu"
    return copy_to_cache(env, cfg, path, cfg.get("dest") or "registrymodifications.xcu", "libreoffice_config")


# --------------------------------------------------------------------------------------------
# VS Code


@getter("vscode_config")
def vscode_config(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Run a VS Code command by its palette name, then copy the file it writes: local path, or None.

    ``vscode_extension_command`` is typed into the command palette (Ctrl+Shift+P) of the active
    VS Code window and run; OSWorld's tasks install an evaluation extension whose command writes
    ``path`` (e.g. the open folder's name into ~/OpenProject.txt). Waits up to ``timeout`` seconds
    (default 5; OSWorld waited 1) for the file to appear or change, then copies it to ``dest``.
    """
    command = require(cfg, "vscode_extension_command")
    path = require(cfg, "path")

    def mtime() -> int | None:  # (asked of the environment: on a suite's VM the file is not on this host)
        found = env.stat(path)
        return None if found is None else found.mtime_ns

    before = mtime()
    env.act({"kind": "key", "keys": "ctrl+shift+p"})
    time.sleep(0.5)
    env.act({"kind": "type", "text": str(command)})
    time.sleep(0.5)
    env.act({"kind": "key", "keys": "Return"})
    deadline = time.monotonic() + float(cfg.get("timeout", 5.0))
    while time.monotonic() < deadline:
        now = mtime()
        if now is not None and now != before:
            time.sleep(0.2)  # let the extension finish writing
            break
        time.sleep(0.1)
    return copy_to_cache(env, {"canonical_home": False}, path, cfg.get("dest") or posixpath.basename(path), "vscode_config")
