"""Structured-config schema: every key Hydra composes is declared here, so a typo'd key, a wrong
type or a value outside a closed choice fails at composition with Hydra's message naming the key and
the choices. A closed choice is a StrEnum: it compares equal to its plain string, so code reads it as
one. A choice that names an implementation (``provider.kind``, ``model.profile``, ``env.backend``,
``env.mcp_sandbox``, ``tracking.backend``) is a plain string here: its registry is the one list of
names, open to other packages, and ``run.choices`` checks the value against it before a job starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hydra.core.config_store import ConfigStore


class OracleReplay(StrEnum):
    """What the oracle replays (mcpworld/agent/providers/oracle.py, docs/certify.md)."""

    solution = "solution"  # the task's solution as written
    spoiled = "spoiled"  # the nearly right answer: its declared spoil:, else without its last state-changing step


class Coordinates(StrEnum):
    pixels = "pixels"  # of the screenshot sent
    normalized_1000 = "normalized_1000"  # 0-1000 on both axes (the Qwen-VL family)


class ImageFormat(StrEnum):
    jpeg = "jpeg"
    png = "png"


class ToolFamily(StrEnum):
    computer = "computer"
    bash = "bash"
    done = "done"
    mcp = "mcp"


class VmKind(StrEnum):
    osworld = "osworld"  # OSWorld's Ubuntu VM server (desktop_env/server/main.py)
    waa = "waa"  # Windows Agent Arena's Windows 11 VM server


class EnvFiles(StrEnum):
    # the desktop's processes see the episode's home and what its task hands them, not the benchmark's
    # task files, solutions or results (env=local: a mount namespace per desktop, which needs root; a job
    # that cannot have it fails, one line); the suites' paths (/home/user, /workspace …) exist as views
    hidden = "hidden"
    # env=local: the host's files as the desktop account's permissions allow (the answers in reach)
    open = "open"


class EnvNetwork(StrEnum):
    # the desktop has a network of its own: no host loopback, no other episode, and a firewall that keeps
    # it off the host's own addresses; a job whose desktops cannot get all of it fails (docs/isolation.md)
    isolated = "isolated"
    # as isolated where the machine allows it; else, warned, without the firewall (no iptables) or, for
    # env=local, on the host's network (no namespace: not root); network_effective says what each got
    isolated_unfenced = "isolated_unfenced"
    host = "host"  # the desktop shares the host's network (loopback services included)


class ProxyMode(StrEnum):
    off = "off"
    record = "record"
    replay = "replay"
    fault = "fault"


class FaultKind(StrEnum):
    error = "error"
    latency = "latency"
    drop = "drop"


class GpuSource(StrEnum):
    local = "local"  # NVML on this host
    prometheus = "prometheus"  # a DCGM exporter (or mcpworld's gpu_agent) on the model host: telemetry.gpu.url
    none = "none"


class Variant(StrEnum):
    """Which of a family's released variants is served (Qwen3-VL ships both)."""

    instruct = "instruct"
    thinking = "thinking"


class Lang(StrEnum):
    en = "en"
    cn = "cn"  # Toolathlon's *_cn variants


@dataclass
class PriceConfig:
    """USD per 1M tokens, as the provider bills them (None: no cost is computed)."""

    input: float | None = None
    output: float | None = None
    cached_input: float | None = None


@dataclass
class ModelConfig:
    name: str = "oracle"
    id: str = "oracle"  # provider-side model id (e.g. the Ollama tag)
    context_length: int = 32768
    max_tokens: int = 2048
    temperature: float = 0.0
    top_p: float | None = None  # sent when set (None: the server's default)
    top_k: int | None = None  # sent when set, where the server takes it (vLLM yes, Ollama's /v1 no)
    presence_penalty: float | None = None  # sent when set
    frequency_penalty: float | None = None  # sent when set (UI-TARS's reference run uses 1)
    vision: bool = True
    coordinates: Coordinates = Coordinates.pixels
    preferred_resolution: str | None = None
    # largest screenshot [w, h] sent to the model; a bigger screen is downscaled (aspect kept) and the
    # model's pixel coordinates are mapped back to the screen. None = the screen's own size.
    image_max: list[int] | None = None
    # Anthropic computer use: the versioned tool types and the beta that enables them
    computer_tool: str | None = None  # e.g. computer_20250124
    bash_tool: str | None = None  # e.g. bash_20250124
    betas: list[str] = field(default_factory=list)  # e.g. [computer-use-2025-01-24]
    # the model's id on other platforms, by provider.kind (bedrock, vertex); a kind not listed uses `id`
    ids: dict[str, str] = field(default_factory=dict)
    # how the family is driven (agent.profiles.PROFILES): prompt, tool schema, request layout, reply parsing
    profile: str = "generic"
    variant: Variant = Variant.instruct
    profile_options: dict[str, Any] = field(default_factory=dict)  # family-specific knobs (see the profile)
    thinking_budget: int | None = None  # Claude extended thinking: budget_tokens (None: off)
    # Claude 4: the interleaved-thinking-2025-05-14 beta with thinking (thinking between tool calls, a
    # budget above max_tokens); Anthropic's reference agent never sends it, so off unless asked for
    interleaved_thinking: bool = False
    price: PriceConfig = field(default_factory=PriceConfig)
    # set on presets kept only to reproduce earlier runs (a retired or retiring model): why, and what to use
    # instead; warned once when the model is used
    legacy: str | None = None


