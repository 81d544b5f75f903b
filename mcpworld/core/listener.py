"""The one rule for every HTTP listener mcpworld starts (docs/security.md lists them all).

Each request passes four checks, in this order, before any handler code runs:

1. ``Host`` names the listener itself: a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``) and
   the port it is bound to; on a non-loopback bind also an IP address or this machine's own name.
   A page whose DNS name was rebound to 127.0.0.1 sends its own name: 403.
2. No ``Origin`` but the listener's own (``http://`` + its Host), and no ``Sec-Fetch-Site`` but
   ``same-origin``/``none``: what a web page in the researcher's browser sends cross-site. 403.
3. ``Authorization: Bearer <token>``, compared in constant time: the per-run secret (``new_token``),
   kept in a 0600 file beside the run (``write_token``), never printed. 401.
4. A body only as ``application/json``: a ``text/plain`` or form POST, which a browser sends
   cross-site without asking first ("simple" requests), is refused before it is read. 415.

Listeners bind 127.0.0.1 unless told otherwise; ``listen_token`` refuses a non-loopback bind
whose token the researcher did not set (a fresh token in a file on this machine is of no use to a
client elsewhere), with one line saying how to do it safely.

``GuardedHandler`` applies the checks to an ``http.server`` handler; ``GuardedApp`` wraps an ASGI
app (uvicorn: HTTP and WebSocket alike). Standard library only: the desktop image imports it.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import json
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Protocol, cast
from urllib.parse import parse_qs, urlsplit

from mcpworld.core.errors import UserError

JSON_TYPE = "application/json"
QUERY_TOKEN = "token"  # the query parameter a URL-only client may carry the token in (Guard.query_token)
TOKEN_FILE = "token"  # the file's name in a served folder


class Headers(Protocol):
    """Request headers by lower-case name (``http.server``'s message, a dict built from ASGI's)."""

    def get(self, name: str, /) -> str | None: ...


# where a listener is bound: ``(host, port, …)`` as ``socket.getsockname`` gives it, or a unix socket's path
Address = tuple[Any, ...] | str | bytes


@dataclass(frozen=True)
class Refusal:
    status: int  # 401, 403 or 415
    message: str

    def body(self) -> bytes:
        return json.dumps({"error": self.message}).encode()

    def headers(self) -> list[tuple[str, str]]:
        extra = [("WWW-Authenticate", "Bearer")] if self.status == 401 else []
        return [("Content-Type", JSON_TYPE), ("Content-Length", str(len(self.body()))), *extra]


def is_loopback(host: str) -> bool:
    """``host`` (a listen address or a Host name) is this machine's loopback only."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(32)


def listen_token(host: str, variable: str, port: int | None = None) -> str:
    """The token a listener on ``host`` takes: ``$variable`` when the researcher set it, else a fresh
    one on a loopback bind. A non-loopback bind without ``$variable`` raises UserError (one line)."""
    given = os.environ.get(variable, "").strip()
    if given:
        return given
    if is_loopback(host):
        return new_token()
    tunnel = f"ssh -L {port}:127.0.0.1:{port} THIS-HOST" if port else "ssh -L"
    raise UserError(
        f"--host {host} would serve other machines without a token you chose; set {variable} "
        "to a long random secret (python -c 'import secrets; print(secrets.token_urlsafe(32))') "
        f"on both sides, or keep --host 127.0.0.1 and reach it through `{tunnel}`"
    )


def write_token(path: Path, token: str) -> Path:
    """``token`` in ``path``, readable by its owner only (0600 from the start: never a moment wider)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        os.fchmod(out.fileno(), 0o600)  # whatever the umask
        out.write(token)
    return path


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``name:port`` / ``[v6]:port`` / ``name`` → (name, port); None when it is not a host."""
    value = value.strip().lower()
    if not value:
        return None
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:]
    elif value.count(":") == 1:
        name, _, port_text = value.partition(":")
    elif ":" in value:  # a bare IPv6 address
        name, port_text = value, ""
    else:
        name, port_text = value, ""
    if port_text and not port_text.isdigit():
        return None
    return name, int(port_text) if port_text else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


@functools.lru_cache(maxsize=1)
def _own_names() -> frozenset[str]:
    """This machine's names (looked up once: ``getfqdn`` may ask DNS)."""
    names = {socket.gethostname().lower()}
    names.add(socket.getfqdn().lower())
    names.update(n.split(".")[0] for n in list(names))
    return frozenset(names)


def host_allowed(host: str | None, bound: Address, method: str = "GET", names: tuple[str, ...] = ()) -> bool:
    """``host`` (a Host header) names the listener bound at ``bound`` (``(host, port, …)`` or a unix
    socket's path): its port and a loopback name, or ``names``; on a non-loopback bind also an IP
    address or this machine's own name (a client on another machine)."""
    parsed = _split_host(host or "")
    if parsed is None:
        return False
    name, port = parsed
    unix = not isinstance(bound, tuple)  # a unix socket's path: no port, and no browser reaches it
    # CONNECT's Host names the tunnel's target, not us
    if not unix and method != "CONNECT" and (port if port is not None else 80) != int(bound[1]):
        return False
    if is_loopback(name) or name in {n.lower() for n in names}:
        return True
    if unix:
        return False
    bound_host = str(bound[0]).lower()
    if name == bound_host:
        return True
    if is_loopback(bound_host):
        return False
    return _is_ip(name) or name in _own_names()


