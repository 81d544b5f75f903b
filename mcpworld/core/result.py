"""The record of one episode: what result.json holds and what trackers read."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from mcpworld.core.waits import TOOL as WAIT_TOOL


class Status(StrEnum):
    """How an episode ended. A StrEnum: result.json, MLflow and comparisons see the plain string."""

    success = "success"
    failure = "failure"  # the agent's doing: it ended and the grader said no
    timeout = "timeout"  # the agent's doing: it ran out of steps, calls or time
    agent_error = "agent_error"  # the agent's doing: e.g. the model's replies could not be used
    infra_error = "infra_error"  # not the agent's: a dead display, a down endpoint, a failed download
    eval_error = "eval_error"  # not the agent's: the grader/handler gave no verdict (errors.EvalError)
    interrupted = "interrupted"  # not the agent's: Ctrl-C or SIGTERM


# Not a verdict on the agent: run again on resume, left out of success rates.
NOT_JUDGED = (Status.infra_error, Status.eval_error, Status.interrupted)


class Termination(StrEnum):
    """How the agent's run ended (``EpisodeResult.termination``), before any verdict. A StrEnum: result.json
    holds the plain string. The status (``run/status.classify``) is decided from this and the grader's word."""

    done = "done"  # the agent said DONE
    infeasible = "infeasible"  # the agent said FAIL (the task cannot be done)
    end_turn = "end_turn"  # a reply without a call ended the family's reference loop (Claude's)
    unreadable = "unreadable"  # a reply the family's reference reads as the end (UI-TARS's last word)
    max_steps = "max_steps"
    max_llm_calls = "max_llm_calls"
    timeout = "timeout"
    loop = "loop"  # agent.loop_stop: the first loop ended it
    agent_error = "agent_error"
    infra_error = "infra_error"  # the desktop, an endpoint or a harness part failed under the agent
    interrupted = "interrupted"
    unwatchable = "unwatchable"  # an infra_error every try repeats: the task's app hooks cannot watch this build


@dataclass
class ToolCounts:
    ok: int = 0
    error: int = 0


# the families tool calls are counted by, in episode and job metrics alike (``tool_calls.<family>``,
# ``tool_success.<family>``): modality.tools' own, the oracle's ``wait_for`` (core/waits.py), ``unknown``
# (a tool that does not exist) and ``other`` (a tool of none of these; no tool of mcpworld's today)
TOOL_FAMILIES = ("computer", "bash", "mcp", "done", "wait_for", "unknown", "other")


def tool_family(name: str) -> str:
    """The tool family (``modality.tools``) a counted tool name belongs to: our tools by name, MCP
    tools (``<server>-<tool>``) and Toolathlon's local tools (``local-…``) by the dash; ``unknown``
    counts calls to tools that do not exist (hallucinated or withheld). A profile's own name for the
    computer tool (Qwen3-VL's ``computer_use``) is the computer family."""
    if name in ("computer", "bash", "done", "unknown", WAIT_TOOL):
        return name
    if name.startswith("computer_"):
        return "computer"
    return "mcp" if "-" in name else "other"


def tool_counts_by_family(tool_calls: dict[str, ToolCounts]) -> dict[str, ToolCounts]:
    """Per-tool counts summed per family (an MCP server's tools are one family, not a column each)."""
    out: dict[str, ToolCounts] = {}
    for name, counts in tool_calls.items():
        family = out.setdefault(tool_family(name), ToolCounts())
        family.ok += counts.ok
        family.error += counts.error
    return out


def tool_family_metrics(by_family: dict[str, ToolCounts], episodes: int = 1) -> dict[str, float]:
    """The one vocabulary of tool metrics, for an episode (``episodes=1``) and a job alike:
    ``tool_calls.<family>`` (calls per episode) and ``tool_success.<family>`` (ok calls / calls)."""
    out: dict[str, float] = {}
    for family in sorted(by_family):
        counts = by_family[family]
        calls = counts.ok + counts.error
        out[f"tool_calls.{family}"] = calls / episodes
        if calls:
            out[f"tool_success.{family}"] = counts.ok / calls
    return out


@dataclass
class MetricOutcome:
    """One metric's verdict inside an evaluator spec."""

    name: str
    score: float
    reason: str = ""
    actual: str = ""
    expected: str = ""


