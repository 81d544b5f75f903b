"""Child process that hosts an MCPWorld ``handler.py`` (task-author code) outside the harness.

It gives the handler what PC-Canary's evaluator gives it: ``register_handlers(evaluator)`` gets an
object with ``config`` (the task's config.json, ``sql_path`` mapped), ``logger``, ``task_path`` and
``canary_root``; Python hooks (StateInspector's ``hooker.py``, or the handler itself in the role of
hook) are loaded and their ``inspector_on_start`` run at once.

Protocol, one JSON object per line. In: ``{"op": "message", "message": {...}}``,
``{"op": "complete"}`` (the hooks' ``inspector_on_completion`` when there are any, else the
completion message to the handler; ``"message"`` gives the one to send) or ``{"op": "ping"}``
(nothing: is it alive?). Out: ``{"updates": [...]}`` or ``{"error": "..."}``; a handler that
cannot be loaded prints ``{"fatal": "..."}`` and exits; one that loaded (its Python hooks'
``inspector_on_start`` done) prints ``{"ready": true}`` first.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

COMPLETION_MESSAGE = {
    "event": "evaluate_on_completion",
    "event_type": "evaluate_on_completion",
    "type": "send",
    "payload": {"event": "evaluate_on_completion"},
}


def _normalise(updates: Any) -> list[dict[str, Any]]:
    if updates is None:
        return []
    if isinstance(updates, dict):
        updates = [updates]
    return [u for u in updates if isinstance(u, dict)] if isinstance(updates, list) else []


def _load(path: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} cannot be loaded as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _prepare(
    path: str, params: dict[str, Any], setup: dict[str, Any], logger: logging.Logger
) -> tuple[Callable[..., Any], list[Callable[..., Any]]]:
    """The handler's message function and the hooks' completion functions."""
    root = setup.get("root")
    for folder in (str(Path(path).parent), root):  # PC-Canary runs from its root
        if folder and folder not in sys.path:
            sys.path.insert(0, folder)
    sys.path += [folder for folder in setup.get("python_path") or [] if folder not in sys.path]  # the app's modules
    config = dict(setup.get("config") or {}, task_parameters=params)
    evaluator = SimpleNamespace(
        config=config, logger=logger, task_path=str(Path(path).parent), task_id=config.get("task_id"), canary_root=root
    )
    module = _load(path, "handler")
    if hasattr(module, "register_handlers"):
        handle = module.register_handlers(evaluator)
    else:
        handle = getattr(module, "message_handler", None)
    if handle is None:
        raise LookupError(f"{path} defines neither message_handler nor register_handlers")
    hooks = [module if hook == path else _load(hook, f"hook_{n}") for n, hook in enumerate(setup.get("hooks") or [])]
    if not setup:  # a bare handler (our own tasks): it may carry the inspector functions itself
        hooks = [module]
    for hook in hooks:
        if hasattr(hook, "inspector_on_start"):
            hook.inspector_on_start()
    return handle, [h.inspector_on_completion for h in hooks if hasattr(h, "inspector_on_completion")]


def main() -> int:
    path, params = sys.argv[1], json.loads(sys.argv[2])
    setup = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    logging.basicConfig(stream=sys.stderr, level=logging.INFO)
    logger = logging.getLogger("handler")
    out, sys.stdout = sys.stdout, sys.stderr  # task code's prints must not garble the protocol
    try:
        handle, on_completion = _prepare(path, params, setup, logger)
    except BaseException as exc:
        print(
            json.dumps({"fatal": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}), file=out, flush=True
        )
        return 1
    print(json.dumps({"ready": True}), file=out, flush=True)  # the hooks have taken their first look
    for line in sys.stdin:
        request = json.loads(line)
        collected: list[dict[str, Any]] = []

        # called only within this request's iteration; the default binds this request's list all the same
        def feed(message: dict[str, Any], _data: Any = None, *, collected: list[dict[str, Any]] = collected) -> None:
            collected.extend(_normalise(handle(message, logger, params)))

        try:
            if request["op"] == "ping":
                pass
            elif request["op"] == "complete" and on_completion and "message" not in request:
                for inspect in on_completion:
                    inspect(feed)
            else:
                feed(request.get("message", COMPLETION_MESSAGE))
            print(json.dumps({"updates": collected}, default=str), file=out, flush=True)
        except Exception as exc:
            print(
                json.dumps({"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-2000:]}),
                file=out,
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
