"""Client for Klavis's hosted sandbox API (``env=klavis``): one "local sandbox" per episode runs the
local MCP servers remotely; we get their streamable-HTTP URLs, sync the task workspace up before
the agent runs and download it again before evaluation. "Individual sandboxes" (``/sandbox/{server}``:
github, woocommerce, snowflake …) each run one remote-app server on a test account whose
credentials (``auth_data``, ``metadata``) the task's own scripts need (``mcp.klavis_grant``).

Failures are classified like the model providers do it (but without importing them, for layering):
a missing or rejected key is the user's to fix (``UserError``); anything else the service or the
network does wrong is ``InfraError`` so the episode counts as ``infra_error``. Transient failures
(5xx, timeouts, dropped connections) are retried a couple of times. The API key never appears in a
message, and neither does the signature of a signed storage URL.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlsplit

import httpx

from mcpworld.core.archives import pack, safe_extract
from mcpworld.core.errors import InfraError, UserError
from mcpworld.mcp.klavis_catalog import LOCAL_SANDBOX, TO_LOCAL_SANDBOX
from mcpworld.mcp.klavis_leases import Leases

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.klavis.ai"
# our catalog (or Toolathlon) name -> the name Klavis's local sandbox offers it under (mcp.klavis_catalog)
KLAVIS_NAMES: dict[str, str] = {**{name: name for name in LOCAL_SANDBOX}, **TO_LOCAL_SANDBOX}
MISSING_KEY = "KLAVIS_API_KEY is not set: export KLAVIS_API_KEY=... (env=klavis uses the hosted sandbox)"
EXCERPT_CHARS = 300
TRANSIENT = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


@dataclass
class Sandbox:
    """One acquired sandbox: its id and each of OUR server names' MCP URL. ``server`` is the Klavis
    name of an individual sandbox (``/sandbox/{server}/{id}``); None for the local sandbox."""

    id: str
    urls: dict[str, str]
    server: str | None = None

    @property
    def path(self) -> str:
        return f"/local-sandbox/{self.id}" if self.server is None else f"/sandbox/{self.server}/{self.id}"

    @property
    def label(self) -> str:
        return f"Klavis sandbox {self.id}" if self.server is None else f"Klavis {self.server} sandbox {self.id}"


class _Retry(Exception):
    """One failed attempt worth retrying; ``final`` is raised once the retries are spent."""

    def __init__(self, final: InfraError):
        super().__init__(str(final))
        self.final = final


class KlavisClient:
    """Async client for ``/local-sandbox``; one instance can serve many sandboxes."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        benchmark: str = "Toolathlon",
        ttl_s: int = 7200,
        *,
        max_retries: int = 2,
        retry_base_s: float = 0.5,
        leases: Leases | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("KLAVIS_API_KEY") or None
        self.timeout_s = timeout_s
        self.benchmark = benchmark
        self.ttl_s = int(ttl_s)
        self.max_retries = max(0, int(max_retries))
        self.retry_base_s = retry_base_s
        self._released: set[str] = set()
        self.leases = leases  # where each acquisition is written down until released (a killed run's are reaped)
        self._client: httpx.AsyncClient | None = None  # created lazily, on the loop that uses it

    # -- public API --------------------------------------------------------------------------

    async def acquire(
        self, servers: list[str], test_account_email: str | None = None, names: dict[str, str] | None = None
    ) -> Sandbox:
        """Create a sandbox running ``servers`` (our names; ``names``: each one's Klavis name, as the
        episode's classification gives it, else the local sandbox's documented names); a sandbox
        with a failed server is released again at once so it doesn't linger until its TTL."""
        remote = {s: names[s] for s in servers} if names is not None else klavis_names(servers)
        body: dict[str, Any] = {
            "server_names": sorted(set(remote.values())),
            "benchmark": self.benchmark,
            "ttl_seconds": self.ttl_s,
        }
        if test_account_email:
            body["test_account_email"] = test_account_email
        data = await self._api("POST", "/local-sandbox", body)
        sandbox_id = str(data.get("local_sandbox_id") or "")
        if not sandbox_id:
            raise InfraError(f"Klavis {self.base_url}/local-sandbox sent no local_sandbox_id: {excerpt(data)}")
        sandbox = Sandbox(id=sandbox_id, urls={})
        self._lease(sandbox)
        try:
            by_name = {s.get("server_name"): s for s in data.get("servers") or [] if isinstance(s, dict)}
            for ours, theirs in remote.items():
                entry = by_name.get(theirs)
                if entry is None:
                    raise InfraError(f"Klavis sandbox {sandbox_id} has no {theirs!r} server (for {ours!r})")
                if entry.get("status") == "error" or not entry.get("mcp_server_url"):
                    raise InfraError(
                        f"Klavis sandbox {sandbox_id}: server {theirs!r} (for {ours!r}) failed: "
                        f"status={entry.get('status')!r} {excerpt(entry.get('message') or '')}".rstrip()
                    )
                sandbox.urls[ours] = str(entry["mcp_server_url"])
        except BaseException:
            await self.release(sandbox)
            raise
        return sandbox

    async def acquire_individual(self, ours: str, server: str, test_account_email: str | None = None) -> Sandbox:
        """Occupy one individual sandbox of Klavis's ``server`` for our server ``ours``; one that
        comes back without a URL (or in ``error``) is released again at once."""
        body: dict[str, Any] = {"benchmark": self.benchmark, "ttl_seconds": self.ttl_s}
        if test_account_email:
            body["test_account_email"] = test_account_email
        data = await self._api("POST", f"/sandbox/{server}", body)
        sandbox_id = str(data.get("sandbox_id") or "")
        if not sandbox_id:
            raise InfraError(f"Klavis {self.base_url}/sandbox/{server} sent no sandbox_id: {excerpt(data)}")
        sandbox = Sandbox(id=sandbox_id, urls={}, server=server)
        self._lease(sandbox)
        try:
            given = data.get("server_urls")
            urls: dict[str, Any] = given if isinstance(given, dict) else {}
            url = data.get("server_url") or urls.get(server) or (next(iter(urls.values())) if len(urls) == 1 else None)
            if data.get("status") == "error" or not url:
                raise InfraError(
                    f"{sandbox.label} (for {ours!r}) is not usable: status={data.get('status')!r} "
                    f"{excerpt(data.get('message') or '')}".rstrip()
                )
            sandbox.urls[ours] = str(url)
        except BaseException:
            await self.release(sandbox)
            raise
        return sandbox

    async def info(self, sandbox: Sandbox) -> dict[str, Any]:
        """The sandbox's current state (local: ``created_at``, ``servers``, ``status``; individual:
        also ``metadata`` and ``auth_data``, the test account's credentials)."""
        return await self._api("GET", sandbox.path)

    async def initialize(self, sandbox: Sandbox, data: dict[str, Any]) -> dict[str, Any]:
        """Seed an individual sandbox with a task's initial state (the server's own data schema)."""
        return await self._api("POST", f"{sandbox.path}/initialize", data)

    async def upload_workspace(self, sandbox: Sandbox, folder: Path) -> None:
        """Upload ``folder`` as the sandbox workspace: get a signed URL, PUT the tarball there
        (without our key: it is storage, not the API), then have the sandbox extract it. An empty
        folder is skipped, as Klavis's own client does."""
        folder = Path(folder)
        if not any(folder.iterdir()):
            return
        payload = pack(folder)
        signed = await self._api("POST", f"/local-sandbox/{sandbox.id}/upload-url")
        url = signed.get("upload_url")
        if not url:
            raise InfraError(f"Klavis sandbox {sandbox.id}: upload-url sent no upload_url: {excerpt(signed)}")
        await self._signed("PUT", str(url), content=payload)
        await self._api("POST", f"/local-sandbox/{sandbox.id}/initialize")

    async def dump(self, sandbox: Sandbox, dest: Path) -> list[str]:
        """Download the sandbox workspace into ``dest``; the member names. An archive that would
        write outside ``dest`` raises ``UnsafeArchive`` before anything is extracted."""
        signed = await self._api("GET", f"/local-sandbox/{sandbox.id}/dump")
        url = signed.get("download_url")
        if not url:
            raise InfraError(f"Klavis sandbox {sandbox.id}: dump sent no download_url: {excerpt(signed)}")
        resp = await self._signed("GET", str(url))
        label = f"Klavis sandbox {sandbox.id} dump"
        return safe_extract(resp.content, Path(dest), label=label)

    async def release(self, sandbox: Sandbox) -> bool:
        """Give the sandbox back; whether it is gone (released now, before, or already expired).
        Never raises (a failed release only costs Klavis TTL time, and it runs in cleanup paths
        where it must not hide the real error); a second call is a no-op. A sandbox that could not
        be released stays in the lease ledger, so a later run tries again."""
        if sandbox.id in self._released:
            return True
        try:
            await self._api("DELETE", sandbox.path, missing_ok=True)
        except Exception as exc:
            log.warning("could not release %s: %s", sandbox.label, self.scrub(str(exc)))
            return False
        self._released.add(sandbox.id)
        if self.leases is not None:
            self.leases.forget(sandbox.id)
        return True

    @asynccontextmanager
    async def session(self, servers: list[str], workspace: Path | None = None) -> AsyncIterator[Sandbox]:
        """Acquire a sandbox and upload ``workspace`` into it; released on exit, errors included."""
        sandbox = await self.acquire(servers)
        try:
            if workspace is not None:
                await self.upload_workspace(sandbox, workspace)
            yield sandbox
        finally:
            await self.release(sandbox)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- plumbing ----------------------------------------------------------------------------

    def _lease(self, sandbox: Sandbox) -> None:
        if self.leases is not None:
            self.leases.record(sandbox, self.base_url)

    def client(self) -> httpx.AsyncClient:
        # No default headers: the signed storage URLs must never get our Authorization header.
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s, connect=10.0))
        return self._client

    def scrub(self, text: str) -> str:
        """Never let the key leak into a message (servers sometimes echo it)."""
        return text.replace(self.api_key, "***") if self.api_key else text

    async def _api(self, method: str, path: str, body: dict[str, Any] | None = None, missing_ok: bool = False) -> dict[str, Any]:
        """One authenticated API call, retried when transient; its JSON object."""
        if not self.api_key:
            raise UserError(MISSING_KEY)
        url = f"{self.base_url}{path}"
        headers = {"Authorization": f"Bearer {self.api_key}", "Accept": "application/json"}
        resp = await self._with_retries(method, url, url, headers=headers, json=body)
        if resp.status_code in (401, 403):
            raise UserError(
                f"Klavis rejected KLAVIS_API_KEY (HTTP {resp.status_code} from {method} {url}): check the key at klavis.ai"
            )
        if missing_ok and resp.status_code == 404:
            return {}
        if resp.status_code >= 400:
            raise InfraError(self.scrub(f"Klavis {method} {url} returned HTTP {resp.status_code}: {excerpt(resp.text)}"))
        try:
            data = resp.json() if resp.content else {}
        except ValueError:
            raise InfraError(self.scrub(f"Klavis {method} {url} sent a non-JSON reply: {excerpt(resp.text)}")) from None
        if not isinstance(data, dict):
            raise InfraError(self.scrub(f"Klavis {method} {url} sent {excerpt(data)}"))
        return data

    async def _signed(self, method: str, url: str, content: bytes | None = None) -> httpx.Response:
        """A request to a signed storage URL: no Authorization header, and its signature (the
        query string) kept out of messages."""
        shown = urlsplit(url)._replace(query="", fragment="").geturl()
        headers = {"Content-Type": "application/gzip"} if content is not None else {}
        resp = await self._with_retries(method, url, shown, headers=headers, content=content)
        if resp.status_code >= 400:
            raise InfraError(
                self.scrub(f"Klavis storage {method} {shown} returned HTTP {resp.status_code}: {excerpt(resp.text)}")
            )
        return resp

    async def _with_retries(self, method: str, url: str, shown: str, **kw: Any) -> httpx.Response:
        """Send, retrying 5xx and transport failures ``max_retries`` times with a short backoff."""
        last: _Retry | None = None
        for n in range(self.max_retries + 1):
            if n:
                await asyncio.sleep(self.retry_base_s * 2 ** (n - 1))
            try:
                resp = await self.client().request(method, url, **kw)
            except TRANSIENT as exc:
                reason = " ".join(str(exc).split()) or type(exc).__name__
                last = _Retry(
                    InfraError(
                        self.scrub(
                            f"Klavis {method} {shown} failed ({type(exc).__name__}: {reason}); is {self.base_url} reachable?"
                        )
                    )
                )
                continue
            if resp.status_code >= 500:
                last = _Retry(
                    InfraError(
                        self.scrub(
                            f"Klavis {method} {shown} returned HTTP {resp.status_code} after {n + 1} attempt(s): "
                            f"{excerpt(resp.text)}"
                        )
                    )
                )
                continue
            return resp
        assert last is not None
        raise last.final


def klavis_names(servers: list[str]) -> dict[str, str]:
    """Our server names -> Klavis's; UserError for one the hosted sandbox does not offer."""
    unknown = [s for s in servers if s not in KLAVIS_NAMES]
    if unknown:
        raise UserError(
            f"env=klavis cannot run MCP server(s) {', '.join(map(repr, unknown))}: the Klavis "
            f"sandbox offers {', '.join(sorted(KLAVIS_NAMES))}"
        )
    return {s: KLAVIS_NAMES[s] for s in servers}


def excerpt(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "..."
