"""The generic getters: a file copied out of the environment (``vm_file``), a command's output, the
literal ``rules`` object, a directory listing, a text file's content, and a file in the task
cache (``cache_file``). See ``base`` for what a missing file and a config mistake give.
"""

from __future__ import annotations

import logging
import posixpath
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.getters.base import cache_target, require, store
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)


def _fetch_to_cache(env: Environment, path: str, dest: str) -> str | None:
    target = cache_target(env, dest)
    try:
        data = env.read_file(path)
    except FileNotFoundError:
        log.info("vm_file: %s does not exist in the environment", path)
        target.unlink(missing_ok=True)  # never let a later reader see an older copy
        return None
    return store(target, data)


def _as_list(value: Any, key: str) -> list[Any]:
    if not isinstance(value, list):
        raise UserError(f"getter 'vm_file' with multi: true needs {key!r} to be a list")
    return value


@getter("vm_file")
def vm_file(env: Environment, cfg: dict[str, Any]) -> str | list[str | None] | None:
    """Copy a file out of the environment into ``env.cache_dir/dest``; its local path, or None.

    ``multi: true`` takes lists for ``path``/``dest`` (None for a missing file); ``gives: [i, …]``
    (default ``[0]``, as in OSWorld) picks the entries returned, in ``path`` order whatever the
    order of ``gives``: one entry → that entry alone, several → a list. ``dest`` defaults to the
    file's basename.
    """
    if not cfg.get("multi"):
        path = require(cfg, "path")
        return _fetch_to_cache(env, path, cfg.get("dest") or posixpath.basename(path))

    paths = _as_list(require(cfg, "path"), "path")
    dests = _as_list(cfg["dest"], "dest") if cfg.get("dest") is not None else [posixpath.basename(p) for p in paths]
    if len(dests) != len(paths):
        raise UserError(f"getter 'vm_file': 'path' has {len(paths)} entries but 'dest' has {len(dests)}")
    gives = cfg.get("gives", [0])
    if not isinstance(gives, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and 0 <= i < len(paths) for i in gives
    ):
        raise UserError(f"getter 'vm_file': 'gives' must be a list of indices into 'path', got {gives!r}")
    # Fetch every file (a metric may read a sibling from the cache), return only those asked for.
    fetched = [_fetch_to_cache(env, p, d) for p, d in zip(paths, dests, strict=True)]
    picked = [fetched[i] for i in sorted(set(gives))]
    return picked[0] if len(picked) == 1 else picked


def _run(env: Environment, cfg: dict[str, Any]):
    command = require(cfg, "command")
    if isinstance(command, (list, tuple)):
        command = shlex.join(str(part) for part in command)
    # ``shell`` (OSWorld: run through a shell or as argv) makes no difference here: env.shell always
    # uses bash, and a list is quoted by shlex.join so it runs as the same argv.
    timeout = float(cfg.get("timeout", 30.0))
    result = env.shell(env.map_paths(command), timeout=timeout)
    if result.timed_out:
        raise TimeoutError(f"command timed out after {timeout:g}s: {command}")
    return result


@getter("vm_command_line")
def vm_command_line(env: Environment, cfg: dict[str, Any]) -> str:
    """Stdout of ``command`` run inside the environment (whatever its exit status)."""
    return _run(env, cfg).stdout


@getter("vm_command_error")
def vm_command_error(env: Environment, cfg: dict[str, Any]) -> str:
    """Stderr of ``command`` run inside the environment."""
    return _run(env, cfg).stderr


@getter("rule")
def rule(env: Environment, cfg: dict[str, Any]) -> Any:
    """The literal ``rules`` object; each metric defines its shape."""
    return require(cfg, "rules")


@getter("list_directory")
def list_directory(env: Environment, cfg: dict[str, Any]) -> list[str] | None:
    """Sorted entry names of the directory ``path``, or None if it does not exist."""
    try:
        return sorted(env.list_dir(require(cfg, "path")))
    except FileNotFoundError:
        return None


TEXT_TYPES = ("txt", "text")


@getter("content_from_vm_file")
def content_from_vm_file(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Decoded text of the file ``path`` (``file_type``: txt/text), or None if it does not exist."""
    path = require(cfg, "path")
    file_type = cfg.get("file_type", "txt")
    if file_type not in TEXT_TYPES:
        raise UserError(
            f"getter 'content_from_vm_file': file_type {file_type!r} is not supported (supported: {', '.join(TEXT_TYPES)})"
        )
    try:
        data = env.read_file(path)
    except FileNotFoundError:
        return None
    return data.decode("utf-8", errors="replace")


@getter("cache_file")
def cache_file(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Local path of a file in the task cache (relative ``path``) or on the host (absolute), or None.

    Typically the output a postconfig step saved into the cache. A missing file gives None
    (the anchor asserted, which aborted the whole task). A relative path may not leave the cache.
    """
    path = require(cfg, "path")
    if not isinstance(path, str) or not path:
        raise UserError(f"getter 'cache_file': 'path' must be a file name, got {path!r}")
    target = Path(path) if Path(path).is_absolute() else cache_target(env, path, "cache_file")
    return str(target) if target.is_file() else None
