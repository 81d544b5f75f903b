"""What an endpoint says it serves, checked once before a job: the model is there, its context is
big enough, and who it is (``served.*`` params) is recorded with the results.

OpenAI-compatible servers list models at ``GET {base_url}/models``. vLLM adds ``root`` (the weights
it loaded), ``parent`` (a LoRA's base) and ``max_model_len``; LM Studio lists only ids there, so its
own ``GET /api/v0/models/{id}`` is asked for quantization and the context it loaded the model with.
Anthropic answers ``GET /v1/models/{id}``. The served identity is a set of params named alike for
every provider: ``served.id``, ``served.root``, ``served.revision``, ``served.max_model_len``,
``served.quantization``, ``served.server_version``.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx

from mcpworld.agent.messages import JSONObject, as_int
from mcpworld.agent.providers.base import ModelInfo
from mcpworld.agent.providers.http import TRANSPORT_ERRORS, Retryable
from mcpworld.core.errors import InfraError, UserError

if TYPE_CHECKING:
    from mcpworld.agent.providers.anthropic import AnthropicProvider
    from mcpworld.agent.providers.http import HttpProvider
    from mcpworld.agent.providers.openai_compat import OpenAICompatProvider

SNAPSHOT = re.compile(r"/snapshots/([0-9a-f]{40})(?:/|$)")  # a Hugging Face cache path names its commit
LMSTUDIO_OWNER = "organization_owner"  # what LM Studio's /v1/models says of every model
NO_LISTING = (404, 405, 501)  # the server has no model listing (a bare proxy): nothing to check against


async def get(provider: HttpProvider, url: str, headers: dict[str, str]) -> httpx.Response:
    """One GET; transport failures worded like chat's (an endpoint that is down names how to start it)."""
    try:
        return await provider.client().get(url, headers=headers)
    except TRANSPORT_ERRORS as exc:
        raise provider.transport_failure(exc, url).final from exc


def body_of(resp: httpx.Response) -> JSONObject | None:
    """A successful reply's JSON object, else None."""
    if resp.status_code >= 400:
        return None
    try:
        body = resp.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def refused(provider: HttpProvider, resp: httpx.Response, what: str) -> InfraError:
    """An error status as one line; a refused key (401/403) names how to give the right one."""
    err = provider.http_error(resp)
    final = err.final if isinstance(err, Retryable) else err
    hint = f" {provider.start_hint}" if resp.status_code in (401, 403) and provider.start_hint else ""
    return InfraError(provider.scrub(f"{final} ({what}).{hint}"))


def too_small(label: str, model: str, served: int, needed: int, fix: str) -> UserError:
    return UserError(
        f"{label} serves {model} with a {served}-token context, but model.context_length={needed} "
        f"needs more (long episodes would be cut short): {fix}, or run with model.context_length={served}."
    )


# ---------------------------------------------------------------------- OpenAI-compatible servers


async def check_openai_server(p: OpenAICompatProvider) -> ModelInfo:
    """The endpoint answers, serves ``p.model`` and gives it at least ``p.context_length`` tokens."""
    resp = await get(p, f"{p.base_url}/models", p.auth_headers())
    if resp.status_code in NO_LISTING:
        print(
            f"mcpworld: warning: {p.label} at {p.base_url} lists no models (GET /models: HTTP {resp.status_code}); "
            f"{p.model} is not checked before the job",
            file=sys.stderr,
        )
        return ModelInfo(params={"served.id": p.model})
    if resp.status_code >= 400:
        raise refused(p, resp, "GET /models")
    listing = (body_of(resp) or {}).get("data")
    entries = [e for e in listing if isinstance(e, dict)] if isinstance(listing, list) else []
    entry = next((e for e in entries if e.get("id") == p.model), None)
    if entry is None:
        raise not_served(p, entries)
    params = identity(entry)
    served = entry.get("max_model_len")
    fix = f"restart it with `--max-model-len {p.context_length}`"
    if entry.get("owned_by") == LMSTUDIO_OWNER or p.label == "lmstudio":
        extra = await lmstudio_model(p)
        params.update(extra)
        served = extra.get("served.max_model_len")
        fix = f"load it with `lms load {p.model} --context-length {p.context_length}`"
    elif entry.get("owned_by") == "vllm":
        params.update(await server_version(p, "/version"))
    if served and p.context_length and as_int(served) < p.context_length:
        raise too_small(p.label, p.model, as_int(served), p.context_length, fix)
    return ModelInfo(params={k: str(v) for k, v in params.items() if v not in (None, "")})


