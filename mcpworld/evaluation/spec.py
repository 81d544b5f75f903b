"""Score one task's ``evaluator`` spec: OSWorld/WAA semantics with their known bugs fixed.

Spec keys: ``func`` (a metric name or a list), ``result`` / ``expected`` (getter configs, parallel
lists when ``func`` is a list; ``expected`` entries may be null), ``options`` (keyword arguments
per metric; null → {}), ``conj`` (``and``, the default, or ``or``), ``postconfig`` (setup steps run
before the getters), ``infeasible: true`` (same as ``func: infeasible``).

Scoring:

- infeasible task: 1 when the agent's final action is FAIL, else 0. Any other task ending in FAIL
  scores 0. Both are decided before touching the environment, so postconfig does not run.
- ``and``: 0 as soon as a metric scores 0, else the mean (partial credit). ``or``: 1 as soon as
  a metric scores 1, else the max. Getters run lazily, metric by metric, so after an early exit
  later getters never run. Metrics skipped by an early exit are NOT recorded in the outcomes
  (their score would be a made-up number in trackers); the deciding metric's reason says how many
  were skipped.

Fixed anchor bugs: a getter or metric that raises scores that metric 0 with the reason
``"getter <type>: <Exc>: msg"`` / ``"metric <name>: <Exc>: msg"`` instead of aborting the task;
every metric gets fresh getter results (no stale reuse under ``or``); a non-numeric or NaN metric
value scores 0; scores are clamped to [0, 1].
Each outcome's ``actual`` and ``expected`` show what the metric compared: a file a getter copied into
the episode's cache by its content (text, cut with a note) or its name, size and sha256 (``shown``),
not by the copy's path, which is gone after the episode.
Postconfig as OSWorld runs it: a step that finds no window to activate or close (the agent may
have closed the app) is logged and grading goes on, so the getters see what the agent left; any
other failing step is the environment's (the episode is an infra error, never a score of 0).
Configuration mistakes (UserError) and environment failures in getters/metrics (InfraError)
propagate: they are not the agent's failure.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcpworld.core.errors import InfraError, MissingWindow, UserError
from mcpworld.core.result import MetricOutcome
from mcpworld.core.secrets import redact
from mcpworld.evaluation.registry import get_getter, get_metric, metric_needs_env

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)

INFEASIBLE = "infeasible"
CONJUNCTIONS = ("and", "or")
PREVIEW_CHARS = 200
FILE_TEXT_CHARS = 2000  # a compared text file is shown whole up to this many characters
REASON_CHARS = 500
PASSTHROUGH = (UserError, InfraError)


@dataclass(frozen=True)
class SpecPlan:
    """A validated spec with its lists made parallel."""

    infeasible: bool
    funcs: tuple[str, ...] = ()
    results: tuple[dict[str, Any], ...] = ()
    expected: tuple[dict[str, Any] | None, ...] = ()
    options: tuple[dict[str, Any], ...] = ()
    conj: str = "and"
    postconfig: tuple[dict[str, Any], ...] = ()

    def outcome_names(self) -> list[str]:
        """Metric names for outcomes; a name used twice gets ``#<index>`` so trackers keep both."""
        counts = Counter(self.funcs)
        return [f"{f}#{i}" if counts[f] > 1 else f for i, f in enumerate(self.funcs)]


def _parallel(spec: dict[str, Any], key: str, n: int, listed: bool, where: str) -> list[Any]:
    """``spec[key]`` as a list of n entries (None for an absent key)."""
    value = spec.get(key)
    if not listed:
        if isinstance(value, list):
            raise UserError(f"{where}: evaluator.{key} is a list but evaluator.func is a single name")
        return [value]
    if value is None:
        return [None] * n
    if not isinstance(value, list):
        raise UserError(f"{where}: evaluator.func is a list, so evaluator.{key} must be a list of {n} entries")
    if len(value) != n:
        raise UserError(f"{where}: evaluator.{key} has {len(value)} entries but evaluator.func has {n}")
    return value


def _check_getter_cfg(cfg: Any, key: str, where: str) -> None:
    if not isinstance(cfg, dict) or not isinstance(cfg.get("type"), str):
        raise UserError(f"{where}: evaluator.{key} entries must be getter configs with a 'type', got {cfg!r}")
    try:
        get_getter(cfg["type"])
    except UserError as exc:
        raise UserError(f"{where}: evaluator.{key}: {exc}") from None


