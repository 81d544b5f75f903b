"""The Klavis sandboxes one episode holds, from before its preprocess script to after its grader.

As Klavis's Toolathlon runner does it: every hosted server is acquired before the task's preprocess
runs (the local sandbox for the workspace servers, one individual sandbox per remote app such as
github or woocommerce), each individual sandbox is seeded from the task's initial state, and the
test accounts' credentials are handed to the task's preprocess and evaluation scripts as the
runner's environment variables (``klavis_catalog.AUTH_ENV``), with every server's URL in
``KLAVIS_MCP_SERVER_URLS``. The sandboxes are released after grading on every way out (error,
timeout, Ctrl-C); each is in the lease ledger meanwhile, so a run killed outright has them released
by the next one.

The run layer opens the grant around an episode (``mcp.servers.episode_grant``); the MCP sandbox
inside it (``env.mcp_sandbox=klavis``) finds it with :func:`held`, by thread, because one worker
thread runs one episode at a time and the grant spans the desktop's reset and the verdict, which
that sandbox does not see.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mcpworld.config.schema import KlavisConfig
from mcpworld.core.errors import InfraError, UserError
from mcpworld.core.secrets import register_secrets
from mcpworld.core.task import Task
from mcpworld.mcp.klavis import KlavisClient, Sandbox, excerpt
from mcpworld.mcp.klavis_catalog import AUTH_ENV, REMOTE_FLAG, REMOTE_FLAG_ENV, SERVER_URLS_ENV, Classification, Credential
from mcpworld.mcp.klavis_leases import Leases, release_orphans

EventSink = Callable[..., object]
# a task's initial state for an individual sandbox: <task>/klavis_initial_state/<sandbox name>.json, sent to
# POST /sandbox/{name}/{id}/initialize (the server's own data schema)
INITIAL_STATE = "klavis_initial_state"
EMAIL_CONFIGS = ("emails_config.json", "email_config.json")  # the task's test mailbox (emails tasks)

_held = threading.local()
_reaped: set[str] = set()  # Klavis URLs whose leftovers this process has released already
_reap_lock = threading.Lock()


@dataclass
class Grant:
    """The episode's sandboxes: the local one (workspace servers), the individual ones, and what the
    task's own scripts get (``env``: credentials, server URLs, the remote flag)."""

    local: Sandbox | None = None
    individual: list[Sandbox] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def urls(self) -> dict[str, str]:
        """Our server name -> its MCP URL, every hosted server."""
        out: dict[str, str] = {}
        for sandbox in ([self.local] if self.local else []) + self.individual:
            out.update(sandbox.urls)
        return out

    @property
    def sandboxes(self) -> list[Sandbox]:
        return ([self.local] if self.local else []) + self.individual

    def task(self, task: Task) -> Task:
        """The task as this episode runs it: its preprocess step and its grader get ``env``, and
        nothing else does (the desktop, the agent's shell and apps never see the credentials)."""
        setup = [
            step.with_params(env=dict(self.env)) if step.kind == "execute" and step.params.get("preprocess") else step
            for step in task.setup
        ]
        grader = replace(task.grader, env=dict(self.env)) if task.grader else task.grader
        return replace(task, setup=setup, grader=grader)


def held() -> Grant | None:
    """The grant of the episode this thread runs, if it holds one."""
    return getattr(_held, "grant", None)


def client_for(k: KlavisConfig) -> KlavisClient:
    return KlavisClient(
        k.base_url, k.api_key, timeout_s=k.timeout_s, benchmark=k.benchmark, ttl_s=k.ttl_s, leases=Leases(k.leases_dir)
    )


@contextmanager
def hold(k: KlavisConfig, servers: list[str], task_dir: Path, on_event: EventSink) -> Iterator[Grant]:
    """Acquire the sandboxes for ``servers`` (task names), hand the grant to the episode, release them
    all on the way out, whatever the way."""
    grant = Grant()
    try:
        asyncio.run(_acquire(k, servers, Path(task_dir), grant, on_event))
        _held.grant = grant
        yield grant
    finally:
        _held.grant = None
        if grant.sandboxes:
            gone = asyncio.run(_release(k, grant.sandboxes))
            on_event("klavis_release", sandboxes=[s.id for s in grant.sandboxes], released=gone)