@dataclass
class ProviderConfig:
    name: str = "oracle"
    kind: str = "oracle"  # agent.providers.PROVIDERS: a registered kind, another package's, or package.module:build
    base_url: str | None = None
    api_key: str | None = None  # from ${oc.env:...}; never logged
    timeout_s: float = 120.0
    max_retries: int = 3
    start_hint: str = ""  # how to start the endpoint, shown when it is unreachable
    pull: bool = True  # ollama: pull a missing model (False: fail with the `ollama pull` command)
    unload_others: bool = True  # ollama: unload other loaded models first, so GPU figures are this model's
    prompt_caching: bool = True  # anthropic: cache the static prefix (system prompt, tools)
    api_version: str = "2023-06-01"  # anthropic: the anthropic-version header
    region: str | None = None  # bedrock/vertex: the cloud region (AWS_REGION, CLOUD_ML_REGION)
    project: str | None = None  # vertex: the Google Cloud project (else the one ADC names)
    replay: OracleReplay = OracleReplay.solution  # oracle: the solution, or its spoiled variant (certify)


@dataclass
class ResolutionConfig:
    name: str = "square"
    width: int = 1000
    height: int = 1000


@dataclass
class AppConfig:
    name: str = "all"
    apps: list[str] = field(default_factory=list)  # task apps this selection runs; empty = every app
    # MCP servers for this app's tasks that list none themselves: catalog names or {name, command, ...}
    # (also used when another selection, e.g. app=all, runs this app's tasks)
    mcp_servers: list[Any] = field(default_factory=list)
    relaunch_on_exit: bool = False  # an app that exits during an episode is started again (app_exit event either way)
    # how the desktop starts this app (binary, the command names tasks use, flags, ports, golden
    # profile, packages, readiness): read from every mcpworld/conf/app file by mcpworld.apps.programs
    program: Any | None = None


@dataclass
class ModalityConfig:
    name: str = "gui"
    tools: list[ToolFamily] = field(default_factory=lambda: [ToolFamily.computer, ToolFamily.done])  # families offered


@dataclass
class SettleConfig:
    interval_s: float = 0.03
    stable_frames: int = 3
    idle_s: float = 0.3
    max_s: float = 3.0


@dataclass
class AgentConfig:
    max_steps: int = 30
    max_llm_calls: int = 40
    timeout_s: float = 600.0
    keep_screenshots: int = 3
    image_format: ImageFormat = ImageFormat.jpeg  # jpeg (≈ 3 ms per 1000x1000 frame) | png (lossless, ≈ 18 ms)
    image_quality: int = 85
    loop_repeats: int = 3  # same action + same observation this many times in a row = a loop (A-B-A-B too)
    loop_stop: bool = False  # end the episode at the first loop (termination "loop")
    bash_timeout_s: float = 30.0
    bash_max_output: int = 10_000
    system_prompt: str = ""
    settle: SettleConfig = field(default_factory=SettleConfig)


@dataclass
class EvaluatorConfig:
    success_threshold: float = 1.0  # score at or above this is a success
    partial_credit: bool = True  # keep fractional scores; False rounds below-threshold scores to 0
    templates: dict[str, Any] = field(default_factory=dict)  # named specs: evaluator: {template: NAME, with: {...}}


