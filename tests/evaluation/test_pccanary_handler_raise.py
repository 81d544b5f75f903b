"""A PC-Canary handler that raises ends its task as a failure, as PC-Canary's own evaluator does
(``BaseEvaluator._on_message``: "Handler execution error" → TASK_END failure); our own tasks'
handlers that raise stay eval_error (tests/evaluation/test_mcpworld_tasks.py)."""

from __future__ import annotations

import pytest

from mcpworld.core.errors import EvalError
from mcpworld.evaluation.handler import HandlerProcess

PCCANARY = {"evaluator_type": "HookManager"}  # what every PC-Canary task's handler setup names
# a handler in the manner of VS Code task13's: it reads a field of the app's state that is null
# when the agent left nothing open, and says success once the state holds the asked line
STATE_READER = (
    "def message_handler(message, logger, params):\n"
    "    payload = message.get('payload', {})\n"
    "    if payload.get('event') == 'state':\n"
    "        line = payload.get('info', {}).get('line')\n"
    "        if line == 7:\n"
    "            return [{'status': 'success', 'reason': 'line 7'}]\n"
    "    return None\n"
)


def _handler(tmp_path, setup):
    path = tmp_path / "handler.py"
    path.write_text(STATE_READER)
    return HandlerProcess(path, {}, tmp_path, timeout_s=20, setup=setup)


def _state(info):
    return {"type": "send", "payload": {"event": "state", "info": info}}


def test_a_pccanary_handler_that_raises_on_the_apps_state_is_a_failure_naming_the_exception(tmp_path):
    proc = _handler(tmp_path, PCCANARY)
    try:
        proc.send(_state(None))  # None.get(…): AttributeError, as task13's handler on `info: null`
        proc.send(_state({"line": 7}))  # the task had ended at the exception: this success is not heard
        verdict = proc.complete()
    finally:
        proc.close()
    assert verdict.score == 0.0 and verdict.said_no
    assert "raised AttributeError" in verdict.reason and "PC-Canary's evaluator" in verdict.reason


def test_a_success_before_the_exception_stands(tmp_path):
    proc = _handler(tmp_path, PCCANARY)
    try:
        proc.send(_state({"line": 7}))
        proc.send(_state(None))
        verdict = proc.complete()
    finally:
        proc.close()
    assert verdict.score == 1.0 and "line 7" in verdict.reason


def test_our_own_tasks_handler_that_raises_still_gives_no_verdict(tmp_path):
    proc = _handler(tmp_path, {})
    try:
        proc.send(_state(None))
        with pytest.raises(EvalError, match="raised AttributeError"):
            proc.complete()
    finally:
        proc.close()
