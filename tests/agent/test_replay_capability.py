"""Only a provider kind that replays solutions (the oracle) is handed a task's solution, and the run asks
the kind (``replays_solution``) instead of naming it."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from mcpworld.agent.providers import PROVIDERS, ProviderSettings, ReplayBuilder, make_provider, replays_solution
from mcpworld.agent.providers.oracle import OracleProvider
from mcpworld.core.task_parts import OracleStep
from tests.helpers.config import make

SOLUTION = [OracleStep("computer", {"action": "left_click", "coordinate": [1, 2]})]


def test_the_oracle_alone_declares_that_it_replays_solutions():
    assert replays_solution("oracle")
    assert not [kind for kind in PROVIDERS.names() if kind != "oracle" and replays_solution(kind)]


def test_the_oracle_gets_the_solution_and_replays_it():
    provider = make_provider(ProviderSettings.of(make("provider=oracle")), SOLUTION)
    assert isinstance(provider, OracleProvider) and provider.solution == SOLUTION


def test_a_model_providers_builder_is_never_handed_the_solution(monkeypatch: pytest.MonkeyPatch):
    seen: list[tuple[Any, ...]] = []
    monkeypatch.setitem(PROVIDERS._entries, "mine", lambda *args: seen.append(args) or "provider")
    mine = cast(ProviderSettings, SimpleNamespace(provider=SimpleNamespace(kind="mine")))
    assert make_provider(mine, SOLUTION) == "provider"
    assert seen == [(mine,)]  # the settings alone


def test_a_replay_builder_without_a_task_replays_nothing():
    made: list[Any] = []
    builder = ReplayBuilder(lambda settings, solution: made.append(solution) or "p")
    assert builder("settings") == "p" and builder.replay("settings", SOLUTION) == "p"  # type: ignore[arg-type]
    assert made == [[], SOLUTION]
