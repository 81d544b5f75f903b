"""Job totals of the episodes' shared energies: sums (no double count, the shares are disjoint), per
success, per 1k output tokens and output tokens per joule."""

from __future__ import annotations

from mcpworld.core.result import EpisodeResult, Status

SUMMED = ("energy_j", "energy_net_j", "energy_llm_j", "energy_rest_j")


def energy_totals(results: list[EpisodeResult]) -> dict[str, float]:
    out: dict[str, float] = {}
    for domain in ("gpu", "cpu"):
        metered = [r for r in results if f"{domain}.energy_j" in r.gpu]
        if not metered:
            continue
        for key in SUMMED:
            values = [r.gpu[f"{domain}.{key}"] for r in metered if f"{domain}.{key}" in r.gpu]
            if values:
                out[f"{domain}.{key}"] = sum(values)
        gross = out[f"{domain}.energy_j"]
        successes = sum(r.status == Status.success for r in metered)
        if successes:
            out[f"{domain}.energy_per_success_j"] = gross / successes
            if f"{domain}.energy_net_j" in out:
                out[f"{domain}.energy_net_per_success_j"] = out[f"{domain}.energy_net_j"] / successes
        tokens = sum(r.tokens_out for r in metered)
        if tokens and gross > 0:
            out[f"{domain}.j_per_1k_tokens_out"] = gross / tokens * 1000
            out[f"{domain}.tokens_out_per_j"] = tokens / gross
    return out
