"""Which MCP servers an episode gets, and how they are reached.

A task's own ``mcp_servers`` (else its app config's) are expanded from the catalog, their
placeholders filled with the episode's paths, optionally routed through the recording proxy, or
swapped for Klavis's hosted sandbox (``env=klavis``). Only modalities that offer the ``mcp`` tool
family start any server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from omegaconf import OmegaConf

from mcpworld.apps.catalog import app_setting
from mcpworld.config.schema import AppConfig, KlavisConfig, McpConfig, ModalityConfig
from mcpworld.core.errors import UserError
from mcpworld.core.registry import Registry
from mcpworld.core.task import Task
from mcpworld.env.base import Environment
from mcpworld.mcp.client import EventSink, ServerPool
from mcpworld.mcp.install import servers_dir
from mcpworld.mcp.spec import ServerSpec, parse_servers

if TYPE_CHECKING:
    from mcpworld.mcp.klavis_grant import Grant


@dataclass(frozen=True)
class McpSettings:
    """What decides an episode's servers: the modality's tools, the selected app config (its
    mcp_servers), the mcp section (catalog, proxy, timeouts) and where servers run."""

    modality: ModalityConfig
    app: AppConfig
    mcp: McpConfig
    sandbox: str  # env.mcp_sandbox: a name in SANDBOXES
    klavis: KlavisConfig

    @classmethod
    def of(cls, cfg: Any) -> McpSettings:
        """The pieces of a run config (the one place that reads the root config)."""
        return cls(modality=cfg.modality, app=cfg.app, mcp=cfg.mcp, sandbox=str(cfg.env.mcp_sandbox), klavis=cfg.env.klavis)


def offers_mcp(cfg: McpSettings) -> bool:
    return "mcp" in cfg.modality.tools


def app_servers(cfg: McpSettings, app: str) -> list[Any]:
    """The MCP servers an app's config gives its tasks (see ``mcpworld.apps``)."""
    return list(app_setting(cfg.app, app, "mcp_servers") or [])


def task_servers(cfg: McpSettings, task: Task) -> list[ServerSpec]:
    """The task's servers (or its app config's), catalog names expanded; placeholders still open.
    With ``env.mcp_sandbox=klavis`` a name Klavis hosts needs no catalog entry (the sandbox
    replaces every spec with its URL)."""
    entries = task.mcp_servers or app_servers(cfg, task.app)
    catalog = cast(dict[str, Any], OmegaConf.to_container(cast(Any, cfg.mcp.catalog), resolve=True) or {})
    if cfg.sandbox == "klavis":
        from mcpworld.mcp.klavis_catalog import Classification

        where_runs = Classification.of(cfg.klavis)
        catalog = {
            **{e: {"name": e, "url": "klavis:"} for e in entries if isinstance(e, str) and where_runs.placement(e).hosted},
            **catalog,
        }
    where = str(task.source) if task.mcp_servers else f"mcpworld/conf/app/{task.app}.yaml"
    return parse_servers(entries, catalog, where)


def unavailable(cfg: McpSettings, task: Task) -> str | None:
    """Why this task cannot be run with its servers here (none to offer, or a catalog server not
    installed), or None."""
    if (
        offers_mcp(cfg)
        and not {"computer", "bash"} & set(cfg.modality.tools)
        and not task_servers(cfg, task)
        and not task.local_tools
    ):
        return f"it has no MCP servers, and modality={cfg.modality.name} offers no other tools"
    if offers_mcp(cfg) and cfg.sandbox == "klavis":
        from mcpworld.mcp.klavis_catalog import Classification

        where_runs = Classification.of(cfg.klavis)
        missing = [s.name for s in task_servers(cfg, task) if not where_runs.placement(s.name).hosted]
        return (
            (
                f"its MCP server(s) {', '.join(map(repr, missing))} have no Klavis sandbox on this account "
                "(env.klavis.no_sandbox); run it with env=local"
            )
            if missing
            else None
        )
    if not offers_mcp(cfg) or cfg.mcp.proxy.mode == "replay":
        return None  # answered from cassettes: nothing runs here
    values = {"servers": str(servers_dir(cfg.mcp.servers_dir))}
    for spec in task_servers(cfg, task):
        why = spec.filled(values).unavailable()
        if why:
            return f"its MCP server {spec.name!r} is not available: {why} (run `python -m mcpworld.mcp.install`)"
    return None


