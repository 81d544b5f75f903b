"""The live /evaluate tests' shared parts (env=local and env=docker): a Mousepad task graded on the running
desktop, the service's token, and the check that the service's verdict is the in-process judge's."""

from __future__ import annotations

from pathlib import Path

from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.evaluation.verdict import judge
from mcpworld.tasks.osworld import load_osworld

TOKEN = "live-token-not-for-logs"
TYPED = "typed by another harness"
MOUSEPAD_TASK = {
    "id": "live-mousepad",
    "instruction": f"Type '{TYPED}' into Mousepad",
    "config": [{"type": "launch", "parameters": {"command": ["mousepad"]}}],
    "evaluator": {
        "func": ["check_include_exclude", "check_accessibility_tree"],  # "and" stops at the first 0
        "result": [{"type": "vm_active_window_title"}, {"type": "accessibility_tree"}],
        "expected": [
            {"type": "rule", "rules": {"include": ["Mousepad"]}},
            {
                "type": "rule",
                "rules": [
                    {"selectors": ['application[name="mousepad"] frame[st|active=true]']},
                    {"xpath": '//text[@st:focused="true"]', "text": TYPED, "exact": True},
                ],
            },
        ],
    },
}


def same_verdict(over_http: dict, env: LocalEnvironment, task: dict, compare_actual: set[str]) -> None:
    """The service's verdict against the episode's judge on the same desktop, metric by metric."""
    in_process = judge(load_osworld(Path("task.json"), dict(task)), env, "DONE")
    assert over_http["score"] == in_process.score
    assert [(m["name"], m["score"]) for m in over_http["metrics"]] == [(m.name, m.score) for m in in_process.metrics]
    for sent, here in zip(over_http["metrics"], in_process.metrics, strict=True):
        if sent["name"] in compare_actual:
            assert sent["actual"] == here.actual
