"""A real local HTTP server that speaks Claude on Vertex AI, and the OAuth token endpoint behind ADC.

Vertex side, as Google serves it: ``POST /v1/projects/{project}/locations/{region}/publishers/
anthropic/models/{model}:streamRawPredict`` (or ``:rawPredict``) with ``Authorization: Bearer``
a token this server issued and has not expired (else 401 ``UNAUTHENTICATED`` in Google's error
envelope), the right project/region (403/404 otherwise), and a body with ``anthropic_version:
vertex-2023-10-16`` and no ``model`` key, plus the Messages rules of ``anthropic_server.validate``
(400 ``INVALID_ARGUMENT``). Replies stream SSE exactly as FakeAnthropicServer's do (same script
keys), or a recorded stream with ``transcript`` (a file under tests/data/transcripts).

Token side: ``POST /token`` is Google's OAuth 2.0 token endpoint for a service account, the ADC
kind a ``GOOGLE_APPLICATION_CREDENTIALS`` file names: a JWT-bearer grant whose assertion must be
signed by the account's key (checked with google-auth against its public key) and addressed to
Google's token endpoint (google-auth puts that audience in the JWT whatever ``token_uri`` says).
A good one gets a fresh ``access_token`` valid for ``token_lifetime_s``; a wrong
key gets Google's 400 ``invalid_grant: Invalid JWT Signature.``. ``expire(token)`` revokes a token
early, as when it expired on Google's side. (Authorized-user ADC files are no use here:
google-auth always sends them to Google's own token endpoint.)
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from tests.fakes.anthropic_server import _events, _message, validate, validate_thinking
from tests.fakes.bedrock_server import recorded_events as recorded
from tests.fakes.scripted_server import ScriptedHandler, ScriptedServer

ROUTE = re.compile(
    r"^/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/anthropic/models/"
    r"(?P<model>[^/:]+):(?P<method>streamRawPredict|rawPredict)$"
)
STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
UNAUTHENTICATED = (
    "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or "
    "other valid authentication credential."
)


class FakeVertexServer(ScriptedServer):
    """Scripted Vertex AI endpoint + token endpoint on 127.0.0.1 (random port)."""

    def __init__(
        self,
        script: list[dict[str, Any]] | None = None,
        *,
        project: str = "fake-project",
        region: str = "us-east5",
        model: str = "claude-sonnet-4-5@20250929",
        token_lifetime_s: int = 3600,
    ):
        self.project, self.region = project, region
        self.token_lifetime_s = token_lifetime_s
        self.account = f"mcpworld-tests@{project}.iam.gserviceaccount.com"
        self.private_key_pem, self.public_key_pem = rsa_key_pair()
        self.tokens: list[str] = []  # access tokens handed out, in order
        self._valid: set[str] = set()
        self.auth_seen: list[str] = []  # the Authorization header of every Vertex request
        self.rejected: list[str] = []
        self.issued: dict[str, str] = {}  # thinking signatures handed out, as FakeAnthropicServer keeps them
        self._token_lock = threading.Lock()
        super().__init__(script, model, _make_handler)
        self.token_uri = f"http://127.0.0.1:{self.port}/token"

    def expire(self, token: str) -> None:
        with self._token_lock:
            self._valid.discard(token)

    def service_account_file(self, folder: Path, private_key_pem: str | None = None, project: bool = True) -> Path:
        """A service-account key file (what GOOGLE_APPLICATION_CREDENTIALS names) whose token_uri is this server;
        ``private_key_pem`` another key (a revoked one), ``project=False`` leaves out project_id."""
        info = {
            "type": "service_account",
            "client_email": self.account,
            "client_id": "1234567890",
            "private_key_id": "fakekeyid0001",
            "private_key": private_key_pem or self.private_key_pem,
            "token_uri": self.token_uri,
        }
        if project:
            info["project_id"] = self.project
        path = folder / "service-account.json"
        path.write_text(json.dumps(info))
        return path

    def _issue(self, form: dict[str, str]) -> dict[str, Any] | None:
        from google.auth import exceptions, jwt

        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return None
        try:
            claims = jwt.decode(form.get("assertion", ""), certs=self.public_key_pem, audience=GOOGLE_TOKEN_AUDIENCE)
        except (ValueError, exceptions.GoogleAuthError):
            return None
        if claims.get("iss") != self.account:
            return None
        with self._token_lock:
            token = f"ya29.fake-{len(self.tokens) + 1}-{uuid.uuid4().hex[:12]}"
            self.tokens.append(token)
            self._valid.add(token)
        return {"access_token": token, "expires_in": self.token_lifetime_s, "token_type": "Bearer"}

    def _token_ok(self, token: str) -> bool:
        with self._token_lock:
            return token in self._valid


def _make_handler(server: FakeVertexServer) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                if self.path == "/token":
                    return self._token(raw)
                self._predict(raw, headers)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _token(self, raw: bytes) -> None:
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            issued = server._issue(form)
            if issued is None:
                self.send_json(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
            else:
                self.send_json(200, issued)

        def _predict(self, raw: bytes, headers: dict[str, str]) -> None:
            route = ROUTE.match(self.path)
            if route is None:
                return self._error(404, f"The requested URL {self.path} was not found on this server.")
            auth = headers.get("authorization", "")
            server.auth_seen.append(auth)
            if not auth.startswith("Bearer ") or not server._token_ok(auth[7:]):
                return self._error(401, UNAUTHENTICATED)
            if route["project"] != server.project or route["region"] != server.region:
                return self._error(
                    403, f"Permission denied on resource project {route['project']} (or it may not exist) in {route['region']}."
                )
            if unquote(route["model"]) != server.model:
                return self._error(
                    404,
                    f"Publisher Model `projects/{route['project']}/locations/{route['region']}/"
                    f"publishers/anthropic/models/{unquote(route['model'])}` not found.",
                )
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                return self._error(400, "Invalid JSON payload received.")
            problem = check_body(body, headers) or validate_thinking(body, headers, server.issued)
            reply = server._record(body, headers, problem is None)
            if problem is not None:
                return self._error(400, problem)
            if reply.get("status"):
                return self._error(int(reply["status"]), reply.get("error") or f"scripted error {reply['status']}", record=False)
            if route["method"] == "rawPredict" or not body.get("stream"):
                return self.send_json(200, _message(body, reply, server.model, server.issued))
            events = (
                recorded(reply["transcript"]) if reply.get("transcript") else _events(body, reply, server.model, server.issued)
            )
            frames = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
            self.send_stream(reply, frames, content_type="text/event-stream; charset=utf-8")

        def _error(self, status: int, message: str, record: bool = True) -> None:
            if record:
                server.rejected.append(f"{status}: {message}")
            self.send_json(status, {"error": {"code": status, "message": message, "status": STATUS.get(status, "UNKNOWN")}})

    return Handler


def check_body(body: Any, headers: dict[str, str]) -> str | None:
    if not isinstance(body, dict):
        return "Invalid JSON payload received."
    if body.get("anthropic_version") != "vertex-2023-10-16":
        return "anthropic_version: vertex-2023-10-16 is required in the request body"
    if "model" in body:
        return "model: Extra inputs are not permitted (the model is named in the URL)"
    return validate(body, {**headers, "anthropic-version": body["anthropic_version"]})


def rsa_key_pair() -> tuple[str, str]:
    """A fresh 2048-bit RSA key: (private PKCS#8 PEM, public PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public
