"""A reply cut off by the output-token limit is its own event, not a reply to nudge past.

Servers say so in the stop reason, which providers pass through unchanged as ``Reply.finish_reason``:
``length`` from OpenAI-compatible servers (OpenAI, vLLM, Ollama's /v1, LM Studio), ``max_tokens``
from Anthropic. A cut reply that leaves something unrun (it has no call at all, or a call whose
arguments were cut mid-JSON) is counted (``EpisodeResult.truncations``), traced (a ``truncation``
event) and answered with what happened, so the model can say less next time. The generic nudge
would hide the cause, and a call cut mid-arguments is not a hallucination: the limit cut it.
"""

from __future__ import annotations

from mcpworld.agent.providers.base import Reply, ToolCall

LENGTH_STOPS = frozenset({"length", "max_tokens"})


def is_cut(call: ToolCall) -> bool:
    """A call whose arguments could not be parsed (kept raw by the provider)."""
    return "_raw" in call.arguments


def truncation(reply: Reply) -> dict[str, object] | None:
    """The ``truncation`` trace event's fields when the limit cut this reply short, else None."""
    if reply.finish_reason not in LENGTH_STOPS:
        return None
    cut = [c.name for c in reply.tool_calls if is_cut(c)]
    if reply.tool_calls and not cut:
        return None  # every call is whole: only what came after them was lost
    return {
        "finish_reason": reply.finish_reason,
        "tokens_out": reply.usage.output_tokens,
        "cut_calls": cut,
        "text": reply.text[-300:],
        "reasoning_chars": len(reply.reasoning),
    }


def notice(reply: Reply) -> str:
    """What the model is told instead of the nudge (and as the result of a call it did not finish)."""
    return (
        f"Your last reply was cut off: it reached the output token limit ({reply.usage.output_tokens} tokens, "
        f"finish_reason {reply.finish_reason}) before it was complete, so nothing cut off in it was run. "
        "Reply more briefly: keep any reasoning short and make one tool call."
    )
