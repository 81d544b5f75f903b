"""The Provider seam: messages + tool schemas in, one assistant reply out.

Messages use the OpenAI chat format (role/content/tool_calls/tool_call_id), content parts
``{"type": "text"}`` and ``{"type": "image_url", "image_url": {"url": "data:..."}}``; providers for
other APIs translate from it.
"""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


def parse_arguments(raw: str) -> dict[str, Any]:
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


@dataclass
class ModelInfo:
    """What a provider learned about the model before the job: logged as job params and metrics."""

    params: dict[str, str] = field(default_factory=dict)  # e.g. ollama.digest, ollama.quantization
    metrics: dict[str, float] = field(default_factory=dict)  # e.g. ollama.vram_bytes


class Provider(abc.ABC):
    """A model endpoint (or the oracle). Raise InfraError/EndpointUnreachable for endpoint failures."""

    name: str = "provider"

    async def preflight(self) -> ModelInfo:
        """Once per job, before any episode: check the endpoint and the model (pull, load) and
        describe it. Raise UserError/EndpointUnreachable when the job cannot run."""
        return ModelInfo()

    @abc.abstractmethod
    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        """One assistant turn. ``tools`` are OpenAI function schemas."""

    async def aclose(self) -> None:
        """Release connections."""