async def _acquire(k: KlavisConfig, servers: list[str], task_dir: Path, grant: Grant, on_event: EventSink) -> None:
    """Fill ``grant`` (so whatever was acquired is released even when a later step fails)."""
    classification = Classification.of(k)
    places = {name: classification.placement(name) for name in servers}
    missing = [name for name, place in places.items() if not place.hosted]
    if missing:
        raise UserError(
            f"env=klavis: this Klavis account has no sandbox for MCP server(s) "
            f"{', '.join(map(repr, missing))} (env.klavis.no_sandbox; {task_dir}); run this task with "
            "env=local, or leave it out"
        )
    async with client_for(k) as client:
        await _reap_once(client, Leases(k.leases_dir), on_event)
        local = [name for name, place in places.items() if place.kind == "local"]
        if local:
            grant.local = await client.acquire(
                local,
                test_account_email(task_dir) if "emails" in local else None,
                names={name: places[name].name for name in local},
            )
            on_event("klavis_sandbox", sandbox=grant.local.id, servers=sorted(grant.local.urls))
        for name, place in places.items():
            if place.kind != "individual":
                continue
            sandbox = await client.acquire_individual(name, place.name)
            grant.individual.append(sandbox)
            on_event("klavis_individual", server=place.name, sandbox=sandbox.id, mcp_server=name)
            await _configure(client, sandbox, task_dir, grant.env)
    grant.env.update({SERVER_URLS_ENV: json.dumps(grant.urls, sort_keys=True), REMOTE_FLAG_ENV: REMOTE_FLAG})


async def _configure(client: KlavisClient, sandbox: Sandbox, task_dir: Path, env: dict[str, str]) -> None:
    """Seed the sandbox from the task's initial state, then read its test account's credentials."""
    assert sandbox.server is not None
    state = task_dir / INITIAL_STATE / f"{sandbox.server}.json"
    if state.is_file():
        try:
            data = json.loads(state.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UserError(f"{state}: not JSON ({exc}); it must hold the {sandbox.server} sandbox's data") from None
        await client.initialize(sandbox, data if isinstance(data, dict) else {"data": data})
    wanted = AUTH_ENV.get(sandbox.server, ())
    if wanted:
        env.update(credentials(sandbox, await client.info(sandbox), wanted))


def credentials(sandbox: Sandbox, details: dict[str, Any], wanted: tuple[Credential, ...]) -> dict[str, str]:
    """The runner's env variables from a sandbox's details; one it needs and did not get is the
    service's failure (the task's scripts would fail on a missing account, not the agent)."""
    out: dict[str, str] = {}
    for cred in wanted:
        section = details.get(cred.source)
        value = section.get(cred.field) if isinstance(section, dict) else None
        if value is not None:
            out[cred.env] = str(value)
    if not out:
        raise InfraError(
            f"{sandbox.label} sent no credentials ({', '.join(sorted({c.source for c in wanted}))} "
            f"without {', '.join(c.field for c in wanted)}): "
            f"{excerpt({k: '…' for k in details})}"
        )
    register_secrets(out.values())  # the traces, saved outputs and traj_log.json redact them
    return out


def test_account_email(task_dir: Path) -> str | None:
    """The mailbox the task's emails config names (the runner acquires that test account)."""
    for name in EMAIL_CONFIGS:
        path = task_dir / name
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                return None
            email = data.get("email") if isinstance(data, dict) else None
            return str(email) if email else None
    return None


async def _release(k: KlavisConfig, sandboxes: list[Sandbox]) -> list[str]:
    """Release each (individual ones first, as they hang off the accounts); the ids now gone."""
    async with client_for(k) as client:
        gone = []
        for sandbox in sorted(sandboxes, key=lambda s: s.server is None):
            if await client.release(sandbox):
                gone.append(sandbox.id)
        return gone


async def _reap_once(client: KlavisClient, leases: Leases, on_event: EventSink) -> None:
    """Release what killed runs left on this Klavis (once per process and Klavis URL)."""
    with _reap_lock:
        if client.base_url in _reaped:
            return
        _reaped.add(client.base_url)
    released = await release_orphans(client, leases)
    if released:
        on_event("klavis_leftovers", released=[lease.id for lease in released])