def withheld(cfg: McpSettings, task: Task) -> frozenset[str]:
    """Tools that exist for this task but not in this modality: a call to one is `outside_modality`."""
    names = {family for family in ("computer", "bash") if family not in cfg.modality.tools}
    if not offers_mcp(cfg):
        with suppress(UserError):
            names |= {f"{spec.name}-" for spec in task_servers(cfg, task)}
        names |= {f"local-{tool}" for tool in task.local_tools}
    return frozenset(names)


def _routed(cfg: McpSettings, spec: ServerSpec, episode_dir: Path, workspace: Path) -> ServerSpec:
    from mcpworld.mcp.proxy import proxied

    proxy = cfg.mcp.proxy
    if proxy.mode == "off":  # (the schema's ProxyMode checked the value at composition)
        return spec
    if proxy.mode == "replay":
        if not proxy.cassettes:
            raise UserError("mcp.proxy.mode=replay needs mcp.proxy.cassettes=FOLDER (a recorded episode's mcp/ folder)")
        cassette = Path(proxy.cassettes) / f"{spec.name}.jsonl"
        if not cassette.is_file():
            raise UserError(f"mcp.proxy.cassettes: {cassette} does not exist (record it with mcp.proxy.mode=record)")
    else:
        cassette = episode_dir / "mcp" / f"{spec.name}.jsonl"
    return proxied(
        spec,
        proxy.mode,
        cassette.resolve(),
        fault_rate=proxy.fault_rate,
        fault_kinds=list(proxy.fault_kinds),
        fault_latency_s=proxy.fault_latency_s,
        seed=proxy.seed,
        call_timeout_s=cfg.mcp.call_timeout_s,
        workspace=str(workspace),
    )


def as_account(
    spec: ServerSpec,
    user: Any,
    on_event: EventSink,
    tmp: str | None = None,
    confined: Callable[[list[str]], list[str]] | None = None,
) -> ServerSpec:
    """The server started as the desktop's account (``env.local.desktop_user.DesktopUser``), so it writes
    the agent's files as the agent would and reaches no more than its shell; one whose program or
    files that account cannot reach (a venv over pyenv's python under /root) stays the harness's,
    said in the trace. Only the server: a recording proxy in front of it is the harness's. ``tmp``:
    the desktop's own temp folder (a shared /tmp holds other accounts' sockets and folders).
    ``confined``: the desktop's own wrapper (its account, cgroup and network), when it has one."""
    if user is None or not spec.command:
        return spec
    files = [a for a in spec.args if a.startswith("/") and Path(a).exists()]  # a script it runs, its root …
    closed = (
        spec.command if not user.can_use(spec.command, execute=True) else next((f for f in files if not user.can_use(f)), None)
    )
    if closed:
        on_event("mcp_user", server=spec.name, user="harness", why=f"the desktop account cannot reach {closed}")
        return spec
    command, *args = (confined or user.wrap)([spec.command, *spec.args])
    return replace(spec, command=command, args=args, env={"TMPDIR": tmp, **spec.env} if tmp else spec.env)


class Sandbox:
    """Where an episode's MCP servers run (``env.mcp_sandbox``): called as an async context, the specs
    (placeholders filled) in, specs the pool can reach out. ``hosted``: the servers run elsewhere, on a
    lease per episode, so the agent works in the sandbox's own workspace (``workspace``), and the lease's
    credentials reach the task's preprocess (a reset cannot be staged ahead of its episode). A plain
    function registered from outside the package is a sandbox on this host."""

    hosted: bool = False

    def workspace(self, cfg: McpSettings) -> str | None:
        """The workspace the agent is told of when the servers are hosted (None: the task's on the desktop)."""
        return None

    def __call__(
        self, cfg: McpSettings, specs: list[ServerSpec], env: Environment, workspace: Path, on_event: EventSink
    ) -> AbstractAsyncContextManager[list[ServerSpec]]:
        raise NotImplementedError


def hosted(sandbox: str) -> bool:
    """Whether ``env.mcp_sandbox=sandbox`` runs the servers elsewhere (``Sandbox.hosted``)."""
    return bool(getattr(SANDBOXES.get(sandbox), "hosted", False))