def browser_refusal(method: str, headers: Headers, bound: Address, names: tuple[str, ...] = ()) -> Refusal | None:
    """Checks 1 and 2 alone (Host, then Origin and Sec-Fetch-Site): what stops a web page in a
    browser, DNS-rebound or cross-site. ``Guard.check`` starts with them; a stand-in for a
    third-party server whose own clients send no token of ours (tests/fakes/osworld_vm.py) uses
    them alone."""
    host = headers.get("host")
    if not host_allowed(host, bound, method, names):
        return Refusal(403, f"Host {host!r} is not this server's address (use 127.0.0.1 and its port)")
    origin = headers.get("origin")
    if origin is not None and origin.strip().lower() != f"http://{str(host).strip().lower()}":
        return Refusal(403, f"Origin {origin!r}: cross-site requests are refused")
    fetch_site = (headers.get("sec-fetch-site") or "none").strip().lower()
    if fetch_site not in ("same-origin", "none"):
        return Refusal(403, f"Sec-Fetch-Site {fetch_site!r}: cross-site requests are refused")
    return None


@dataclass(frozen=True)
class Guard:
    """The checks for one listener. ``names``: other Host names it answers to (a unix socket's
    clients name it as they like, e.g. ``desktop``). ``query_token``: the token may also come as
    ``?token=…``, for clients that are given only a URL (an MCP client's server URL, as Klavis's are)."""

    token: str
    names: tuple[str, ...] = ()
    query_token: bool = False

    def __post_init__(self) -> None:
        if not self.token:
            raise UserError("an mcpworld listener needs a token (none was given); see docs/security.md")

    def check(self, method: str, target: str, headers: Headers, bound: Address) -> Refusal | None:
        """None when the request may go on; else what to answer. ``bound``: the server's address
        (``(host, port, …)``, or a unix socket's path); ``headers``: ``get`` by lower-case name."""
        refusal = browser_refusal(method, headers, bound, self.names)
        if refusal is not None:
            return refusal
        if not self._token_given(target, headers):
            return Refusal(
                401,
                "wrong or missing token (send Authorization: Bearer …; the token is in the "
                "0600 file this service wrote, see docs/security.md)",
            )
        content_type = headers.get("content-type")
        has_body = (headers.get("content-length") or "0").strip() not in ("", "0") or headers.get("transfer-encoding")
        media = (content_type or "").split(";")[0].strip().lower()
        if (content_type is not None or has_body) and media != JSON_TYPE:
            return Refusal(415, f"Content-Type {content_type!r}: bodies here are {JSON_TYPE} only")
        return None

    def _token_given(self, target: str, headers: Headers) -> bool:
        expected = self.token.encode()
        scheme, _, given = str(headers.get("authorization") or "").strip().partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected):
            return True
        if self.query_token:
            for value in parse_qs(urlsplit(target).query).get(QUERY_TOKEN, []):
                if hmac.compare_digest(value.encode(), expected):
                    return True
        return False


class GuardedHandler(BaseHTTPRequestHandler):
    """An ``http.server`` handler whose every request (any method, CONNECT included) passes ``guard``
    first; a refused one is answered with JSON ``{"error": …}`` and its connection closed."""

    guard: Guard  # set by the server's own subclass

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        bound = cast(Address, self.server.server_address)  # (typeshed: a buffer for unix sockets)
        refusal = self.guard.check(self.command, self.path, self.headers, bound)
        if refusal is None:
            return True
        self.close_connection = True  # its body, if any, is never read
        self.send_response(refusal.status)
        for key, value in refusal.headers():
            self.send_header(key, value)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(refusal.body())
        return False


Scope = MutableMapping[str, Any]  # ASGI's, as Starlette types them
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class GuardedApp:
    """An ASGI app behind ``guard``: HTTP requests and WebSocket handshakes alike (a refused
    handshake is closed before it is accepted, which uvicorn answers 403 whatever the reason)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], guard: Guard):
        self.app, self.guard = app, guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        target = scope.get("path", "/") + ("?" + scope["query_string"].decode("latin-1") if scope.get("query_string") else "")
        server = scope.get("server")  # (host, port), or (a unix socket's path, None)
        bound: Any = tuple(server) if server and server[1] is not None else str(server[0] if server else "")
        refusal = self.guard.check(scope.get("method", "GET"), target, headers, bound)
        if refusal is None:
            return await self.app(scope, receive, send)
        if scope["type"] == "http":
            raw = [(k.lower().encode(), v.encode()) for k, v in refusal.headers()]
            await send({"type": "http.response.start", "status": refusal.status, "headers": raw})
            await send({"type": "http.response.body", "body": refusal.body()})
        else:  # closed before it is accepted: the server answers the handshake 403
            await send({"type": "websocket.close", "code": 1008})
