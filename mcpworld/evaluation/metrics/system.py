"""Metrics over the desktop system: clipboard text, time zone, favourite apps, and a task's test
suite run against the agent's code inside the desktop.
"""

from __future__ import annotations

import ast
import base64
import json
import posixpath
import secrets
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import InfraError, UserError
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric

if TYPE_CHECKING:
    from mcpworld.env.base import Environment


# --------------------------------------------------------------------------------------------
# clipboard


@metric("is_in_vm_clickboard")
def is_in_vm_clickboard(result: Any, expected: Any) -> float:
    """1 when the clipboard text holds ``rules["expected"]`` (a string, or a list of strings that must
    all be in it).

    OSWorld's task passes the rule as ``result`` and the clipboard (``xsel --clipboard --output``)
    as ``expected``; the other order works too. No clipboard text scores 0.
    """
    rules, text = (result, expected) if isinstance(result, dict) else (expected, result)
    wanted = rule_value(rules, "expected", "is_in_vm_clickboard")
    if not isinstance(text, str):
        return 0.0
    needles = wanted if isinstance(wanted, list) else [wanted]
    return float(all(str(needle) in text for needle in needles))


# --------------------------------------------------------------------------------------------
# time zone


@metric("is_utc_0")
def is_utc_0(result: str | None) -> float:
    """1 when ``timedatectl status`` output says the time zone is at UTC+0 (its ``Time zone:`` line
    ends ``+0000)``, as in ``Etc/UTC (UTC, +0000)``).

    OSWorld took the fourth output line, which is that line only where the machine has a
    real-time clock (timedatectl drops its ``RTC time:`` line otherwise, as in a container); this
    finds the line by its label. Like OSWorld it takes the line as it is (a trailing space or
    ``\\r`` fails). No output (timedatectl needs systemd) scores 0.
    """
    if not isinstance(result, str):
        return 0.0
    line = next((ln for ln in result.split("\n") if ln.lstrip().startswith("Time zone:")), "")
    return float(line.endswith("+0000)"))


# --------------------------------------------------------------------------------------------
# GNOME favourite apps


@metric("check_gnome_favorite_apps")
def check_gnome_favorite_apps(result: str | None, rules: Any) -> float:
    """1 when GNOME Shell's favourite apps (``gsettings get org.gnome.shell favorite-apps``) are
    exactly ``rules["expected"]`` (a list of .desktop names), in any order.

    The desktop needs the org.gnome.shell schema: without GNOME Shell the command prints nothing
    and the score is 0. OSWorld ``eval``'d the output; this reads it as a Python literal only (a
    list or tuple; GVariant's empty ``@as []`` is not one and scores 0, as in OSWorld).
    """
    expected = rule_value(rules, "expected", "check_gnome_favorite_apps")
    if not isinstance(expected, list):
        raise UserError(f"metric 'check_gnome_favorite_apps': 'expected' must be a list of .desktop names, got {expected!r}")
    if not isinstance(result, str):
        return 0.0
    try:
        apps = ast.literal_eval(result)
        return float(len(apps) == len(expected) and set(apps) == set(expected))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return 0.0


# --------------------------------------------------------------------------------------------
# a test suite run against the agent's files

# Runs inside the desktop as its user: imports the suite from the working directory (the agent's
# files beside it, as OSWorld lays them out in its cache) and writes the outcome to a file.
_RUNNER = r"""
import importlib.util, json, os, sys
suite, function, report = sys.argv[1:4]
sys.path.insert(0, os.getcwd())
def write(value):
    with open(report, "w") as out:
        json.dump(value, out)
try:
    spec = importlib.util.spec_from_file_location("mcpworld_test_suite", suite)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    test = getattr(module, function, None)
    if not callable(test):
        raise LookupError("the suite has no function %r" % function)
    outcome = test()
except BaseException as exc:
    write({"error": "%s: %s" % (type(exc).__name__, exc)})
else:
    if isinstance(outcome, bool):
        score = float(outcome)
    elif isinstance(outcome, (int, float)):
        score = max(0.0, min(1.0, float(outcome)))
    else:
        score = float(bool(outcome))
    write({"score": score})
"""

