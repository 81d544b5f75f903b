"""The files a task names by URL, fetched before its episodes run.

``download`` steps (setup and evaluator postconfig) become ``copy`` steps from the local file, and
``cloud_file`` getter configs (OSWorld's gold files) get the local path in place of the URL, so an
episode never waits on the network and a file that cannot be had skips the task (after trying)
instead of failing the agent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from mcpworld.core.downloads import DownloadError, FileCache, is_remote
from mcpworld.core.errors import UserError
from mcpworld.core.steps import normalize_step
from mcpworld.core.task import Task

FETCH_HINT = (
    "fetch the suite's files ahead with `python -m mcpworld.cli.prefetch tasks.root=<folder>`, "
    "or serve a local copy with files.mirror=<folder> (files.rewrite maps URL prefixes)"
)


def _steps(task: Task) -> Iterator[Sequence[object]]:
    yield task.setup
    if task.evaluator is not None:
        yield task.evaluator.postconfig


def _cloud_configs(task: Task) -> Iterator[dict[str, Any]]:
    yield from (cfg for cfg in task.evaluator.getters() if cfg.get("type") == "cloud_file") if task.evaluator else ()


def remote_urls(task: Task) -> list[str]:
    """Every http(s) URL the task's steps download or its evaluator's cloud_file getters read."""
    urls: list[str] = []
    for steps in _steps(task):
        for step in steps:
            kind, params = normalize_step(step)
            if kind == "download":
                urls.append(str(params["url"]))
    for cfg in _cloud_configs(task):
        paths = cfg.get("path")
        urls += [str(p) for p in (paths if isinstance(paths, list) else [paths]) if p]
    return [u for u in dict.fromkeys(urls) if is_remote(u)]


def localize(task: Task, cache: FileCache) -> str | None:
    """Fetch the task's remote files and point its steps and getters at them; the skip reason
    when one cannot be had (the URL, the cause and the fix), else None."""
    local: dict[str, str] = {}
    for url in remote_urls(task):
        try:
            local[url] = str(cache.fetch(url))
        except DownloadError as exc:
            return f"{exc}; {FETCH_HINT}"

    def copy_of(params: Mapping[str, object]) -> dict[str, object]:
        return {"src": local.get(str(params["url"]), str(params["url"])), "dest": params["dest"]}

    task.setup = [step.replaced("copy", copy_of(step.params)) if step.kind == "download" else step for step in task.setup]
    if task.evaluator is not None:  # postconfig steps are the spec's own mappings: replaced in its list
        steps = task.evaluator.postconfig
        for i, step in enumerate(steps):
            kind, params = normalize_step(step)
            if kind == "download":
                steps[i] = {"copy": copy_of(params)}
    for cfg in _cloud_configs(task):
        paths = cfg.get("path")
        cfg["path"] = [local.get(str(p), p) for p in paths] if isinstance(paths, list) else local.get(str(paths), paths)
    return None


def localize_all(tasks: list[Task], cache: FileCache, workers: int = 4) -> None:
    """``localize`` every task not already skipped, a few downloads at a time; failures become
    the task's skip_reason."""
    todo = [t for t in tasks if not t.skip_reason and remote_urls(t)]
    if not todo:
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for task, reason in zip(todo, pool.map(lambda t: localize(t, cache), todo), strict=True):
            task.skip_reason = reason


def rewrite_rules(value: Any) -> dict[str, str]:
    """``files.rewrite`` as {URL prefix: target}: a mapping, or a list of [prefix, target] pairs."""
    if not value:
        return {}
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and all(isinstance(p, Sequence) and not isinstance(p, str) and len(p) == 2 for p in value)
    ):
        return {str(p[0]): str(p[1]) for p in value}
    raise UserError(
        f"files.rewrite: expected a mapping of URL prefix to URL prefix or folder, or a list of "
        f"[prefix, target] pairs (files.rewrite=[[https://host/,/data/mirror]]), got {value!r}"
    )


def file_cache(files: Any, progress: Any = None) -> FileCache:
    """A FileCache from the run's ``files`` config (FilesConfig or a DictConfig of it)."""
    from mcpworld.core.downloads import default_cache_dir

    return FileCache(
        root=Path(files.cache_dir).expanduser() if files.cache_dir else default_cache_dir(),
        mirror=Path(files.mirror).expanduser() if files.mirror else None,
        rewrite=rewrite_rules(files.rewrite),
        retries=int(files.retries),
        timeout_s=float(files.timeout_s),
        progress=progress,
    )
