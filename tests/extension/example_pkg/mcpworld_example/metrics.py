"""A metric: 1 when the text greets (says hello), else 0; ``None`` (no file) scores 0.

Entry point: ``example_greets`` in ``mcpworld.metrics``; a task's evaluator names it ``func: example_greets``.
"""

from __future__ import annotations


def greets(result: str | None, expected: object = None) -> float:
    """1 when the text says hello (any case), else 0."""
    return 1.0 if result is not None and "hello" in result.lower() else 0.0