def _check_options(name: str, options: dict[str, Any], where: str) -> None:
    """Options are keyword arguments of the metric: a misspelled one (``ignore_cse``) is named with
    the metric's real ones, before any episode, instead of failing the metric as if the agent had."""
    import difflib
    import inspect

    fn = get_metric(name)
    params = list(inspect.signature(fn).parameters.values())
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    known = [
        p.name
        for p in params[1:]
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        and not (p.name == "env" and metric_needs_env(fn))
    ]
    for key in options:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UserError(
                f"{where}: evaluator.options: metric {name!r} has no option {key!r}; {hint}"
                f"its options: {', '.join(k for k in known if k != 'expected') or 'none'}"
            )


def validate_spec(spec: Any, where: str) -> SpecPlan:
    """Check a spec up front; UserError naming ``where`` (the task file) and the bad key."""
    if not isinstance(spec, dict):
        raise UserError(f"{where}: evaluator must be a mapping, got {type(spec).__name__}")
    postconfig = spec.get("postconfig") or []
    if not isinstance(postconfig, list) or not all(isinstance(step, dict) for step in postconfig):
        raise UserError(f"{where}: evaluator.postconfig must be a list of steps")
    func = spec.get("func")
    if func == INFEASIBLE or spec.get("infeasible"):
        # Scored from the final action alone; any func/result keys are ignored.
        return SpecPlan(infeasible=True, postconfig=tuple(postconfig))
    if func is None:
        raise UserError(f"{where}: evaluator.func is missing (a metric name, a list of them, or 'infeasible')")
    listed = isinstance(func, list)
    funcs = func if listed else [func]
    if not funcs or not all(isinstance(f, str) for f in funcs):
        raise UserError(f"{where}: evaluator.func must be a metric name or a non-empty list of names, got {func!r}")
    for name in funcs:
        if name == INFEASIBLE:
            raise UserError(f"{where}: evaluator.func: 'infeasible' must be the only func")
        try:
            get_metric(name)
        except UserError as exc:
            raise UserError(f"{where}: evaluator.func: {exc}") from None
    n = len(funcs)
    if spec.get("result") is None:
        raise UserError(f"{where}: evaluator.result is missing (the getter config(s) for the agent's result)")
    results = _parallel(spec, "result", n, listed, where)
    expected = _parallel(spec, "expected", n, listed, where)
    options = _parallel(spec, "options", n, listed, where)
    for cfg in results:
        _check_getter_cfg(cfg, "result", where)
    for cfg in expected:
        if cfg is not None:
            _check_getter_cfg(cfg, "expected", where)
    for name, opts in zip(funcs, options, strict=True):
        if opts is not None and not isinstance(opts, dict):
            raise UserError(f"{where}: evaluator.options entries must be mappings of keyword arguments, got {opts!r}")
        _check_options(name, opts or {}, where)
    for cfg in expected:
        if cfg is not None and cfg.get("type") == "rule" and not isinstance(cfg.get("rules"), (dict, list)):
            raise UserError(
                f"{where}: evaluator.expected: a 'rule' needs 'rules' as a mapping (e.g. rules: "
                f"{{expected: ...}}) or a list of them, got {cfg.get('rules')!r}"
            )
    conj = spec.get("conj") or "and"
    if conj not in CONJUNCTIONS:
        raise UserError(f"{where}: evaluator.conj must be 'and' or 'or', got {conj!r}")
    return SpecPlan(
        infeasible=False,
        funcs=tuple(funcs),
        results=tuple(results),
        expected=tuple(expected),
        options=tuple(o or {} for o in options),
        conj=conj,
        postconfig=tuple(postconfig),
    )


