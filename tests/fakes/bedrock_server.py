"""A real local HTTP server that speaks Bedrock's InvokeModelWithResponseStream for Claude.

What it checks, as Bedrock does: the route ``POST /model/{modelId}/invoke-with-response-stream``
(the id percent-encoded), a SigV4 ``Authorization`` header for service ``bedrock`` in its region —
its shape, then the signature itself, recomputed with botocore from the secret of the access key
(unknown key: 403 UnrecognizedClientException; wrong secret: 403 InvalidSignatureException) — and
the body: ``anthropic_version: bedrock-2023-05-31``, no ``model`` or ``stream`` key, and the
Messages rules of ``anthropic_server.validate`` (400 ValidationException otherwise).

What it answers: AWS event-stream messages (``application/vnd.amazon.eventstream``; prelude,
headers, payload, both CRCs) whose ``chunk`` events carry each Anthropic stream event as base64
``bytes`` (with the ``p`` padding field Bedrock adds), the last one with Bedrock's
``amazon-bedrock-invocationMetrics``. Script entries are FakeAnthropicServer's (``text``,
``tool_uses``, ``status``, ``usage`` …) plus:

- ``transcript``: a file under tests/data/transcripts whose recorded SSE events are sent instead.
- ``exception``: an exception event (e.g. ``throttlingException``) sent after ``exception_after``
  chunks (default 1) instead of the rest, with ``error`` as its message; the stream then ends.
- ``status`` answers an HTTP error with Bedrock's JSON body ``{"message": …}`` and
  ``x-amzn-ErrorType`` header (``error_type``, default by status).
"""

from __future__ import annotations

import base64
import json
import re
import struct
import uuid
from binascii import crc32
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.fakes.anthropic_server import _events, validate, validate_thinking
from tests.fakes.scripted_server import ScriptedHandler, ScriptedServer

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "data" / "transcripts"
ROUTE = re.compile(r"^/model/(?P<model>[^/]+)/invoke-with-response-stream$")
AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[A-Z0-9]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/"
    r"(?P<service>[a-z0-9-]+)/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})$"
)
ERROR_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
BAD_SIGNATURE = (
    "The request signature we calculated does not match the signature you provided. Check your AWS "
    "Secret Access Key and signing method. Consult the service documentation for details."
)


class FakeBedrockServer(ScriptedServer):
    """Scripted Bedrock runtime on 127.0.0.1 (random port); ``keys`` maps access key id → secret."""

    def __init__(
        self,
        script: list[dict[str, Any]] | None = None,
        *,
        region: str = "us-east-1",
        keys: dict[str, str] | None = None,
        model: str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    ):
        self.region = region
        self.keys = dict(keys or {"AKIDFAKEBEDROCK0001": "fake-secret-key-for-tests-only"})
        self.paths: list[str] = []
        self.rejected: list[str] = []  # why requests were refused, in order
        self.issued: dict[str, str] = {}  # thinking signatures handed out, as FakeAnthropicServer keeps them
        super().__init__(script, model, _make_handler)
        self.base_url = f"http://127.0.0.1:{self.port}"  # Bedrock's API sits at the host's root