# One bash -c argument may hold at most 128 KiB (MAX_ARG_STRLEN); files go in in smaller pieces.
_CHUNK = 60_000


def _checked(env: Environment, command: str, what: str, timeout: float = 30.0) -> str:
    result = env.shell(command, timeout=timeout)
    if result.returncode != 0:
        raise InfraError(
            f"check_python_file_by_test_suite: {what} failed in the environment "
            f"(exit {result.returncode}): {result.stderr.strip()[-300:]}"
        )
    return result.stdout


def _put_file(env: Environment, path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` inside the environment (as its user), through the shell."""
    encoded = base64.b64encode(data).decode()
    target = shlex.quote(path)
    _checked(env, f"mkdir -p {shlex.quote(posixpath.dirname(path))} && : > {target}", f"creating {path}")
    for start in range(0, len(encoded), _CHUNK):
        _checked(env, f"printf %s {encoded[start : start + _CHUNK]} | base64 -d >> {target}", f"writing {path}")


def _suite_files(result: Any, expected: str) -> dict[str, bytes]:
    """``{name: bytes}``: the agent's files under their cache names, and the suite under its own."""
    paths = [p for p in (result if isinstance(result, list) else [result]) if p]
    files = {Path(p).name: Path(p).read_bytes() for p in paths if Path(p).is_file()}
    files[Path(expected).name] = Path(expected).read_bytes()
    return files


@metric("check_python_file_by_test_suite", needs_env=True)
def check_python_file_by_test_suite(
    result: Any,
    expected: str | None,
    *,
    env: Environment | None = None,
    test_function_name: str = "test",
    timeout: float = 120.0,
) -> float:
    """The score the task's test suite gives the agent's Python files, in [0, 1].

    result = local copies of the agent's files (getter ``vm_file``, ``multi``), expected = the test
    suite (a .py file defining ``test_function_name``, default ``test``). As in OSWorld the files
    sit side by side, the suite is imported with that folder as working directory and first on
    ``sys.path``, and its function's return value is the score: a bool is 1/0, a number is clamped
    to [0, 1], anything else counts by truth. An exception (the agent's code failing to import or
    crashing) or a run past ``timeout`` seconds scores 0.

    Unlike OSWorld, which imported the suite into its own grading process, the suite runs inside
    the desktop as its user (``env.shell``, a fresh temporary folder), with the desktop's python3
    and the packages the task's setup installed there.
    """
    if env is None:
        raise InfraError("metric 'check_python_file_by_test_suite' runs the suite in the desktop and needs the environment")
    if not isinstance(test_function_name, str) or not test_function_name.isidentifier():
        raise UserError(
            f"metric 'check_python_file_by_test_suite': test_function_name must be a Python name, got {test_function_name!r}"
        )
    if not result or not expected or not Path(expected).is_file():
        return 0.0
    files = _suite_files(result, expected)
    folder = _checked(env, 'mktemp -d "${TMPDIR:-/tmp}/mcpworld-suite.XXXXXX"', "making a temporary folder").strip()
    report = f"report-{secrets.token_hex(6)}.json"
    try:
        for name, data in files.items():
            _put_file(env, posixpath.join(folder, name), data)
        run = env.shell(
            f"cd {shlex.quote(folder)} && python3 -c {shlex.quote(_RUNNER)} "
            f"{shlex.quote(Path(expected).name)} {shlex.quote(test_function_name)} {report}",
            timeout=float(timeout),
        )
        if run.timed_out:
            return 0.0
        if run.returncode == 127:
            raise InfraError("metric 'check_python_file_by_test_suite' needs python3 in the environment")
        outcome = env.shell(f"cat {shlex.quote(posixpath.join(folder, report))}", timeout=30.0)
    finally:
        env.shell(f"rm -rf {shlex.quote(folder)}", timeout=30.0)
    try:
        value = json.loads(outcome.stdout)
    except ValueError:
        return 0.0  # the suite killed its interpreter before reporting
    score = value.get("score") if isinstance(value, dict) else None
    return float(score) if isinstance(score, (int, float)) else 0.0
