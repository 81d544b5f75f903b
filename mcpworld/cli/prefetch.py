"""``python -m mcpworld.cli.prefetch tasks.root=<suite> [task=…] [files.mirror=…]``: download every
file the selected tasks name by URL into the file cache ahead of a run, and say what failed.

Same overrides as a run (Hydra composes the config) and the same task selection (``tasks.*``, ``app``,
``task``, ``toolathlon.*``, ``pccanary.*``: mcpworld/tasks/select.py ``find_tasks``), so a later
``python -m mcpworld`` with the same ``files.*`` finds everything in the cache. Exit status 1 when any
file could not be had.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException

from mcpworld.config.schema import register
from mcpworld.core.downloads import DownloadError
from mcpworld.core.errors import UserError
from mcpworld.core.paths import CONF_DIR
from mcpworld.run.progress import DownloadProgress
from mcpworld.tasks.remote_files import file_cache, remote_urls
from mcpworld.tasks.select import find_tasks
from mcpworld.tasks.settings import TaskSettings


def prefetch(overrides: list[str], workers: int = 4) -> int:
    register()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=overrides)
    settings = TaskSettings.of(cfg)  # the tasks a run with these overrides would choose, loaded as it loads them
    tasks = find_tasks(settings)
    root = settings.selection.root
    needed: dict[str, list[str]] = {}
    for task in tasks:
        for url in remote_urls(task):
            needed.setdefault(url, []).append(task.id)
    with DownloadProgress() as progress:
        cache = file_cache(cfg.files, progress=progress.update)
        had = {url for url in needed if cache.cached(url)}
        print(
            f"prefetch: {len(tasks)} task(s) under {root} name {len(needed)} file(s) by URL; "
            f"{len(had)} already in the cache or mirror ({cache.root})",
            file=sys.stderr,
        )

        def fetch(url: str) -> str | None:
            try:
                cache.fetch(url)
                return None
            except DownloadError as exc:
                return exc.cause

        todo = [u for u in needed if u not in had]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            failures = {u: why for u, why in zip(todo, pool.map(fetch, todo), strict=True) if why}
    for url, why in failures.items():
        tasks_of = needed[url]
        print(
            f"  FAILED {url}: {why} (needed by {', '.join(tasks_of[:3])}"
            f"{f' and {len(tasks_of) - 3} more' if len(tasks_of) > 3 else ''})",
            file=sys.stderr,
        )
    blocked = {t for url in failures for t in needed[url]}
    print(
        f"prefetch: {len(todo) - len(failures)} downloaded, {len(failures)} failed; "
        f"{len(blocked)} task(s) would be skipped for a missing file",
        file=sys.stderr,
    )
    return 1 if failures else 0


def main() -> None:
    try:
        sys.exit(prefetch(sys.argv[1:]))
    except UserError as exc:
        print(f"prefetch: {exc}", file=sys.stderr)
        sys.exit(2)
    except HydraException as exc:  # a bad override: Hydra's message and its cause, one line
        cause = str(exc.__cause__).splitlines()[0] if exc.__cause__ else ""
        print(f"prefetch: {exc}" + (f" ({cause})" if cause else ""), file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