def _make_handler(server: FakeBedrockServer) -> type[BaseHTTPRequestHandler]:
    class Handler(ScriptedHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            server.paths.append(self.path)
            route = ROUTE.match(self.path)
            try:
                if route is None:
                    return self._refuse(404, "UnknownOperationException", f"no route {self.path}", None)
                problem = check_signature(server, self.path, headers, raw)
                if problem is not None:
                    return self._refuse(403, problem[0], problem[1], None)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    return self._refuse(
                        400, "ValidationException", "Malformed input request, please reformat your input and try again.", None
                    )
                problem_text = check_body(body) or validate_thinking(
                    body, {"anthropic-beta": ",".join(body.get("anthropic_beta") or [])}, server.issued
                )
                if problem_text is not None:
                    server._record(body, headers, False)
                    return self._refuse(400, "ValidationException", problem_text, body)
                if unquote(route["model"]) != server.model:
                    server._record(body, headers, False)
                    return self._refuse(400, "ValidationException", "The provided model identifier is invalid.", body)
                reply = server._record(body, headers)
                if reply.get("status"):
                    status = int(reply["status"])
                    kind = reply.get("error_type") or ERROR_TYPES.get(status, "InternalServerException")
                    return self._refuse(status, kind, reply.get("error") or f"scripted error {status}", body, record=False)
                self.send_stream(
                    reply, frames(body, reply, server.model, server.issued), content_type="application/vnd.amazon.eventstream"
                )
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _refuse(self, status: int, kind: str, message: str, body: Any, record: bool = True) -> None:
            if record:
                server.rejected.append(f"{kind}: {message}")
            self.send_json(
                status,
                {"message": message},
                {
                    "x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
                    "x-amzn-RequestId": str(uuid.uuid4()),
                },
            )

    return Handler


# -------------------------------------------------------------------- checks


def check_signature(server: FakeBedrockServer, path: str, headers: dict[str, str], body: bytes) -> tuple[str, str] | None:
    """(error type, message) when the SigV4 signature is missing, malformed or wrong; None when valid."""
    auth = AUTH.match(headers.get("authorization", ""))
    if auth is None:
        return "InvalidSignatureException", f"Authorization header is not a SigV4 signature: {headers.get('authorization')!r}"
    amz_date = headers.get("x-amz-date", "")
    signed = auth["signed"].split(";")
    if auth["service"] != "bedrock" or auth["region"] != server.region:
        return "InvalidSignatureException", (
            f"Credential should be scoped to a valid region and service 'bedrock' in "
            f"{server.region}, not {auth['region']}/{auth['service']}."
        )
    if not amz_date.startswith(auth["date"]) or "host" not in signed or "x-amz-date" not in signed:
        return "InvalidSignatureException", "Credential date, X-Amz-Date and the signed headers (host, x-amz-date) disagree."
    secret = server.keys.get(auth["key"])
    if secret is None:
        return "UnrecognizedClientException", "The security token included in the request is invalid."
    # Recompute: the same canonical request over what arrived, signed with the key's secret.
    request = AWSRequest(
        method="POST",
        url=f"http://{headers['host']}{path}",
        data=body,
        headers={name: headers[name] for name in signed if name in headers},
    )
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(auth["key"], secret, headers.get("x-amz-security-token")), "bedrock", server.region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if expected != auth["signature"]:
        return "InvalidSignatureException", BAD_SIGNATURE
    return None


def check_body(body: Any) -> str | None:
    """Bedrock's own checks, then the Messages rules."""
    if not isinstance(body, dict):
        return "Malformed input request: expected an object, please reformat your input and try again."
    if body.get("anthropic_version") != "bedrock-2023-05-31":
        return "Malformed input request: #: required key [anthropic_version] not found or invalid, please reformat."
    for key in ("model", "stream"):
        if key in body:
            return f"Malformed input request: #: extraneous key [{key}] is not permitted, please reformat your input."
    if not isinstance(body.get("anthropic_beta", []), list):
        return "Malformed input request: #/anthropic_beta: expected type: JSONArray"
    return validate(body, {"anthropic-version": body["anthropic_version"]})


# -------------------------------------------------------------------- framing


def recorded_events(name: str) -> list[dict[str, Any]]:
    """The events of a recorded Anthropic SSE stream (its ``data:`` lines), in order."""
    text = (TRANSCRIPTS / name).read_text()
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def frames(body: dict[str, Any], reply: dict[str, Any], model: str, issued: dict[str, str] | None = None) -> list[bytes]:
    events = (
        recorded_events(reply["transcript"])
        if reply.get("transcript")
        else _events(body, reply, model, {} if issued is None else issued)
    )
    if events and events[-1].get("type") == "message_stop":
        events[-1] = {
            **events[-1],
            "amazon-bedrock-invocationMetrics": {
                "inputTokenCount": 12,
                "outputTokenCount": 34,
                "invocationLatency": 567,
                "firstByteLatency": 89,
            },
        }
    out = [chunk_message(e) for e in events]
    if reply.get("exception"):
        after = int(reply.get("exception_after", 1))
        out = [
            *out[:after],
            exception_message(reply["exception"], reply.get("error") or "Too many requests, please wait before trying again."),
        ]
    return out


def chunk_message(event: dict[str, Any]) -> bytes:
    data = json.dumps(event, separators=(",", ":")).encode()
    payload = {"bytes": base64.b64encode(data).decode(), "p": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"[: len(data) % 36]}
    return encode_message(
        {":event-type": "chunk", ":content-type": "application/json", ":message-type": "event"}, json.dumps(payload).encode()
    )


def exception_message(kind: str, message: str) -> bytes:
    return encode_message(
        {":exception-type": kind, ":content-type": "application/json", ":message-type": "exception"},
        json.dumps({"message": message}).encode(),
    )


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: total and headers length, prelude CRC, string headers (type 7),
    the payload and the message CRC (CRC-32 over everything before it), all big-endian."""
    head = b"".join(
        struct.pack(">B", len(k)) + k.encode() + struct.pack(">BH", 7, len(v.encode())) + v.encode() for k, v in headers.items()
    )
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", crc32(prelude) & 0xFFFFFFFF)
    message = prelude + head + payload
    return message + struct.pack(">I", crc32(message) & 0xFFFFFFFF)
