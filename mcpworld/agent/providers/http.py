"""What every HTTP model provider shares: one client, retries with backoff, error classification.

Transient failures (connect errors, read timeouts, cut streams, HTTP 429 and 5xx) are retried with
exponential backoff and jitter, honouring ``Retry-After``; when the budget is spent the last one is
raised as ``InfraError`` (``EndpointUnreachable`` when nothing answered at all), so the episode ends
as ``infra_error`` and never counts as the agent failing. Other 4xx are configuration mistakes (a
wrong model id, a bad key) and fail at once. API keys never appear in messages.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Required, TypedDict

import httpx

from mcpworld.agent.messages import JSON, JSONObject
from mcpworld.agent.providers.base import Provider, Reply
from mcpworld.core.errors import EndpointUnreachable, InfraError

EXCERPT_CHARS = 300
TRANSPORT_ERRORS = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


class Retryable(Exception):
    """One failed attempt worth retrying; ``final`` is what to raise when the budget is spent."""

    def __init__(self, final: InfraError, retry_after_s: float | None = None):
        super().__init__(str(final))
        self.final = final
        self.retry_after_s = retry_after_s


class HttpOptions(TypedDict, total=False):
    """The HttpProvider arguments a provider passes on unchanged (its ``label`` it defaults itself)."""

    base_url: Required[str]
    api_key: str | None
    timeout_s: float
    max_retries: int
    start_hint: str
    retry_base_s: float
    retry_cap_s: float
    sleep: Callable[[float], Awaitable[object]]


class HttpProvider(Provider):
    """Base for providers that talk HTTP; subclasses implement ``_attempt`` (one round trip)."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 120,
        max_retries: int = 3,
        label: str = "provider",
        start_hint: str = "",
        retry_base_s: float = 0.5,
        retry_cap_s: float = 8.0,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max(0, int(max_retries))
        self.label = self.name = label
        self.start_hint = start_hint
        self.retry_base_s = retry_base_s
        self.retry_cap_s = retry_cap_s
        self._sleep = sleep
        self._client: httpx.AsyncClient | None = None  # created lazily, on the loop that uses it

    async def with_retries(self, attempt: Callable[[], Awaitable[Reply]]) -> Reply:
        """Run ``attempt`` until it succeeds, retrying ``Retryable`` failures within the budget."""
        last: Retryable | None = None
        for n in range(self.max_retries + 1):
            if n:
                await self._sleep(self.backoff(n - 1, last.retry_after_s if last else None))
            try:
                return await attempt()
            except Retryable as exc:
                last = exc
        assert last is not None
        raise last.final from last.__cause__

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s, connect=5.0))
        return self._client

    def backoff(self, n: int, retry_after_s: float | None) -> float:
        """Exponential backoff with jitter; a server's Retry-After wins (still capped)."""
        if retry_after_s is not None:
            return min(self.retry_cap_s, max(0.0, retry_after_s))
        delay = min(self.retry_cap_s, self.retry_base_s * (2.0**n))
        return delay * (0.5 + random.random() / 2)

    async def timed(self, request: Callable[[], Awaitable[Reply]], url: str) -> Reply:
        """One round trip with transport errors classified and latency/TTFT filled in."""
        start = time.perf_counter()
        try:
            reply = await request()
        except TRANSPORT_ERRORS as exc:
            raise self.transport_failure(exc, url) from exc
        reply.latency_s = time.perf_counter() - start
        if reply.ttft_s is None:
            reply.ttft_s = reply.latency_s
        return reply

    def transport_failure(self, exc: Exception, url: str) -> Retryable:
        """A connection that never opened means the endpoint is down (with how to start it);
        a timeout or a dropped connection is one failed request."""
        reason = one_line(str(exc)) or type(exc).__name__
        if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)):
            hint = f" {self.start_hint}" if self.start_hint else ""
            msg = f"{self.label} endpoint {self.base_url} is unreachable ({reason}).{hint}"
            return Retryable(EndpointUnreachable(self.scrub(msg)))
        return Retryable(InfraError(self.scrub(f"{self.label} request to {url} failed ({type(exc).__name__}: {reason})")))

    async def post(
        self,
        path: str,
        payload: Mapping[str, object],
        headers: dict[str, str],
        read_stream: Callable[[httpx.Response, float], Awaitable[Reply]],
        read_json: Callable[[httpx.Response], Reply],
    ) -> Reply:
        """One POST round trip: an error status is classified, an SSE body goes to ``read_stream``
        (with the request's start time, for TTFT), anything else to ``read_json``."""
        url = f"{self.base_url}/{path}"

        async def request() -> Reply:
            start = time.perf_counter()
            async with self.client().stream("POST", url, json=payload, headers=headers) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise self.http_error(resp)
                if "text/event-stream" in resp.headers.get("content-type", ""):
                    return await read_stream(resp, start)
                await resp.aread()
                if looks_like_sse(resp.content):  # some proxies and servers label a stream text/plain or JSON
                    return await read_stream(resp, start)
                return read_json(resp)

        return await self.timed(request, url)

    def json_body(self, resp: httpx.Response) -> JSONObject:
        """A non-streamed reply's JSON object; InfraError (key scrubbed) for anything else."""
        try:
            body = resp.json()
        except ValueError as exc:
            msg = f"{self.label} endpoint {self.base_url} sent a non-JSON reply: {excerpt(resp.text)}"
            raise InfraError(self.scrub(msg)) from exc
        if not isinstance(body, dict):
            raise InfraError(self.scrub(f"{self.label} endpoint {self.base_url} sent {excerpt(body)}"))
        parsed: JSONObject = body
        return parsed

    def http_error(self, resp: httpx.Response) -> Exception:
        """429/5xx (and Anthropic's 529 overloaded) are transient; any other 4xx is a config problem."""
        detail = self.scrub(error_detail(resp))
        msg = f"{self.label} endpoint {self.base_url} returned HTTP {resp.status_code}: {detail}"
        if resp.status_code == 429 or resp.status_code >= 500:
            return Retryable(InfraError(msg), retry_after(resp))
        return InfraError(msg)

    def body_error(self, error: JSON, where: str = "stream error") -> Exception:
        """An error object a server put inside a 200 reply: retried when it says the server is
        overloaded or failed (an HTTP 429/5xx in disguise), else raised at once."""
        exc = InfraError(self.scrub(f"{self.label} {where}: {excerpt(error)}"))
        return Retryable(exc) if is_transient(error) else exc

    def scrub(self, text: str) -> str:
        """Never let the api key leak into an error message (servers sometimes echo it)."""
        if self.api_key:
            text = text.replace(self.api_key, "***")
        return text


