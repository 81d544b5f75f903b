"""A client of the /evaluate service, for harnesses other than mcpworld's (standard library only).

    from mcpworld.evaluation.client import EvaluationClient
    client = EvaluationClient.from_endpoint("/tmp/mcpworld-live-…")   # the folder the server printed
    client.reset("task.json"); …  # the harness's agent works on the desktop
    verdict = client.evaluate("task.json")                        # {"score", "success", "metrics", …}

    python -m mcpworld.evaluation.client URL|FOLDER TASK_FILE [--reset] [--final-action FAIL] [--token-file F]

Both server modes (``--home`` and ``--live``) answer only their token. It comes from ``--token-file``
/ ``token_file=``, else ``MCPWORLD_EVAL_TOKEN``, else the served folder's ``token`` (0600, beside its
``endpoint.json``); it is sent as ``Authorization: Bearer …`` and never printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

TOKEN_VARIABLE = "MCPWORLD_EVAL_TOKEN"  # the token, for the service (both modes) and this client
ENDPOINT_FILE = "endpoint.json"  # what a served folder holds besides its `token`


class EvaluationError(Exception):
    """The service refused or failed a request: ``status`` 400 (the task), 401 (the token), 403 (a
    foreign Host or Origin), 404, 415 (not JSON), 503 (the desktop failed: no verdict), or 0 when it
    could not be reached."""

    def __init__(self, status: int, message: str):
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status


def task_body(task: dict[str, Any] | str | Path) -> dict[str, Any]:
    """What a request carries for ``task``: a mapping as it is; a ``.json`` task file's content (so a
    service on another machine can read it); any other task file or folder by its path on this machine
    (a task.yaml or an MCPWorld folder names files next to it)."""
    if isinstance(task, dict):
        return dict(task)
    path = Path(task).expanduser().resolve()
    if path.suffix == ".json" and path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not valid JSON: {exc}") from None
        if isinstance(data, dict) and "evaluator" in data:
            return data
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such task file")
    return {"task_file": str(path)}


class EvaluationClient:
    def __init__(self, url: str, token: str | None = None, timeout_s: float = 900.0):
        self.url = url.rstrip("/")
        self._token = token
        self.timeout_s = timeout_s

    @classmethod
    def from_endpoint(cls, path: str | Path, token_file: str | Path | None = None, timeout_s: float = 900.0) -> EvaluationClient:
        """The service a served folder (or its endpoint.json) describes."""
        path = Path(path)
        endpoint = json.loads((path / ENDPOINT_FILE if path.is_dir() else path).read_text())
        return cls(endpoint["url"], read_token(token_file, endpoint.get("token_file")), timeout_s)

    def evaluate(self, task: dict[str, Any] | str | Path, final_action: str = "DONE") -> dict[str, Any]:
        """The verdict on the desktop as it is now: ``score``, ``success``, ``status``, ``metrics`` …"""
        return self._request("POST", "/evaluate", dict(task_body(task), final_action=final_action))

    def reset(self, task: dict[str, Any] | str | Path) -> dict[str, Any]:
        """A fresh desktop set up for ``task`` (context and setup steps, as an episode starts)."""
        return self._request("POST", "/reset", task_body(task))

    def health(self) -> dict[str, Any]:
        """The desktop's display, viewer and current task."""
        return self._request("GET", "/health", None)

    def _request(self, method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
                answer: dict[str, Any] = json.loads(reply.read())
                return answer
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read()).get("error", exc.reason)
            except (json.JSONDecodeError, UnicodeDecodeError, AttributeError):
                message = exc.reason
            raise EvaluationError(exc.code, str(message)) from None
        except (urllib.error.URLError, OSError) as exc:
            raise EvaluationError(0, f"{self.url} does not answer: {getattr(exc, 'reason', exc)}") from None


def read_token(token_file: str | Path | None = None, fallback_file: str | Path | None = None) -> str | None:
    """``token_file``'s token, else ``MCPWORLD_EVAL_TOKEN``, else ``fallback_file``'s; None when none is set."""
    if token_file:
        return Path(token_file).read_text().strip()
    if os.environ.get(TOKEN_VARIABLE):
        return os.environ[TOKEN_VARIABLE]
    if fallback_file and Path(fallback_file).is_file():
        return Path(fallback_file).read_text().strip()
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mcpworld.evaluation.client",
        description="Grade a task on a running /evaluate service; print the verdict as JSON.",
    )
    parser.add_argument("url", help="the service's URL, or the folder (endpoint.json) the server printed")
    parser.add_argument("task_file", type=Path, help="an OSWorld/WAA .json, a task.yaml or an MCPWorld task folder")
    parser.add_argument("--reset", action="store_true", help="set the desktop up for the task instead of grading it")
    parser.add_argument(
        "--final-action", default="DONE", choices=["DONE", "FAIL"], help="how the agent ended (matters for infeasible tasks)"
    )
    parser.add_argument("--token-file", type=Path, help=f"file holding the token (else ${TOKEN_VARIABLE})")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for the answer")
    args = parser.parse_args(argv)
    prog = "mcpworld.evaluation.client: error:"
    try:
        if args.url.startswith(("http://", "https://")):
            client = EvaluationClient(args.url, read_token(args.token_file), args.timeout)
        else:
            client = EvaluationClient.from_endpoint(args.url, args.token_file, args.timeout)
        answer = client.reset(args.task_file) if args.reset else client.evaluate(args.task_file, args.final_action)
    except (OSError, ValueError, KeyError) as exc:
        print(f"{prog} {exc}", file=sys.stderr)
        return 2
    except EvaluationError as exc:
        print(f"{prog} {exc}", file=sys.stderr)
        return 2 if 400 <= exc.status < 500 else 1
    print(json.dumps(answer, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
