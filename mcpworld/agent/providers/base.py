"""The Provider seam: messages + tool schemas in, one assistant reply out.

Messages use the OpenAI chat format, typed in ``agent/messages.py``; providers for other APIs
translate from it.
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass, field

from mcpworld.agent.messages import HARNESS_KEYS, JSONObject, Message, ToolSchema


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: JSONObject


def parse_arguments(raw: str) -> JSONObject:
    """A tool call's JSON arguments; anything unparseable is kept under ``_raw`` so the loop can
    show the model its mistake (and trace a hallucination) instead of dropping the call."""
    if not raw.strip():
        return {}
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"_raw": raw}


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False  # True when counted by us because the server sent no usage
    cached_input_tokens: int = 0  # of input_tokens: read from the prompt cache (billed at model.price.cached_input)


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    ttft_s: float | None = None  # time to first token, from the stream
    latency_s: float = 0.0  # whole request
    finish_reason: str | None = None
    reasoning: str = ""  # thinking the server sent apart (reasoning_content) or inside <think>…</think>
    refusal: str = ""  # OpenAI's delta.refusal / message.refusal: the model declined (also the text, if none)
    # reasoning the API wants back verbatim on the next turn (Anthropic's thinking / redacted_thinking
    # blocks with their signatures): kept by the loop in the assistant message (reasoning_blocks), ignored by others
    reasoning_blocks: list[JSONObject] = field(default_factory=list)


# The keys the loop adds to messages for providers that can use them (messages.HARNESS_KEYS)
NEUTRAL_KEYS = HARNESS_KEYS


@dataclass
class ModelInfo:
    """What a provider learned about the model before the job: logged as job params and metrics."""

    params: dict[str, str] = field(default_factory=dict)  # e.g. ollama.digest, ollama.quantization
    metrics: dict[str, float] = field(default_factory=dict)  # e.g. ollama.vram_bytes


class Provider(abc.ABC):
    """A model endpoint (or the oracle). Raise InfraError/EndpointUnreachable for endpoint failures."""

    name: str = "provider"
    # read tool calls the model wrote into its text when the server parsed none (see content_calls);
    # the episode sets it from its profile (Profile.text_calls): False leaves the text as written
    text_calls: bool = True

    async def preflight(self) -> ModelInfo:
        """Once per job, before any episode: check the endpoint and the model (pull, load) and
        describe it. Raise UserError/EndpointUnreachable when the job cannot run."""
        return ModelInfo()

    @abc.abstractmethod
    async def complete(self, messages: list[Message], tools: list[ToolSchema], *, temperature: float | None = None) -> Reply:
        """One assistant turn. ``tools`` are OpenAI function schemas; ``temperature``, when given,
        replaces the model's for this request only (a reference's retry of an unreadable reply)."""

    async def aclose(self) -> None:  # noqa: B027 - a no-op by default, not abstract: providers without connections keep it
        """Release connections."""