@dataclass
class EpisodeResult:
    task_id: str
    app: str
    attempt: int = 0
    status: Status = Status.infra_error
    score: float = 0.0
    reason: str = ""
    # a Termination (a str: the agent loop and old result.json files give plain strings); "" before the agent ran
    termination: str = ""
    # (eval_error is a status only: the agent ended as its termination says, then the grader failed)
    final_action: str | None = None  # DONE / FAIL as declared by the agent
    answer: str | None = None  # the agent's answer, when it ended by answering (Qwen's computer_use ``answer``)
    steps: int = 0  # model turns (agent.max_steps counts these, as OSWorld's runner does)
    actions: int = 0  # tool calls run (a turn may hold several, or none)
    llm_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_estimated: bool = False
    tokens_cached: int = 0  # of tokens_in: prompt-cache reads (Anthropic's cache_read_input_tokens), billed apart
    ttft_s: list[float] = field(default_factory=list)
    llm_latency_s: list[float] = field(default_factory=list)
    generation_s: list[float] = field(default_factory=list)  # per LLM call: latency after the first token
    hallucinations: int = 0  # unknown tools, unparseable or invalid arguments, off-screen coordinates
    loops: int = 0  # stuck stretches: one action repeated on an unchanged screen, or an A-B-A-B cycle
    truncations: int = 0  # replies cut by the output limit (finish_reason length / max_tokens) with no call run
    duration_s: float = 0.0
    setup_s: float = 0.0
    # env.stage: the reset done ahead while the previous episode ran ({began, ready, stage_s, ready_ahead_s},
    # see Environment.begin); empty: this episode's reset ran at its start (setup_s)
    staged: dict[str, float] = field(default_factory=dict)
    agent_s: float = 0.0
    eval_s: float = 0.0
    tool_calls: dict[str, ToolCounts] = field(default_factory=dict)
    metrics: list[MetricOutcome] = field(default_factory=list)
    screenshots: int = 0
    key_steps: dict[str, Any] = field(default_factory=dict)  # total, completed, ratio, progress, timeline
    labels: dict[str, str] = field(default_factory=dict)  # model, provider, resolution, modality …
    # the episode's shared energy: gpu.energy_j (gross), .energy_net_j, .energy_llm_j, .energy_rest_j, power …
    # and cpu.* from RAPL (see telemetry/energy); empty when nothing is metered
    gpu: dict[str, float] = field(default_factory=dict)
    llm_energy_j: list[float | None] = field(default_factory=list)  # per LLM call, in call order (its GPU share)
    llm_call_windows: list[list[float]] = field(default_factory=list)  # per LLM call: [start, end], epoch seconds
    task_notes: list[str] = field(default_factory=list)  # what of the task file was not acted on (Task.notes)
    cost_usd: float | None = None  # tokens at model.price (None: the model has no price, never 0)
    energy_cost_usd: float | None = None  # the episode's measured energy at telemetry.kwh_price

    def count_tool(self, name: str, ok: bool) -> None:
        counts = self.tool_calls.setdefault(name, ToolCounts())
        if ok:
            counts.ok += 1
        else:
            counts.error += 1

    def numbers(self) -> dict[str, float]:
        """Flat numeric view for trackers (MLflow metrics)."""
        out: dict[str, float] = {
            "score": self.score,
            "success": float(self.status == Status.success),
            "steps": self.steps,
            "actions": self.actions,
            "llm_calls": self.llm_calls,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "duration_s": self.duration_s,
            "setup_s": self.setup_s,
            "agent_s": self.agent_s,
            "eval_s": self.eval_s,
            "screenshots": self.screenshots,
        }
        out["hallucinations"] = self.hallucinations
        out["loops"] = self.loops
        out["truncations"] = self.truncations
        for name, values in (("ttft_s", self.ttft_s), ("generation_s", self.generation_s), ("llm_latency_s", self.llm_latency_s)):
            if values:
                out[f"{name}_mean"] = sum(values) / len(values)
        out.update(tool_family_metrics(tool_counts_by_family(self.tool_calls)))
        if self.key_steps.get("total"):
            for key in ("completed", "ratio", "progress"):
                out[f"keysteps.{key}"] = float(self.key_steps[key])
        for metric in self.metrics:
            out[f"metric.{metric.name}"] = metric.score
        if self.tokens_cached:
            out["tokens_cached"] = self.tokens_cached
        for name in ("cost_usd", "energy_cost_usd"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out.update(self.gpu)
        energies = [e for e in self.llm_energy_j if e is not None]
        if energies:
            out["gpu.energy_per_llm_call_j"] = sum(energies) / len(energies)
        return out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def write(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2, default=str), encoding="utf-8")
        tmp.replace(path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeResult:
        data = dict(data)
        data["tool_calls"] = {k: ToolCounts(**v) for k, v in data.get("tool_calls", {}).items()}
        data["metrics"] = [MetricOutcome(**m) for m in data.get("metrics", [])]
        if "status" in data:
            data["status"] = Status(data["status"])
        return cls(**data)

    @classmethod
    def read(cls, path: Path) -> EpisodeResult:
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
