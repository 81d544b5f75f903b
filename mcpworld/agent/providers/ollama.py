"""Ollama: chat through its OpenAI-compatible ``/v1`` API, model management through its native API.

Chat is plain ``OpenAICompatProvider``. What Ollama adds is ``preflight``: before a job the model is
pulled when missing, other loaded models are unloaded (so VRAM and speed figures are this model's
alone, and it is not evicted mid-job), ours is loaded (so the first episode's latency is not a cold
start) and its digest, quantization and VRAM use are returned to be logged with the results, since
the same tag can mean different weights on different days and machines. A served context (the
runner's, else the Modelfile's ``num_ctx`` from ``/api/show``) below ``model.context_length`` stops
the job: Ollama would silently cut long conversations.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx

from mcpworld.agent.messages import JSON, JSONObject, as_int, as_list, as_object
from mcpworld.agent.providers.base import ModelInfo
from mcpworld.agent.providers.http import TRANSPORT_ERRORS, Retryable, one_line
from mcpworld.agent.providers.openai_compat import OpenAICompatProvider
from mcpworld.agent.providers.served import too_small
from mcpworld.core.errors import InfraError, UserError

KEEP_ALIVE = "30m"  # long enough to span the gaps between episodes; Ollama's default is 5m
# Loading a large model into VRAM, or verifying a pulled layer's digest, is silent for minutes.
SLOW = httpx.Timeout(600.0, connect=5.0)
CHOOSE_MODEL = "pick one with model=… (e.g. model=qwen3vl_8b; mcpworld/conf/model/ lists them)"
NOT_MODELS = ("", "oracle")  # model ids that are no Ollama model: the oracle replays solutions
DETAIL_PARAMS = {
    "quantization_level": "ollama.quantization",
    "parameter_size": "ollama.parameter_size",
    "family": "ollama.family",
    "format": "ollama.format",
}


class OllamaProvider(OpenAICompatProvider):
    """An OpenAI-compatible provider whose preflight pulls, loads and describes the Ollama model."""

    def __init__(self, *, pull: bool = True, unload_others: bool = True, label: str = "ollama", **kw: Any):
        super().__init__(label=label, **kw)
        self.pull = pull
        self.unload_others = unload_others
        self.root = self.base_url.removesuffix("/v1")  # the native API lives beside /v1

    async def preflight(self) -> ModelInfo:
        if self.model in NOT_MODELS:  # never `ollama pull oracle`
            raise UserError(f"provider={self.label} needs a language model, and none is chosen: {CHOOSE_MODEL}.")
        tag = full_tag(self.model)
        entry = find(await self._tags(), tag)
        if entry is None:
            if not self.pull:
                raise UserError(f"model {self.model} is not on the Ollama server at {self.root}: {pull_hint(self.model)}")
            await self._pull()
            entry = find(await self._tags(), tag)
            if entry is None:
                raise InfraError(f"{self.label}: pulled {self.model} but {self.root}/api/tags does not list it")
        if self.unload_others:
            for other in objects((await self._request("GET", "/api/ps")).get("models")):
                if full_tag(str(other.get("name") or other.get("model") or "")) != tag:
                    await self._request("POST", "/api/generate", {"model": other.get("name"), "keep_alive": 0})
        await self._request("POST", "/api/generate", {"model": self.model, "keep_alive": KEEP_ALIVE}, SLOW)
        loaded = find(objects((await self._request("GET", "/api/ps")).get("models")), tag) or {}
        shown = await self._request("POST", "/api/show", {"model": self.model})
        return self._describe(entry, loaded, shown)

    # ------------------------------------------------------------------ native API

    async def _tags(self) -> list[JSONObject]:
        return objects((await self._request("GET", "/api/tags")).get("models"))

    async def _request(
        self, method: str, path: str, body: JSONObject | None = None, timeout: httpx.Timeout | None = None
    ) -> JSONObject:
        """One native call; the reply is one JSON object (a load-only /api/generate included)."""
        with self._transport(path):
            resp = await self.client().request(
                method, self.root + path, json=body, headers=self._auth(), timeout=timeout or self.client().timeout
            )
        self._check(resp, method, path)
        return self.json_body(resp)

    async def _pull(self) -> None:
        """Stream ``/api/pull``'s NDJSON progress onto a progress bar; large models take minutes."""
        from rich import progress
        from rich.console import Console

        console = Console(stderr=True)
        columns = (
            progress.TextColumn("{task.description}"),
            progress.BarColumn(),
            progress.DownloadColumn(),
            progress.TransferSpeedColumn(),
        )
        body = {"model": self.model, "stream": True}
        bar = progress.Progress(*columns, console=console, transient=True, disable=not console.is_terminal)
        with self._transport("/api/pull"), bar:
            task = bar.add_task(f"ollama pull {self.model}", total=None)
            async with self.client().stream(
                "POST", self.root + "/api/pull", json=body, headers=self._auth(), timeout=SLOW
            ) as resp:
                if resp.status_code >= 400:
                    await resp.aread()
                    self._check(resp, "POST", "/api/pull")
                async for line in resp.aiter_lines():
                    try:
                        event = json.loads(line) if line.strip() else {}
                    except json.JSONDecodeError:
                        continue
                    if event.get("error"):
                        reason = one_line(str(event["error"]))
                        raise UserError(self.scrub(f"ollama pull {self.model} failed: {reason}"))
                    status = one_line(str(event.get("status") or ""))
                    if event.get("total"):  # one layer at a time: the bar restarts per digest
                        bar.update(task, description=status, total=event["total"], completed=event.get("completed", 0))
                    elif status:
                        bar.update(task, description=status)

    @contextlib.contextmanager
    def _transport(self, path: str) -> Iterator[None]:
        """Transport failures worded like chat's; preflight does not retry."""
        try:
            yield
        except TRANSPORT_ERRORS as exc:
            raise self.transport_failure(exc, self.root + path).final from exc

    def _check(self, resp: httpx.Response, method: str, path: str) -> None:
        if resp.status_code >= 400:
            err = self.http_error(resp)
            final = err.final if isinstance(err, Retryable) else err
            raise InfraError(f"{final} ({method} {path})")

    def http_error(self, resp: httpx.Response) -> Exception:
        """Chat's 404 "model 'x' not found" says how to get the model (the one chosen, never the oracle)."""
        err = super().http_error(resp)
        if resp.status_code == 404 and "not found" in str(err).lower() and isinstance(err, InfraError):
            return InfraError(f"{err} {pull_hint(self.model)}")
        return err

    def _auth(self) -> dict[str, str]:
        """Ollama itself has no keys, but a proxy in front of it may."""
        return self.auth_headers()

    # ------------------------------------------------------------------ description

    def _describe(self, entry: JSONObject, loaded: JSONObject, shown: JSONObject) -> ModelInfo:
        """The model's identity as params (``ollama.*`` as before, and ``served.*`` named alike for every
        provider), sizes as metrics; a served context smaller than model.context_length is an error."""
        details = {**as_object(entry.get("details")), **as_object(loaded.get("details"))}
        digest = str(entry.get("digest") or loaded.get("digest") or "")
        params = {"ollama.digest": digest}
        params.update({key: str(details[name]) for name, key in DETAIL_PARAMS.items() if details.get(name)})
        context = loaded.get("context_length") or num_ctx(shown)  # what it runs with: the runner's, else the Modelfile's
        trained = next((v for k, v in as_object(shown.get("model_info")).items() if k.endswith(".context_length")), None)
        served = {
            "served.id": entry.get("model") or entry.get("name"),
            "served.revision": digest,
            "served.quantization": details.get("quantization_level"),
            "served.max_model_len": context,
            "served.trained_context_length": trained,
        }
        params.update({k: str(v) for k, v in served.items() if v})
        metrics: dict[str, JSON] = {
            "ollama.vram_bytes": loaded.get("size_vram"),
            "ollama.size_bytes": loaded.get("size", entry.get("size")),
            "ollama.context_length": context,
        }
        info = ModelInfo(
            params={k: v for k, v in params.items() if v}, metrics={k: _number(v) for k, v in metrics.items() if v is not None}
        )
        if context and self.context_length and as_int(context) < self.context_length:
            fix = (
                f"serve it with more (`OLLAMA_CONTEXT_LENGTH={self.context_length} ollama serve`, or a Modelfile "
                f"with `PARAMETER num_ctx {self.context_length}`)"
            )
            raise too_small(self.label, self.model, as_int(context), self.context_length, fix)
        return info


