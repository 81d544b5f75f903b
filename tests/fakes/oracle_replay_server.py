"""An OpenAI-compatible model that solves the built-in tasks: it answers each chat request with the
next step of the task's oracle solution as a real streamed ``tool_calls`` reply, and can be made to
fail on a schedule, as a real endpoint does (HTTP 500s, a stream cut mid-reply, an outage).

It is the soak's model (benchmarks/soak.py): the harness runs it as any ``openai_compat`` endpoint,
so every fault travels the real path (HTTP, SSE, the provider's retries, the episode's status).

Usage::

    server = OracleReplayServer({task.instruction: [s.as_written() for s in task.solution.get("gui")] for task in tasks},
                                error_every=41, cut_every=67).start()
    ... provider.base_url=server.base_url model=oracle provider=openai_compat ...
    server.outage(6.0)       # every request answers 500 for 6 s (longer than the provider's retries)
    server.hold()            # requests wait here (episodes freeze in their agent loop) ...
    server.release()         # ... until released
    server.served            # how many requests got each kind of answer

The task is found by its instruction in the conversation's first user message, the step by the
number of assistant turns so far; after the last step it calls ``done``. The oracle's own
``wait_for`` steps (a tool only the oracle provider is given) become ``computer`` ``wait`` calls.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from typing import Any

from tests.fakes.openai_server import FakeOpenAIServer

DONE_CALL = {"name": "done", "arguments": {"status": "DONE"}}


class OracleReplayServer(FakeOpenAIServer):
    """Replays oracle solutions as tool calls; ``error_every``/``cut_every``: every Nth request (0:
    never) gets one HTTP 500 / one stream dropped after a few chunks (the provider retries either)."""

    def __init__(
        self,
        solutions: dict[str, list[dict[str, Any]]],
        *,
        model: str = "oracle",
        wait_s: float = 2.0,
        error_every: int = 0,
        cut_every: int = 0,
    ):
        super().__init__(None, model=model)
        self.solutions = {instruction.strip(): list(steps) for instruction, steps in solutions.items()}
        self.wait_s = wait_s
        self.error_every = error_every
        self.cut_every = cut_every
        self.served: Counter[str] = Counter()
        self.outages: list[tuple[float, float]] = []  # (start, end), wall-clock seconds
        self._count = 0
        self._outage_until = 0.0
        self._open = threading.Event()
        self._open.set()
        self._httpd.handle_error = self._quiet  # type: ignore[method-assign]
        self._default_handle_error = type(self._httpd).handle_error.__get__(self._httpd)

    def _quiet(self, request: Any, client_address: Any) -> None:
        """A client that dropped its connection (it gave up on a held or cut reply) is no error."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            self._default_handle_error(request, client_address)

    # ------------------------------------------------------------------ controls

    def outage(self, seconds: float) -> None:
        """Answer every request with HTTP 500 for ``seconds`` from now."""
        now = time.time()
        with self._lock:
            self._outage_until = now + seconds
            self.outages.append((now, now + seconds))

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    # ------------------------------------------------------------------ answers

    def _record(self, body: dict[str, Any], headers: dict[str, str], consume: bool = True) -> dict[str, Any]:
        self._open.wait()
        with self._lock:
            self.requests.append({"model": body.get("model"), "turns": len(body.get("messages") or [])})
            self.headers.append(headers)
            self._count += 1
            n = self._count
            down = time.time() < self._outage_until
        if down:
            return self._fault("outage_500", {"status": 500, "error": "the model server is down (soak outage)"})
        if self.error_every and n % self.error_every == 0:
            return self._fault("error_500", {"status": 500, "error": "internal server error (soak fault)"})
        reply = {"tool_calls": [self.next_call(body.get("messages") or [])]}
        if self.cut_every and n % self.cut_every == 0:
            return self._fault("cut_stream", {**reply, "cut": 2})
        self._count_served("ok")
        return reply

    def _fault(self, kind: str, reply: dict[str, Any]) -> dict[str, Any]:
        self._count_served(kind)
        return reply

    def _count_served(self, kind: str) -> None:
        with self._lock:
            self.served[kind] += 1

    def next_call(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The solution's step for this point of the conversation, as a tool call."""
        steps = self.solution_for(messages)
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        if steps is None or turn >= len(steps):
            return DONE_CALL
        step = steps[turn]
        if step["tool"] == "wait_for":
            return {"name": "computer", "arguments": {"action": "wait", "duration": self.wait_s}}
        return {"name": step["tool"], "arguments": dict(step["args"])}

    def solution_for(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        first = next((m for m in messages if m.get("role") == "user"), None)
        text = _text(first.get("content")) if first else ""
        return next((steps for instruction, steps in self.solutions.items() if instruction in text), None)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""
