"""Job metrics beyond counts and means: tool success by family, behaviour rates and cost.

Named in the episode's vocabulary (``EpisodeResult.numbers``): a job's ``success`` is the mean of its
episodes' ``success``; sums end in ``_total``. Rates about the agent are over judged episodes (an
infra or eval error says nothing about it); what was spent (cost) is over every episode.
"""

from __future__ import annotations

from mcpworld.core.result import EpisodeResult, Status, tool_family


def tool_metrics(judged: list[EpisodeResult]) -> dict[str, float]:
    """``tool_success.<family>`` (ok calls / calls) and ``tool_calls.<family>`` per tool family
    (computer, bash, mcp, done, unknown), and ``hallucination_rate`` (hallucinations per tool call)."""
    ok: dict[str, int] = {}
    calls: dict[str, int] = {}
    for result in judged:
        for name, counts in result.tool_calls.items():
            family = tool_family(name)
            ok[family] = ok.get(family, 0) + counts.ok
            calls[family] = calls.get(family, 0) + counts.ok + counts.error
    out: dict[str, float] = {}
    for family in sorted(calls):
        out[f"tool_calls.{family}"] = float(calls[family])
        if calls[family]:
            out[f"tool_success.{family}"] = ok[family] / calls[family]
    total = sum(calls.values())
    if total:
        out["hallucination_rate"] = sum(r.hallucinations for r in judged) / total
    return out


def behaviour_rates(judged: list[EpisodeResult], results: list[EpisodeResult]) -> dict[str, float]:
    """Fractions of episodes: ``loop_rate`` (a stuck stretch was seen), ``truncation_rate`` (a reply
    was cut by the output limit), ``tokens_estimated`` (of every episode: token counts we estimated
    because the server sent no usage)."""
    out: dict[str, float] = {}
    if judged:
        out["loop_rate"] = sum(r.loops > 0 for r in judged) / len(judged)
        out["truncation_rate"] = sum(r.truncations > 0 for r in judged) / len(judged)
    if results:
        out["tokens_estimated"] = sum(r.tokens_estimated for r in results) / len(results)
    return out


def cost_metrics(results: list[EpisodeResult]) -> dict[str, float]:
    """``cost_usd`` (mean per episode), ``cost_usd_total``, ``cost_usd_per_success``, and the same for
    ``energy_cost_usd``; absent (never 0) when no episode was priced. Per success: over the priced
    episodes' successes (a job without a success has no such number)."""
    out: dict[str, float] = {}
    for name in ("cost_usd", "energy_cost_usd"):
        priced = [r for r in results if getattr(r, name) is not None]
        if not priced:
            continue
        total = sum(float(getattr(r, name)) for r in priced)
        out[name] = total / len(priced)
        out[f"{name}_total"] = total
        successes = sum(r.status == Status.success for r in priced)
        if successes:
            out[f"{name}_per_success"] = total / successes
    return out
