"""The report's energy columns: gross energy's CI, net energy and its CI, J per 1k output tokens,
output tokens per J and CPU energy, as groups of episode runs give them."""

from __future__ import annotations

import pytest

from mcpworld.report.tables import Episode, build_rows, to_markdown


def ep(task: str, success: float, **metrics: float) -> Episode:
    return Episode(params={"model": "m"}, task_id=task, infra_error=False, success=success, metrics=metrics)


def test_energy_columns_with_cis_and_per_token_ratios():
    episodes = [
        ep("a", 1.0, **{"gpu.energy_j": 100.0, "gpu.energy_net_j": 60.0, "tokens_out": 500.0, "cpu.energy_j": 30.0}),
        ep("b", 0.0, **{"gpu.energy_j": 300.0, "gpu.energy_net_j": 200.0, "tokens_out": 1500.0, "cpu.energy_j": 50.0}),
        ep("c", 1.0),  # not metered: out of the energy figures
    ]
    rows, columns = build_rows(episodes, ["model"], seed=0, resamples=2000)
    (row,) = rows
    assert row["energy_j_mean"] == 200.0
    assert 100.0 <= row["energy_ci_low"] <= row["energy_j_mean"] <= row["energy_ci_high"] <= 300.0
    assert row["energy_net_j_mean"] == 130.0 and 60.0 <= row["energy_net_ci_low"] <= row["energy_net_ci_high"] <= 200.0
    assert row["j_per_1k_tokens_out"] == pytest.approx(400 / 2000 * 1000)
    assert row["tokens_out_per_j"] == pytest.approx(2000 / 400)
    assert row["cpu_energy_j_mean"] == 40.0
    for c in ("energy_ci_low", "energy_net_j_mean", "j_per_1k_tokens_out", "cpu_energy_j_mean"):
        assert c in columns
    assert "energy_net_j_mean" in to_markdown(rows, columns, ["model"])


def test_no_energy_no_energy_columns():
    _rows, columns = build_rows([ep("a", 1.0, tokens_out=5.0)], ["model"], seed=0, resamples=100)
    assert not any(c.startswith(("energy_ci", "energy_net", "j_per", "tokens_out_per", "cpu_energy")) for c in columns)