def preview(value: Any, limit: int = PREVIEW_CHARS) -> str:
    """A short printable form of a getter's value for the outcome record."""
    if value is None:
        text = "None"
    elif isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, default=repr)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: Any, cache_dir: Path | str | None) -> str:
    """A getter's value as an outcome's ``actual``/``expected`` shows it. A file the getter copied into
    the episode's cache (its value is the copy's path, gone once the episode ends) is shown by what it
    held: its text when it is text (cut at ``FILE_TEXT_CHARS``, with a note), else its name, size and
    sha256; a list of them, each in turn. Anything else: ``preview``."""
    cache = Path(cache_dir).resolve() if cache_dir else None
    if cache is None:
        return preview(value)
    try:
        if _cached_file(value, cache):
            return describe_file(Path(value))
        if isinstance(value, (list, tuple)) and value and any(_cached_file(v, cache) for v in value):
            limit = max(FILE_TEXT_CHARS // len(value), PREVIEW_CHARS)
            return "\n".join(
                f"[{i + 1}/{len(value)}] " + (describe_file(Path(v), limit) if _cached_file(v, cache) else preview(v))
                for i, v in enumerate(value)
            )
    except OSError:  # unreadable: its path, as the metric got it
        pass
    return preview(value)


def _cached_file(value: Any, cache: Path) -> bool:
    """Whether ``value`` is the path of a file inside the episode's cache (never another file of this host)."""
    if not isinstance(value, str) or not value.startswith("/"):
        return False
    path = Path(value).resolve()
    return path.is_relative_to(cache) and path.is_file()


def describe_file(path: Path, limit: int = FILE_TEXT_CHARS) -> str:
    """A file by its content: UTF-8 text up to ``limit`` characters (a note says where it was cut), or
    ``[name: size, binary, sha256 prefix]``; known secrets redacted."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(limit * 4 + 4)  # enough bytes for ``limit`` characters of any UTF-8 text
    if not head:
        return f"[{path.name}: empty file]"
    text = None
    if b"\0" not in head:
        try:
            text = head.decode("utf-8") if len(head) == size else _decoded_prefix(head)
        except UnicodeDecodeError:
            text = None
    if text is None:
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        return f"[{path.name}: {size:,} bytes, binary, sha256 {digest.hexdigest()[:12]}]"
    if len(text) <= limit and len(head) == size:
        return redact(text)
    return redact(text[:limit]) + f"\n… [{path.name}: {size:,} bytes; the first {limit} characters shown]"


def _decoded_prefix(head: bytes) -> str:
    """The first bytes of a longer file as UTF-8 (a character the cut split is dropped)."""
    import codecs

    return codecs.getincrementaldecoder("utf-8")().decode(head, final=False)


def _failure(kind: str, name: str, exc: BaseException) -> str:
    reason = f"{kind} {name}: {type(exc).__name__}: {exc}"
    return reason if len(reason) <= REASON_CHARS else reason[: REASON_CHARS - 1] + "…"


def _to_score(raw: Any, name: str) -> tuple[float, str]:
    """A metric's return value as a score in [0, 1], with a reason when it had to be coerced."""
    if isinstance(raw, (str, bytes)) or not hasattr(raw, "__float__"):
        return 0.0, f"metric {name}: returned {type(raw).__name__}, not a number"
    score = float(raw)  # numpy's bool_ and float64 too: OSWorld's evaluate takes float() of them
    if math.isnan(score):
        return 0.0, f"metric {name}: returned NaN"
    if score < 0.0 or score > 1.0:
        return min(max(score, 0.0), 1.0), f"metric {name}: returned {raw!r}, clamped to [0, 1]"
    return score, ""


@dataclass(frozen=True)
class Fetched:
    """What metric ``i``'s getters gave (fresh, never reused), as the metric gets it and as outcomes show it;
    ``failed``: the outcome of a getter that raised (the metric does not run)."""

    result: Any = None
    expected: Any = None
    actual: str = ""
    wanted: str = ""
    failed: MetricOutcome | None = None


def _fetch(env: Environment, plan: SpecPlan, i: int, label: str) -> Fetched:
    """The getters stage of metric ``i``: its result, then its expected value (when it has one)."""
    result_cfg, expected_cfg = plan.results[i], plan.expected[i]
    cache = getattr(env, "cache_dir", None)  # where getters copy the files they read
    try:
        result = get_getter(result_cfg["type"])(env, result_cfg)
    except PASSTHROUGH:
        raise
    except Exception as exc:
        return Fetched(failed=MetricOutcome(label, 0.0, _failure("getter", result_cfg["type"], exc)))
    actual = shown(result, cache)  # as the metric gets it (a metric may change a file it reads)
    expected: Any = None
    if expected_cfg is not None:
        try:
            expected = get_getter(expected_cfg["type"])(env, expected_cfg)
        except PASSTHROUGH:
            raise
        except Exception as exc:
            return Fetched(failed=MetricOutcome(label, 0.0, _failure("getter", expected_cfg["type"], exc), actual=actual))
    return Fetched(result, expected, actual, shown(expected, cache))


def _measure(env: Environment, plan: SpecPlan, i: int, label: str, got: Fetched) -> MetricOutcome:
    """The metric stage of metric ``i``: its score of what the getters gave."""
    func, result_cfg = plan.funcs[i], plan.results[i]
    args = (got.result,) if plan.expected[i] is None else (got.result, got.expected)
    fn = get_metric(func)
    options = {**plan.options[i], "env": env} if metric_needs_env(fn) else plan.options[i]
    try:
        raw = fn(*args, **options)
    except PASSTHROUGH:
        raise
    except Exception as exc:
        score, reason = 0.0, _failure("metric", func, exc)
    else:
        score, reason = _to_score(raw, func)
    if score == 0.0 and not reason and got.result is None:
        reason = f"getter {result_cfg['type']} returned None (nothing there: missing file or directory?)"
    return MetricOutcome(label, score, reason, actual=got.actual, expected=got.wanted)


def _declared_fail(final_action: str | None) -> bool:
    return isinstance(final_action, str) and final_action.strip().upper() == "FAIL"


def _all_zero(plan: SpecPlan, reason: str) -> tuple[float, list[MetricOutcome]]:
    return 0.0, [MetricOutcome(label, 0.0, reason) for label in plan.outcome_names()]


def _note_skipped(outcome: MetricOutcome, skipped: int, conj: str) -> None:
    if skipped:
        note = f"conj {conj} decided early; {skipped} later metric(s) skipped"
        outcome.reason = f"{outcome.reason}; {note}" if outcome.reason else note


def evaluate_spec(
    env: Environment, spec: dict[str, Any], final_action: str | None, *, where: str = "evaluator"
) -> tuple[float, list[MetricOutcome]]:
    """The task's score in [0, 1] and one outcome per metric that ran: ``score_spec`` of the validated spec.

    ``final_action`` is DONE / FAIL as declared by the agent (None when it never declared one).
    ``where`` names the task file in configuration errors.
    """
    return score_spec(env, validate_spec(spec, where), final_action)


def _decided_by_final_action(plan: SpecPlan, final_action: str | None) -> tuple[float, list[MetricOutcome]] | None:
    """The score when the agent's final action alone decides it (an infeasible task, or a declared FAIL)."""
    declared = _declared_fail(final_action)
    if plan.infeasible:
        reason = (
            "agent declared the task infeasible"
            if declared
            else f"task is infeasible but the agent ended with {final_action!r}, not FAIL"
        )
        return float(declared), [MetricOutcome(INFEASIBLE, float(declared), reason, actual=str(final_action), expected="FAIL")]
    if declared:
        return _all_zero(plan, "agent declared FAIL (infeasible) but the task is feasible")
    return None


def _run_postconfig(env: Environment, plan: SpecPlan) -> None:
    for step in plan.postconfig:
        try:
            env.run_steps([dict(step)])
        except MissingWindow as exc:  # the agent may have closed it: OSWorld logs this and goes on
            log.warning("postconfig step %s: %s; grading goes on", step.get("type"), exc)


def score_spec(env: Environment, plan: SpecPlan, final_action: str | None) -> tuple[float, list[MetricOutcome]]:
    """A validated spec's score: the final action (when it decides), postconfig, then metric by metric
    its getters and its metric, until ``conj`` decides."""
    decided = _decided_by_final_action(plan, final_action)
    if decided is not None:
        return decided
    _run_postconfig(env, plan)
    labels = plan.outcome_names()
    outcomes: list[MetricOutcome] = []
    for i, label in enumerate(labels):
        got = _fetch(env, plan, i, label)
        outcome = got.failed or _measure(env, plan, i, label, got)
        outcomes.append(outcome)
        skipped = len(labels) - i - 1
        if plan.conj == "and" and outcome.score == 0.0:
            _note_skipped(outcome, skipped, "and")
            return 0.0, outcomes
        if plan.conj == "or" and outcome.score >= 1.0:
            _note_skipped(outcome, skipped, "or")
            return 1.0, outcomes
    scores = [o.score for o in outcomes]
    return (sum(scores) / len(scores) if plan.conj == "and" else max(scores)), outcomes