@dataclass
class KlavisConfig:
    base_url: str = "https://api.klavis.ai"
    api_key: str | None = None  # ${oc.env:KLAVIS_API_KEY}; never logged
    benchmark: str = "Toolathlon"
    ttl_s: int = 7200
    timeout_s: float = 60.0
    workspace: str = "/data"  # where the sandbox's servers see the uploaded workspace (the prompt says this)
    # the ledger of held sandboxes (a killed run's are released by the next); None: $MCPWORLD_HOME/.klavis-leases
    leases_dir: str | None = None
    # where each server runs (docs/mcp.md, "Klavis sandboxes"): the local sandbox's servers in Klavis's
    # names (None: the Toolathlon runner's 13), every other server an individual sandbox; for an account
    # that differs, e.g. [filesystem, …, localmemory] puts memory in the local sandbox
    local_sandbox: list[str] | None = None
    # task server name -> the individual sandbox it is asked for, over the built-in renames (google_sheet → google_sheets …)
    sandbox_names: dict[str, str] = field(default_factory=dict)
    # task servers the account has no sandbox for: their tasks are skipped with the reason
    no_sandbox: list[str] = field(default_factory=list)


@dataclass
class VncConfig:
    public: bool = False  # env=docker: VNC and noVNC on every interface (default: 127.0.0.1 only)


@dataclass
class VmConfig:
    """env=vm: the suite's own machine, reached through its server (no desktop of ours)."""

    url: str | None = None  # e.g. http://192.168.122.10:5000 (OSWorld) or :5000 (WAA)
    # a pool of VMs, one per concurrent episode (concurrency ≤ their number); instead of url
    urls: list[str] | None = None
    kind: VmKind = VmKind.osworld
    # run on this host before each episode (revert a snapshot …); {url} in it: the VM being reset
    reset_command: str | None = None
    reset_commands: list[str] | None = None  # with urls: one reset command per VM, in their order
    ready_timeout_s: float = 300.0  # how long the server may take to answer after a reset
    request_timeout_s: float = 120.0  # one request (the servers run a command for up to 120 s)


@dataclass
class EnvConfig:
    backend: str = "local"  # env.BACKENDS: local (Xvfb here), docker (a container per desktop), vm (a suite's own VM)
    window_manager: str = "openbox"
    app_timeout_s: float = 20.0
    # env=docker: the desktop image's base (None: Debian made here by debootstrap, no registry needed),
    # the apps it holds (None: those the run's tasks start; [all]: every app), the container's start bound
    base_image: str | None = None
    apps: list[str] | None = None
    start_timeout_s: float = 60.0
    # desktops per worker, each episode on a fresh one; env=docker: containers started ahead; env=local:
    # 1 starts each episode's desktop at its reset, N ≥ 2 keeps N-1 started ahead (docs/isolation.md)
    pool: int = 1
    # the next episode of a worker set up whole (home, app, setup steps) on a second desktop while one runs,
    # so its reset is a hand-over (docs/isolation.md "Staging"); env=local and env=docker
    stage: bool = False
    network: EnvNetwork = EnvNetwork.isolated  # env=docker: a bridge network; env=local: a network namespace
    files: EnvFiles = EnvFiles.hidden  # env=local: a mount namespace (docs/isolation.md); env=docker: always hidden
    vnc: VncConfig = field(default_factory=VncConfig)
    vm: VmConfig = field(default_factory=VmConfig)
    mcp_sandbox: str = "local"  # mcp.servers.SANDBOXES: local (on this host), klavis (Klavis's hosted sandbox)
    klavis: KlavisConfig = field(default_factory=KlavisConfig)


@dataclass
class ProxyConfig:
    mode: ProxyMode = ProxyMode.off
    cassettes: str | None = None  # replay: folder of <server>.jsonl
    fault_rate: float = 0.0
    fault_kinds: list[FaultKind] = field(default_factory=lambda: [FaultKind.error])
    fault_latency_s: float = 2.0
    seed: int = 0


@dataclass
class McpConfig:
    servers_dir: str = ".mcp-servers"
    start_timeout_s: float = 60.0
    call_timeout_s: float = 60.0
    max_output_chars: int = 100_000
    proxy: ProxyConfig = field(default_factory=ProxyConfig)
    catalog: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrackingConfig:
    backend: str = "mlflow"  # telemetry.tracking.tracker.BACKENDS: mlflow, none
    uri: str = "sqlite:///outputs/mlflow.db"
    artifact_root: str = "outputs/mlartifacts"
    experiment: str = "default"  # the MLflow experiment; experiment presets name theirs
    log_screenshots: bool = True
    traces: bool = True  # one MLflow trace per episode (LLM and TOOL spans)


