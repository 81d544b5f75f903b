"""Secrets: keys that must never reach a file, a log line, MLflow or the agent.

Two kinds of masking: by NAME (a config key or override that looks secret: ``provider.api_key=…``
in a YAML line or a command line) and by VALUE (the known secret values of this run — secret-named
environment variables and config values — wherever they turn up, e.g. in a tool's output that the
agent printed). ``redact`` applies the second; traces and saved tool outputs go through it.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from typing import Any

# whole words of a key (``api_key``, ``access_token``), not ``max_tokens``
SECRET_KEY = re.compile(r"(^|[_.-])(api[_-]?key|apikey|token|secret|password|passwd|authorization)($|[_.-])", re.I)
ASSIGNMENT = re.compile(r"([A-Za-z0-9_.-]+)(\s*[=:]\s*)([^\s,\]]+)")


def strip_secrets(data: Any) -> Any:
    """A config tree with secret-named keys' values replaced by ``***`` (for config artifacts)."""
    if isinstance(data, dict):
        return {k: ("***" if SECRET_KEY.search(str(k)) and v is not None else strip_secrets(v)) for k, v in data.items()}
    if isinstance(data, list):
        return [strip_secrets(v) for v in data]
    return data


def mask_secrets(text: str) -> str:
    """``provider.api_key=sk-…`` (an override, a YAML line) with its value hidden; ``max_tokens``
    and the like are not secrets."""

    def hide(m: re.Match[str]) -> str:  # a value may itself hold an assignment: key: a.api_key=…
        return "".join((m.group(1), m.group(2), "'***'" if SECRET_KEY.search(m.group(1)) else mask_secrets(m.group(3))))

    return ASSIGNMENT.sub(hide, text)


MIN_SECRET_LEN = 8  # shorter values would mask ordinary words
_known: set[str] = set()
_lock = threading.Lock()
_env_read = False


def register_secrets(values: Iterable[Any]) -> None:
    """Remember secret values to redact (config values such as provider.api_key)."""
    with _lock:
        _known.update(str(v) for v in values if v is not None and len(str(v)) >= MIN_SECRET_LEN)


def environment_secrets() -> list[str]:
    """Values of this process's secret-named environment variables (ANTHROPIC_API_KEY, HF_TOKEN …)."""
    return [v for k, v in os.environ.items() if SECRET_KEY.search(k)]


def redact(text: str) -> str:
    """``text`` with every known secret value replaced by ``***``."""
    global _env_read
    if not _env_read:
        _env_read = True
        register_secrets(environment_secrets())
    for value in sorted(_known, key=len, reverse=True):
        if value in text:
            text = text.replace(value, "***")
    return text


def redact_tree(data: Any) -> Any:
    """Every string inside a JSON-like value redacted."""
    if isinstance(data, str):
        return redact(data)
    if isinstance(data, dict):
        return {k: redact_tree(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_tree(v) for v in data]
    return data


HANDOFF_FD = "MCPWORLD_SECRETS_FD"


def hide_from_proc(argv: list[str]) -> list[str]:
    """Keep this run's secrets out of ``/proc/<pid>/environ`` and ``/proc/<pid>/cmdline``, which any
    process of the same user (the agent's shell, until the desktop runs as its own user) can read.

    When the environment holds secret-named variables or the command line a secret override, the
    process starts itself again (exec) without them: masked argv, no secret variables, and both
    handed over through a pipe that only the new image reads. It puts them back into ``os.environ``
    and ``sys.argv``, which live in process memory that ``/proc`` does not show. Returns the real
    arguments (in the new image) or ``argv`` unchanged; does not return when it execs."""
    import json
    import sys

    handoff = os.environ.pop(HANDOFF_FD, None)
    if handoff is not None:  # the new image: take the secrets back from the pipe
        with os.fdopen(int(handoff), "r", encoding="utf-8") as pipe:
            saved = json.load(pipe)
        os.environ.update(saved["env"])
        return list(saved["argv"])
    secret_env = {k: v for k, v in os.environ.items() if SECRET_KEY.search(k)}
    masked = [mask_secrets(a) for a in argv]
    if not secret_env and masked == argv:
        return argv
    payload = json.dumps({"env": secret_env, "argv": argv}).encode()
    read_end, write_end = os.pipe()
    if len(payload) >= 60_000:  # a pipe holds 64 KiB; more would block before the exec
        os.close(read_end)
        os.close(write_end)
        return argv
    os.write(write_end, payload)
    os.close(write_end)
    os.set_inheritable(read_end, True)
    env = {k: v for k, v in os.environ.items() if k not in secret_env}
    env[HANDOFF_FD] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "mcpworld", *masked], env)  # does not return
