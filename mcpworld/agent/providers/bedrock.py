"""Claude on Amazon Bedrock: the Anthropic Messages body over InvokeModelWithResponseStream.

Only transport and auth differ from AnthropicProvider. The body loses ``model`` (it is in the
path) and ``stream`` (the operation streams), gains ``anthropic_version: bedrock-2023-05-31``,
and carries betas as ``anthropic_beta``; the request is SigV4-signed with credentials from
botocore's standard chain (environment, profiles, SSO, container/instance roles), refreshed by
botocore when they expire. The reply is AWS event-stream framing (botocore's parser checks each
prelude and CRC) whose ``chunk`` events carry the Anthropic stream events base64-encoded, so the
Anthropic stream parser reads them unchanged. Exception events (throttling, model stream errors,
timeouts, service faults) are retried like Anthropic's ``overloaded_error``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials, ReadOnlyCredentials
from botocore.eventstream import EventStreamBuffer, EventStreamMessage, ParserError
from botocore.exceptions import BotoCoreError
from botocore.session import Session

from mcpworld.agent.messages import Message, ToolSchema
from mcpworld.agent.providers.anthropic import AnthropicProvider
from mcpworld.agent.providers.base import ModelInfo, Reply
from mcpworld.agent.providers.http import Retryable, excerpt
from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.secrets import redact, register_secrets

BEDROCK_VERSION = "bedrock-2023-05-31"
SIGNING_NAME = "bedrock"  # the service name SigV4 signs for (bedrock-runtime's signingName)
EVENT_STREAM = "application/vnd.amazon.eventstream"
# Exception events that mean "try again" (Bedrock's ResponseStream: HTTP 429/424/408/500/503).
RETRYABLE_EXCEPTIONS = {
    "throttlingException",
    "modelStreamErrorException",
    "modelTimeoutException",
    "internalServerException",
    "serviceUnavailableException",
}
CREDENTIALS_FIX = (
    "Give AWS credentials the usual way: AWS_PROFILE (after `aws configure` or `aws sso login`), "
    "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or an instance/container role."
)
REGION_FIX = "Set provider.region=<region> (or AWS_REGION), e.g. provider.region=us-east-1."


class BedrockProvider(AnthropicProvider):
    """Anthropic Messages on Bedrock; see the module docstring."""

    def __init__(self, *, region: str | None = None, session: Session | None = None, **kw: Any):
        kw.setdefault("label", "bedrock")
        kw.setdefault("base_url", "")
        kw.setdefault("prompt_caching", True)
        super().__init__(**kw)
        self._session = session or Session()
        self.region = region or self._session.get_config_variable("region")
        if not self.base_url and self.region:
            self.base_url = f"https://bedrock-runtime.{self.region}.amazonaws.com"
        self._credentials: Credentials | None = None

    async def preflight(self) -> ModelInfo:
        """Region and credentials, before any desktop starts (Bedrock has no free call to check the key)."""
        self._require_region()
        await asyncio.to_thread(self._frozen_credentials)
        return ModelInfo(params={"bedrock.region": str(self.region), "bedrock.model_id": self.model})

    # ------------------------------------------------------------------ request

    def payload(self, messages: list[Message], tools: list[ToolSchema]) -> dict[str, object]:
        body = super().payload(messages, tools)
        body.pop("model", None)
        body.pop("stream", None)
        body = {"anthropic_version": BEDROCK_VERSION, **body}
        if self.betas:
            body["anthropic_beta"] = list(self.betas)
        return body

    def url(self) -> str:
        # The model id holds ':' (…-v1:0); it goes percent-encoded in the path, as the SDKs send it.
        return f"{self.base_url}/model/{quote(self.model, safe='')}/invoke-with-response-stream"

    async def _attempt(self, payload: dict[str, object]) -> Reply:
        url = self.url()
        data = json.dumps(payload).encode()
        credentials = await asyncio.to_thread(self._frozen_credentials)
        headers = self.signed_headers(url, data, credentials)

        async def request() -> Reply:
            start = time.perf_counter()
            async with self.client().stream("POST", url, content=data, headers=headers) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    raise self.http_error(resp)
                if EVENT_STREAM in resp.headers.get("content-type", ""):
                    return await self._read_stream(resp, start)
                await resp.aread()
                return self._read_json(resp)

        return await self.timed(request, url)

    def signed_headers(self, url: str, data: bytes, credentials: ReadOnlyCredentials) -> dict[str, str]:
        """The request's headers with SigV4's Authorization and X-Amz-Date (and the session token)."""
        request = AWSRequest(
            method="POST",
            url=url,
            data=data,
            headers={"content-type": "application/json", "accept": EVENT_STREAM, "x-amzn-bedrock-accept": "application/json"},
        )
        SigV4Auth(credentials, SIGNING_NAME, str(self.region)).add_auth(request)
        return {k: str(v) for k, v in request.headers.items()}

    # ------------------------------------------------------------------ auth

    def _require_region(self) -> None:
        if not self.region:
            raise UserError(f"provider={self.label} has no AWS region. {REGION_FIX}")

    def _frozen_credentials(self) -> ReadOnlyCredentials:
        """This moment's key, secret and session token (botocore refreshes temporary ones)."""
        self._require_region()
        try:
            if self._credentials is None:
                self._credentials = self._session.get_credentials()
            if self._credentials is None:
                raise UserError(f"provider={self.label} found no AWS credentials. {CREDENTIALS_FIX}")
            frozen = self._credentials.get_frozen_credentials()
        except BotoCoreError as exc:  # an expired SSO login, an unreachable role endpoint …
            raise InfraError(self.scrub(f"{self.label}: AWS credentials could not be loaded ({exc}). {CREDENTIALS_FIX}")) from exc
        register_secrets([frozen.secret_key, frozen.token])  # redacted wherever they might turn up
        return frozen

    # ------------------------------------------------------------------ responses

    async def stream_events(self, resp: httpx.Response) -> AsyncIterator[str]:
        """The Anthropic events inside the event-stream ``chunk`` messages, as JSON text."""
        buffer = EventStreamBuffer()
        async for data in resp.aiter_bytes():
            buffer.add_data(data)
            try:
                messages = list(buffer)
            except ParserError as exc:  # a bad prelude or CRC: the transfer was damaged
                raise Retryable(InfraError(self.scrub(f"{self.label} sent a damaged event-stream frame ({exc})"))) from exc
            for message in messages:
                event = self._chunk(message)
                if event is not None:
                    yield event

    def _chunk(self, message: EventStreamMessage) -> str | None:
        headers = message.headers
        kind = headers.get(":message-type")
        if kind == "event":
            if headers.get(":event-type") != "chunk":
                return None
            part = json.loads(message.payload or b"{}")
            return base64.b64decode(part.get("bytes") or "").decode()
        if kind == "exception":
            name = str(headers.get(":exception-type") or "exception")
            detail = _message(message.payload)
            exc = InfraError(self.scrub(f"{self.label} stream exception: {name}: {excerpt(detail)}"))
            raise Retryable(exc) if name in RETRYABLE_EXCEPTIONS else exc
        if kind == "error":  # a transport-level error message
            code = str(headers.get(":error-code") or "error")
            error = f"{code}: {headers.get(':error-message') or ''}"
            raise self.body_error(error, "stream error")
        return None

    def http_error(self, resp: httpx.Response) -> Exception:
        """As for any endpoint, plus the fix when AWS refused the credentials or the model access."""
        exc = super().http_error(resp)
        if resp.status_code in (401, 403):
            kind = resp.headers.get("x-amzn-errortype", "").split(":")[0]
            named = f" ({kind})" if kind else ""
            return InfraError(
                f"{exc}{named} {CREDENTIALS_FIX} Also check that model access for {self.model} is granted in {self.region}."
            )
        return exc

    def scrub(self, text: str) -> str:
        return redact(super().scrub(text))


def _message(payload: bytes) -> str:
    """An exception event's message (its JSON body's ``message``), else the payload as text."""
    try:
        body = json.loads(payload or b"{}")
    except ValueError:
        return payload.decode(errors="replace")
    return str(body.get("message") or body.get("Message") or body) if isinstance(body, dict) else str(body)
