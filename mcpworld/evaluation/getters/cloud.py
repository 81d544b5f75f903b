"""``cloud_file``: the gold files an OSWorld/WAA task names by URL (``expected`` of most Office tasks).

A run has already fetched them (mcpworld/tasks/remote_files.py puts the local file's path in place
of the URL); a URL still here (standalone grading) goes through the default file cache. Like
OSWorld, each file is placed at ``env.cache_dir/<dest>`` and ``gives`` (default ``[0]``) picks the
entries returned, in file order: one entry is returned as a path, several as a list.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from mcpworld.core.downloads import DownloadError, FileCache
from mcpworld.core.errors import InfraError, UserError
from mcpworld.evaluation.getters.base import cache_target, require
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment


@getter("cloud_file")
def cloud_file(env: Environment, cfg: dict[str, Any]) -> str | list[str]:
    """Gold file(s) named by URL (``path``, ``dest``; ``multi``, ``gives``), copied into the cache dir."""
    multi = bool(cfg.get("multi"))
    paths, dests = require(cfg, "path"), cfg.get("dest")
    if multi:
        if not isinstance(paths, list) or not isinstance(dests, list) or len(paths) != len(dests):
            raise UserError("getter 'cloud_file' with multi: true needs 'path' and 'dest' lists of one length")
    else:
        paths, dests = [paths], [dests or os.path.basename(str(paths))]
    gives = set(cfg.get("gives", [0]))
    out = []
    for i, (url, dest) in enumerate(zip(paths, dests, strict=True)):
        if i not in gives:  # OSWorld fetches these too, only to leave them unused
            continue
        try:
            local = FileCache().fetch(str(url))
        except DownloadError as exc:  # the gold file, not the agent's work: never the agent's failure
            raise InfraError(f"getter 'cloud_file': {exc}") from None
        target = cache_target(env, str(dest), "cloud_file")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.resolve() != local.resolve():
            shutil.copyfile(local, target)
        out.append(str(target))
    return out[0] if len(out) == 1 else out
