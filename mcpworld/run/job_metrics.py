"""Job metrics beyond counts and means: tool success by family, behaviour rates and cost.

Named in the episode's vocabulary (``EpisodeResult.numbers``): a job's ``success`` is the mean of its
episodes' ``success``; sums end in ``_total``. Rates about the agent are over judged episodes (an
infra or eval error says nothing about it); what was spent (cost) is over every episode.
"""

from __future__ import annotations

from mcpworld.core.result import EpisodeResult, Status, ToolCounts, tool_counts_by_family, tool_family_metrics


def tool_metrics(judged: list[EpisodeResult]) -> dict[str, float]:
    """The episode's tool metrics over the judged episodes: ``tool_calls.<family>`` (calls per episode,
    as ``actions`` is) and ``tool_success.<family>`` (ok calls / calls, pooled: an episode of 50 calls
    weighs 50 times one of 1), and ``hallucination_rate`` (hallucinations per tool call)."""
    pooled: dict[str, ToolCounts] = {}
    for result in judged:
        for family, counts in tool_counts_by_family(result.tool_calls).items():
            total = pooled.setdefault(family, ToolCounts())
            total.ok += counts.ok
            total.error += counts.error
    out = tool_family_metrics(pooled, len(judged)) if judged else {}
    calls = sum(c.ok + c.error for c in pooled.values())
    if calls:
        out["hallucination_rate"] = sum(r.hallucinations for r in judged) / calls
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