def sse_data(line: str) -> str | None:
    """The payload of an SSE ``data:`` line; None for separators, ``event:`` lines and comments."""
    line = line.strip()
    return line[5:].strip() if line.startswith("data:") else None


async def sse_payloads(resp: httpx.Response) -> AsyncIterator[str]:
    """Each event's data from an SSE body. The spec lets one event's data span several ``data:``
    lines (joined by newlines, ended by a blank line), while some servers leave out the blank line
    between events; so a data line that is whole JSON (or ``[DONE]``) by itself is one event, and
    anything else is joined with the lines after it until it is whole or a blank line ends it."""
    pending: list[str] = []
    async for line in resp.aiter_lines():
        data = sse_data(line)
        if data is None:
            if pending and not line.strip():
                yield "\n".join(pending)
                pending = []
            continue
        pending.append(data)
        joined = "\n".join(pending)
        if joined == "[DONE]" or _is_json(joined):
            yield joined
            pending = []
    if pending:
        yield "\n".join(pending)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def looks_like_sse(body: bytes) -> bool:
    """An SSE body whatever its content-type says (it starts with a ``data:``/``event:`` field or a comment)."""
    head = body[:64].lstrip()
    return head.startswith((b"data:", b"event:", b":"))


# What in-body errors that mean "try again" say: an overload, a rate limit, a server fault, a
# crashed runner (Ollama: "model runner has unexpectedly stopped … (status 500)").
TRANSIENT = re.compile(
    r"overload|rate.?limit|server.?error|internal.?server|unavailable|timeout|timed out|api_error"
    r"|unexpectedly stopped|status(?: code)?:? ?(?:429|5\d\d)\b",
    re.I,
)


def is_transient(error: JSON) -> bool:
    """Whether an in-body error object (``{"message", "type", "code"}`` or a string) says "try
    again": a 429/5xx code, or a type or message naming an overload, rate limit or server fault."""
    if isinstance(error, dict):
        code = error.get("code", error.get("status"))
        if isinstance(code, (int, str)) and str(code).isdigit() and (int(code) == 429 or int(code) >= 500):
            return True
        error = f"{error.get('type') or ''} {error.get('message') or ''}"
    return bool(TRANSIENT.search(str(error)))


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def error_detail(resp: httpx.Response) -> str:
    """The server's own error message when it sent one (OpenAI, vLLM, Ollama, Anthropic), else the body."""
    try:
        body = resp.json()
    except ValueError:
        return excerpt(resp.text) or resp.reason_phrase
    if isinstance(body, dict):
        err = body.get("error", body.get("detail", body.get("message")))
        if isinstance(err, dict):
            err = err.get("message") or err
        if err:
            return excerpt(err)
    return excerpt(body)


def retry_after(resp: httpx.Response) -> float | None:
    try:
        return float(resp.headers["retry-after"])
    except (KeyError, ValueError):
        return None


def excerpt(value: object) -> str:
    text = one_line(value if isinstance(value, str) else json.dumps(value))
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."


def one_line(text: str) -> str:
    return " ".join(text.split())
