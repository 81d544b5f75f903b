"""The conversation as it crosses between the loop, the profiles and the providers, typed.

The loop keeps the conversation in the OpenAI chat format (role/content/tool_calls/tool_call_id;
content parts ``{"type": "text"}`` and ``{"type": "image_url", "image_url": {"url": "data:..."}}``).
The types are TypedDicts, so a message is the very dict that is sent as JSON: typing it changes no
byte of any request. The keys the harness adds for providers that can use them (``reasoning_blocks``,
``is_error``, ``images``) are declared fields of the messages they belong to; providers speaking
the OpenAI chat format drop them before sending (``openai_compat.wire_messages``).
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypeAlias, TypedDict

# A value as JSON holds it (a parsed body, a tool call's arguments, a schema).
JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"
JSONObject: TypeAlias = "dict[str, JSON]"


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ImageURL(TypedDict):
    url: str  # a data: URI (the loop's screenshots) or a web address


class ImagePart(TypedDict):
    type: Literal["image_url"]
    image_url: ImageURL


ContentPart: TypeAlias = TextPart | ImagePart
Content: TypeAlias = str | list[ContentPart]


class FunctionCall(TypedDict):
    name: str
    arguments: str  # the JSON text of the arguments, as the chat API carries it


class WireToolCall(TypedDict):
    """A tool call as an assistant message carries it (``providers.base.ToolCall`` is the parsed one)."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class SystemMessage(TypedDict):
    role: Literal["system"]
    content: Content


class UserMessage(TypedDict):
    role: Literal["user"]
    content: Content


class AssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: Content | None
    tool_calls: NotRequired[list[WireToolCall]]
    # harness: the reply's reasoning the API wants back verbatim (Anthropic's thinking blocks)
    reasoning_blocks: NotRequired[list[JSONObject]]


class ToolMessage(TypedDict):
    role: Literal["tool"]
    tool_call_id: str
    content: Content
    # harness: the call failed (Anthropic's tool_result is_error)
    is_error: NotRequired[bool]
    # harness: how many of the images in the user message after the tool messages this call made
    images: NotRequired[int]


Message: TypeAlias = SystemMessage | UserMessage | AssistantMessage | ToolMessage

# The harness's keys above: not part of the OpenAI chat format, so never sent to a chat API.
HARNESS_KEYS = frozenset(("reasoning_blocks", "is_error", "images"))

# A tool as the request offers it: an OpenAI function schema ({"type": "function", "function": {...}})
# or, for a family that declares its own, that family's shape; sent as JSON unchanged.
ToolSchema: TypeAlias = JSONObject


def text_of(content: Content | None) -> str:
    """All text of a message's content (its text parts joined); images say nothing."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p["text"] for p in content if p["type"] == "text")


# Reading a body whose shape varies by server: what is not of the expected kind reads as empty.


def as_object(value: JSON) -> JSONObject:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: JSON) -> list[JSON]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def as_int(value: JSON) -> int:
    """A count or index as servers send it (a number, sometimes a numeric string); absent or null is 0."""
    return int(value) if isinstance(value, (int, float, str)) and value else 0