def agent_workspace(cfg: McpSettings, task: Task, env: Environment) -> str:
    """The workspace the agent's prompt and the oracle's solution name: a hosted sandbox's own when the
    modality offers MCP tools, else the task's workspace on the desktop."""
    sandbox = SANDBOXES.get(cfg.sandbox)
    own = sandbox.workspace(cfg) if offers_mcp(cfg) and isinstance(sandbox, Sandbox) else None
    return own if own is not None else str(env.resolve(task.workspace))


SANDBOXES: Registry[Sandbox] = Registry("env.mcp_sandbox", group="mcpworld.mcp_sandboxes")


@asynccontextmanager
async def episode_servers(
    cfg: McpSettings, task: Task, env: Environment, episode_dir: Path, on_event: EventSink
) -> AsyncIterator[ServerPool | None]:
    """The running servers for one episode (None when the modality offers no MCP tools)."""
    specs = task_servers(cfg, task) if offers_mcp(cfg) else []
    if not specs:
        yield None
        return
    workspace = env.resolve(task.workspace)
    values = {
        "workspace": str(workspace),
        "home": str(env.home),
        "episode": str(episode_dir.resolve()),
        "servers": str(servers_dir(cfg.mcp.servers_dir)),
        **{f"port_{name}": str(port) for name, port in env.ports.items()},
    }  # e.g. {port_cdp}
    sandbox = SANDBOXES.get(cfg.sandbox)
    async with (
        sandbox(cfg, [s.filled(values) for s in specs], env, workspace, on_event) as reachable,
        ServerPool(
            [_routed(cfg, s, episode_dir, workspace) for s in reachable],
            log_dir=episode_dir / "logs",
            home=env.home,
            start_timeout_s=cfg.mcp.start_timeout_s,
            call_timeout_s=cfg.mcp.call_timeout_s,
            on_event=on_event,
        ) as pool,
    ):
        yield pool


class LocalSandbox(Sandbox):
    """The catalog's servers on this host, each started as the desktop's account where it can be."""

    @asynccontextmanager
    async def __call__(
        self, cfg: McpSettings, specs: list[ServerSpec], env: Environment, workspace: Path, on_event: EventSink
    ) -> AsyncIterator[list[ServerSpec]]:
        user = getattr(env, "user", None)
        tmp = str(env.runtime_dir) if user is not None and hasattr(env, "runtime_dir") else None
        yield [as_account(s, user, on_event, tmp, getattr(env, "confined", None)) for s in specs]


class KlavisSandbox(Sandbox):
    """Hosted servers: the episode's grant (``episode_grant``, held from before preprocess to after
    grading) when it has one, else a local sandbox acquired here. The workspace goes up to the local
    sandbox before the agent and comes back over ours afterwards (so grading sees it)."""

    hosted = True

    def workspace(self, cfg: McpSettings) -> str | None:
        return cfg.klavis.workspace

    @asynccontextmanager
    async def __call__(
        self, cfg: McpSettings, specs: list[ServerSpec], env: Environment, workspace: Path, on_event: EventSink
    ) -> AsyncIterator[list[ServerSpec]]:
        from mcpworld.mcp.klavis_grant import client_for, held

        grant = held()
        async with client_for(cfg.klavis) as client:
            if grant is not None:
                if grant.local is not None:
                    await client.upload_workspace(grant.local, workspace)
                yield [ServerSpec(name=s.name, transport="http", url=grant.urls[s.name]) for s in specs]
                if grant.local is not None:
                    await client.dump(grant.local, workspace)
                return
            async with client.session([s.name for s in specs], workspace) as sandbox:
                on_event("klavis_sandbox", sandbox=sandbox.id, servers=sorted(sandbox.urls))
                yield [ServerSpec(name=s.name, transport="http", url=sandbox.urls[s.name]) for s in specs]
                await client.dump(sandbox, workspace)


SANDBOXES.register("local")(LocalSandbox())
SANDBOXES.register("klavis")(KlavisSandbox())


@contextmanager
def episode_grant(cfg: McpSettings, task: Task, on_event: EventSink) -> Iterator[Grant | None]:
    """The Klavis sandboxes an episode holds around its reset and verdict (``env.mcp_sandbox=klavis``
    with MCP tools; else None): what the task's preprocess and grader get is ``grant.env``."""
    names = [s.name for s in task_servers(cfg, task)] if offers_mcp(cfg) and cfg.sandbox == "klavis" else []
    if not names:
        yield None
        return
    from mcpworld.mcp.klavis_grant import hold

    with hold(cfg.klavis, names, task.dir, on_event) as grant:
        yield grant
