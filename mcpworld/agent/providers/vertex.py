"""Claude on Google Vertex AI: the Anthropic Messages body over ``:streamRawPredict``.

Only transport and auth differ from AnthropicProvider. The URL names the project, region and
model (``…/projects/P/locations/R/publishers/anthropic/models/M:streamRawPredict``; region
``global`` has a host without a region prefix), the body drops ``model`` and carries
``anthropic_version: vertex-2023-10-16``, and the reply is the same SSE stream as Anthropic's.
Auth is a Bearer token from google-auth's Application Default Credentials, refreshed before it
expires; a 401 (a token revoked or expired early) refreshes it and retries within the budget.
Betas stay in the ``anthropic-beta`` header, as Anthropic's own Vertex client sends them.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from mcpworld.agent.messages import Message, ToolSchema
from mcpworld.agent.providers.anthropic import AnthropicProvider
from mcpworld.agent.providers.base import ModelInfo, Reply
from mcpworld.agent.providers.http import Retryable
from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.secrets import redact, register_secrets

if TYPE_CHECKING:
    from google.auth.credentials import Credentials

VERTEX_VERSION = "vertex-2023-10-16"
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
CREDENTIALS_FIX = (
    "Give Application Default Credentials: `gcloud auth application-default login`, or "
    "GOOGLE_APPLICATION_CREDENTIALS=<service-account or credentials JSON>, or run on Google Cloud "
    "with a service account."
)
PROJECT_FIX = "Set provider.project=<project id> (or ANTHROPIC_VERTEX_PROJECT_ID / GOOGLE_CLOUD_PROJECT)."
REGION_FIX = "Set provider.region=<region> (or CLOUD_ML_REGION), e.g. provider.region=us-east5 or global."


def vertex_base_url(region: str) -> str:
    """The regional endpoint; ``global`` is served from the host without a region prefix."""
    host = "aiplatform.googleapis.com" if region == "global" else f"{region}-aiplatform.googleapis.com"
    return f"https://{host}/v1"


class VertexProvider(AnthropicProvider):
    """Anthropic Messages on Vertex AI; see the module docstring."""

    def __init__(self, *, region: str | None = None, project: str | None = None, **kw: Any):
        kw.setdefault("label", "vertex")
        kw.setdefault("base_url", "")
        super().__init__(**kw)
        self.region = region
        self.project = project
        if not self.base_url and region:
            self.base_url = vertex_base_url(region).rstrip("/")
        self._credentials: Credentials | None = None  # loaded lazily
        self._stale = False  # the server refused the token: refresh before the next attempt

    async def preflight(self) -> ModelInfo:
        """Region, credentials, project and one token refresh (a free auth check), before any desktop."""
        await asyncio.to_thread(self._token)
        return ModelInfo(
            params={"vertex.region": str(self.region), "vertex.project": str(self.project), "vertex.model_id": self.model}
        )

    # ------------------------------------------------------------------ request

    def payload(self, messages: list[Message], tools: list[ToolSchema]) -> dict[str, object]:
        body = super().payload(messages, tools)
        body.pop("model", None)
        return {"anthropic_version": VERTEX_VERSION, **body}

    def path(self) -> str:
        return (
            f"projects/{quote(str(self.project), safe='')}/locations/{self.region}"
            f"/publishers/anthropic/models/{quote(self.model, safe='@')}:streamRawPredict"
        )

    async def _attempt(self, payload: dict[str, object]) -> Reply:
        token = await asyncio.to_thread(self._token)
        headers = {
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "accept": "text/event-stream, application/json",
        }
        if self.betas:
            headers["anthropic-beta"] = ",".join(self.betas)
        return await self.post(self.path(), payload, headers, self._read_stream, self._read_json)

    # ------------------------------------------------------------------ auth

    def _token(self) -> str:
        """A valid access token: ADC loaded once, refreshed when expired (or refused by the server)."""
        import google.auth
        import google.auth.exceptions
        from google.auth.transport.requests import Request

        if not self.region:
            raise UserError(f"provider={self.label} has no region. {REGION_FIX}")
        if self._credentials is None:
            try:
                self._credentials, found_project = google.auth.default(scopes=SCOPES)
            except google.auth.exceptions.DefaultCredentialsError as exc:
                raise UserError(f"provider={self.label} found no Google credentials. {CREDENTIALS_FIX}") from exc
            self.project = self.project or found_project
        if not self.project:
            raise UserError(f"provider={self.label} has no Google Cloud project. {PROJECT_FIX}")
        creds = self._credentials
        if creds is None:  # (never: set above or raised)
            raise UserError(f"provider={self.label} found no Google credentials. {CREDENTIALS_FIX}")
        if self._stale or not creds.valid:
            try:
                creds.refresh(Request())
            except google.auth.exceptions.GoogleAuthError as exc:
                msg = f"{self.label}: Google credentials could not be refreshed ({exc}). {CREDENTIALS_FIX}"
                raise InfraError(self.scrub(msg)) from exc
            self._stale = False
        register_secrets([creds.token])  # redacted wherever it might turn up
        return str(creds.token)

    # ------------------------------------------------------------------ responses

    def http_error(self, resp: httpx.Response) -> Exception:
        """401: the token was refused, so refresh it and try again; 403 names the fix."""
        exc = super().http_error(resp)
        if resp.status_code == 401:
            self._stale = True
            return Retryable(InfraError(f"{exc} {CREDENTIALS_FIX}"))
        if resp.status_code == 403:
            return InfraError(
                f"{exc} Check that the Vertex AI API is enabled in project {self.project} and that "
                f"{self.model} is enabled in Model Garden for {self.region}. {CREDENTIALS_FIX}"
            )
        return exc

    def scrub(self, text: str) -> str:
        return redact(super().scrub(text))