def not_served(p: OpenAICompatProvider, entries: list[JSONObject]) -> UserError:
    """The model is not among those listed: served under another name (vLLM's --served-model-name),
    or not at all (the fix is the preset's start hint: the `vllm serve`/`lms load` command)."""
    renamed = next((e["id"] for e in entries if e.get("root") == p.model and e.get("id")), None)
    if renamed:
        return UserError(f"{p.label} at {p.base_url} serves {p.model} under the name {renamed!r}: run with model.id={renamed}.")
    ids = ", ".join(str(e.get("id")) for e in entries[:8]) or "nothing"
    more = f" and {len(entries) - 8} more" if len(entries) > 8 else ""
    hint = p.start_hint or "Serve it there, or set provider.base_url."
    return UserError(f"{p.label} at {p.base_url} does not serve {p.model} (it serves {ids}{more}). {hint}")


def identity(entry: JSONObject) -> JSONObject:
    """A /models entry as served.* params; the revision is read from a Hugging Face snapshot path."""
    root = str(entry.get("root") or "")
    revision = SNAPSHOT.search(root)
    return {
        "served.id": entry.get("id"),
        "served.root": root,
        "served.parent": entry.get("parent"),
        "served.owned_by": entry.get("owned_by"),
        "served.max_model_len": entry.get("max_model_len"),
        "served.revision": revision.group(1) if revision else None,
    }


async def lmstudio_model(p: OpenAICompatProvider) -> JSONObject:
    """LM Studio's own description of the model: quantization, format, and the context it was
    loaded with (``loaded_context_length``; a model loaded on demand has none until its first call)."""
    root = p.base_url.removesuffix("/v1")
    body = body_of(await get(p, f"{root}/api/v0/models/{quote(p.model, safe='')}", p.auth_headers()))
    if body is None:  # an older LM Studio (before 0.3.6) has no native API
        return {}
    return {
        "served.quantization": body.get("quantization"),
        "served.format": body.get("compatibility_type"),
        "served.arch": body.get("arch"),
        "served.state": body.get("state"),
        "served.max_model_len": body.get("loaded_context_length"),
        "served.trained_context_length": body.get("max_context_length"),
    }


async def server_version(p: HttpProvider, path: str) -> JSONObject:
    """The serving engine's version (vLLM's ``GET /version``, beside /v1); nothing when it has none."""
    body = body_of(await get(p, p.base_url.removesuffix("/v1") + path, {}))
    return {"served.server_version": body.get("version")} if body else {}


# ---------------------------------------------------------------------- Anthropic


async def check_anthropic(p: AnthropicProvider) -> ModelInfo:
    """A key is set, the API answers, and the model exists for it (``GET /v1/models/{id}``: cheap,
    no tokens); its id (an alias resolves to a dated id), name and limits become params."""
    if not p.api_key:
        raise UserError(
            f"provider={p.label} needs an API key and none is set: export ANTHROPIC_API_KEY=... (or set provider.api_key)."
        )
    headers = {"x-api-key": p.api_key, "anthropic-version": p.api_version}
    resp = await get(p, f"{p.base_url}/models/{quote(p.model, safe='')}", headers)
    if resp.status_code == 404:
        raise UserError(
            p.scrub(
                f"{p.label} at {p.base_url} has no model {p.model} (or this key may not use it): "
                "check model.id (the API's ids are listed at GET /v1/models)."
            )
        )
    if resp.status_code >= 400:
        raise refused(p, resp, f"GET /models/{p.model}")
    body = body_of(resp) or {}
    params = {
        "served.id": body.get("id"),
        "served.display_name": body.get("display_name"),
        "served.created_at": body.get("created_at"),
        "served.max_model_len": body.get("max_input_tokens") or None,
        "served.max_output_tokens": body.get("max_tokens") or None,
    }
    return ModelInfo(params={k: str(v) for k, v in params.items() if v not in (None, "")})