def _number(value: JSON) -> float:
    """A size or count Ollama reported, as a metric (a number, or a numeric string)."""
    if isinstance(value, (int, float, str)):
        return float(value)
    raise InfraError(f"ollama reported {value!r} where a number belongs")


def objects(value: JSON) -> list[JSONObject]:
    """The JSON objects of a listing (``models`` of /api/tags and /api/ps); anything else is skipped."""
    return [m for m in as_list(value) if isinstance(m, dict)]


def num_ctx(shown: JSONObject) -> int | None:
    """``num_ctx`` from /api/show's ``parameters`` (the Modelfile's lines, e.g. ``num_ctx 32768``)."""
    for line in str(shown.get("parameters") or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    return None


def pull_hint(model_id: str) -> str:
    """How to get a missing model: pull the chosen one, or (the oracle has no weights) choose one."""
    if model_id in NOT_MODELS:
        return f"No model is chosen: {CHOOSE_MODEL}."
    return f"Run `ollama pull {model_id}` (or set provider.pull=true)."


def full_tag(name: str) -> str:
    """Ollama reads a name without a tag as ``:latest`` (a ``:`` before the last ``/`` is a port)."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def find(models: list[JSONObject], tag: str) -> JSONObject | None:
    """The /api/tags or /api/ps entry for ``tag`` (either field may carry it)."""
    for m in models:
        if tag in (full_tag(str(m.get("name") or "")), full_tag(str(m.get("model") or ""))):
            return m
    return None