@dataclass
class GpuTelemetryConfig:
    source: GpuSource = GpuSource.local
    rate_hz: float = 4.0  # samples per second, GPU and CPU alike (one sampler per job)
    url: str | None = None  # source=prometheus: the model host's /metrics (dcgm-exporter :9400, gpu_agent :9401)


@dataclass
class CpuTelemetryConfig:
    rapl: bool = True  # CPU package energy from RAPL where readable (else one line and param energy.cpu)
    powercap_root: str = "/sys/class/powercap"


@dataclass
class TelemetryConfig:
    gpu: GpuTelemetryConfig = field(default_factory=GpuTelemetryConfig)
    cpu: CpuTelemetryConfig = field(default_factory=CpuTelemetryConfig)
    idle_s: float = 5.0  # idle baseline (power_w_idle) sampled before the first episode; 0: none, no net energy
    # where the jobs on this host list their calls, so jobs sharing a GPU share its energy (null: this job alone)
    ledger_dir: str | None = "/dev/shm/mcpworld-energy"
    kwh_price: float | None = None  # USD per kWh: the episodes' measured energy as energy_cost_usd (None: not priced)


@dataclass
class FilesConfig:
    """Where the files tasks name by URL come from (mcpworld/downloads.py)."""

    cache_dir: str | None = None  # None: $XDG_CACHE_HOME/mcpworld/files (~/.cache/mcpworld/files)
    mirror: str | None = None  # a local copy of a suite's file cache (OSWorld's: <domain>/<id>/<file>)
    # URL prefix -> another URL prefix or a folder: a mapping in YAML, pairs on the command line
    # (files.rewrite=[[https://huggingface.co/,/data/hf]]: Hydra's override keys cannot hold a URL)
    rewrite: Any = None
    retries: int = 3
    timeout_s: float = 300.0


@dataclass
class TasksConfig:
    root: str | None = None  # a folder of task.yaml files; None = the built-in tasks/
    exclude_tags: list[str] = field(default_factory=list)
    solutions: str | None = None  # a folder of <task id>.yaml oracle solutions for a suite's tasks


@dataclass
class ToolathlonConfig:
    """How Toolathlon task folders run (mcpworld/tasks/toolathlon.py)."""

    root: str | None = None  # a Toolathlon checkout; None: the nearest ancestor of the task folder with utils/
    python: str | None = None  # graders' interpreter; None: make toolathlon's, else python3.12 on PATH, else ours
    lang: Lang = Lang.en
    claim_done: bool = True  # upstream's rule: only an agent that claimed done is graded (else it fails)


@dataclass
class PcCanaryConfig:
    """How MCPWorld/PC-Canary task folders resolve their authors' paths (mcpworld/tasks/mcpworld_format.py)."""

    root: str | None = None  # a PC-Canary checkout; None: the task folder's nearest ancestor with tests/tasks


@dataclass
class RootConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    provider: ProviderConfig = field(default_factory=ProviderConfig)
    resolution: ResolutionConfig = field(default_factory=ResolutionConfig)
    app: AppConfig = field(default_factory=AppConfig)
    modality: ModalityConfig = field(default_factory=ModalityConfig)
    agent: AgentConfig = field(default_factory=AgentConfig)
    evaluator: EvaluatorConfig = field(default_factory=EvaluatorConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    mcp: McpConfig = field(default_factory=McpConfig)
    telemetry: TelemetryConfig = field(default_factory=TelemetryConfig)
    tasks: TasksConfig = field(default_factory=TasksConfig)
    files: FilesConfig = field(default_factory=FilesConfig)
    toolathlon: ToolathlonConfig = field(default_factory=ToolathlonConfig)
    pccanary: PcCanaryConfig = field(default_factory=PcCanaryConfig)
    task: Any = None  # one id, a glob ("mousepad/*"), or a list of them
    attempts: int = 1
    infra_retries: int = 1  # an episode that ends in infra_error is run again (its first try is kept aside)
    concurrency: int = 1
    resume: bool = True  # the same run/sweep dir again: skip finished episodes (false: start over)
    # the sampling seed sent to the model server, and a label of the run; None (the default): nothing is
    # sent, as the makers' reference agents send none (seed=0,1,2 -m: replicates with fixed seeds)
    seed: int | None = None


def register() -> None:
    ConfigStore.instance().store(name="base_config", node=RootConfig)
