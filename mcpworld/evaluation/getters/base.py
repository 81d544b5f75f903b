"""What every getter shares: the config-key check, the episode's cache directory, reading a file
that may not be there, and copying a file into the cache with the episode's home written as
``/home/user``.

Every getter is ``(env, cfg) -> value``. Paths are task paths (``~/x``, ``/home/user/x``); the
environment maps them onto the episode's home. A missing file or directory gives ``None``
(not an exception): the agent simply did not produce it, and every metric scores ``None`` as 0.
A config the task author got wrong (a missing key, an unsupported ``file_type``) raises
UserError so it surfaces as a configuration error, not as a silent failure of the agent.

Home paths in copied text config files. Apps write absolute paths into their config (VLC's
recording folder, LibreOffice's work directory, Chromium's download folder) using the episode's
real home directory, while task files spell them ``/home/user/...``. The config getters
therefore replace the episode home in the copied text by ``/home/user`` (``copy_to_cache``,
``canonical_home``) so metrics compare the task's view of the path. ``canonical_home: false`` in
the getter config keeps the bytes verbatim.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import UserError

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)

TASK_HOME = "/home/user"


def require(cfg: dict[str, Any], key: str) -> Any:
    """``cfg[key]``, or a UserError naming the getter and the missing key."""
    if key not in cfg or cfg[key] is None:
        raise UserError(f"getter {cfg.get('type', '?')!r} needs the key {key!r} in its config")
    return cfg[key]


def cache_target(env: Environment, dest: str, getter_name: str = "vm_file") -> Path:
    """Where a getter keeps a file it fetched: ``dest`` inside the episode's cache directory."""
    cache = Path(env.cache_dir)
    target = (cache / dest).resolve()
    if not target.is_relative_to(cache.resolve()):
        raise UserError(f"getter {getter_name!r}: dest {dest!r} points outside the cache directory")
    return target


def store(target: Path, data: bytes) -> str:
    """Write ``data`` at ``target`` (its folder made, the file replaced in one step); its path."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(target)
    return str(target)


def canonical_home(env: Environment, data: bytes) -> bytes:
    """``data`` with the episode's real home directory written as ``/home/user``."""
    homes = {str(env.home).rstrip("/"), str(Path(env.home).resolve()).rstrip("/")}
    for home in sorted(homes, key=len, reverse=True):
        if not home or home == TASK_HOME:
            continue
        # Not followed by a character that would continue the last path component (/tmp/x/home2).
        data = re.sub(re.escape(home.encode()) + rb"(?![\w.\-])", TASK_HOME.encode(), data)
    return data


def read_or_none(env: Environment, path: str) -> bytes | None:
    """The bytes of the file ``path``; None when there is no such file (or it is a folder)."""
    try:
        return env.read_file(path)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def copy_to_cache(env: Environment, cfg: dict[str, Any], path: str, dest: str, getter_name: str) -> str | None:
    """Copy ``path`` into ``cache_dir/dest`` (home canonicalised unless disabled); local path or None."""
    target = cache_target(env, dest, getter_name)
    data = read_or_none(env, path)
    if data is None:
        log.info("%s: %s does not exist in the environment", getter_name, path)
        target.unlink(missing_ok=True)  # never let a later reader see an older copy
        return None
    if cfg.get("canonical_home", True):
        data = canonical_home(env, data)
    return store(target, data)


def first_existing(env: Environment, candidates: list[str]) -> str:
    """The first candidate path that exists in the environment, else the first one."""
    for candidate in candidates:
        if env.stat(candidate) is not None:
            return candidate
    return candidates[0]


def true_false(value: Any) -> str:
    """OSWorld's and WAA's string booleans: ``"true"`` or ``"false"``."""
    return "true" if value else "false"
