"""Where each Toolathlon MCP server runs on Klavis, and which credentials its sandbox hands over.

The facts come from Klavis's Toolathlon runner (its ``LOCAL_SANDBOX_SERVERS``, ``TASK_TO_LOCAL_SANDBOX_NAME``,
``TASK_SERVER_TO_SANDBOX_NAME`` and ``SANDBOX_AUTH_ENV_MAPPING``), its fork of Toolathlon
(``utils/klavis_sandbox.py``) and Klavis's API reference; kept in one place so the sandbox client, the
episode's grant and the census agree:

- the runner's local sandbox (one shared VM, a ``/data`` workspace) hosts exactly its 13
  ``LOCAL_SANDBOX_SERVERS``: filesystem, git, terminal, desktop-commander, arxiv, excel, word,
  powerpoint, code-executor, code-runner, pdf-tools, google_cloud and poste_email_toolathlon;
- every other server is an individual sandbox (``POST /sandbox/{name}``), a few under another name,
  whatever Klavis's API reference lists elsewhere (it also offers localmemory, playwright and canvas
  in the local sandbox: an account that wants them there says so in ``env.klavis.local_sandbox``);
- individual sandboxes return a test account's credentials, which the runner exports to the task's
  preprocess and evaluation scripts as ``KLAVIS_*`` environment variables (the fork's
  ``configs/token_key_session.py`` reads them back).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# the runner's LOCAL_SANDBOX_SERVERS (Klavis names): the local sandbox's servers unless configured otherwise
RUNNER_LOCAL_SANDBOX = frozenset(
    {
        "filesystem",
        "git",
        "terminal",
        "desktop-commander",
        "arxiv",
        "excel",
        "word",
        "powerpoint",
        "code-executor",
        "code-runner",
        "pdf-tools",
        "google_cloud",
        "poste_email_toolathlon",
    }
)
# what Klavis's API reference accepts in POST /local-sandbox's server_names (the runner uses 13 of them)
LOCAL_SANDBOX = RUNNER_LOCAL_SANDBOX | {"canvas", "localmemory", "playwright"}

# task (or catalog) server name -> its name in the local sandbox, where the two differ (the runner's
# TASK_TO_LOCAL_SANDBOX_NAME; the last two only matter to an account that puts them there)
TO_LOCAL_SANDBOX: dict[str, str] = {
    "pptx": "powerpoint",
    "arxiv_local": "arxiv",
    "python_execute": "code-executor",
    "google-cloud": "google_cloud",
    "emails": "poste_email_toolathlon",
    "memory": "localmemory",
    # Toolathlon's chunking Playwright fork; the local sandbox's playwright with benchmark=Toolathlon
    "playwright_with_chunk": "playwright",
}

# task server name -> individual sandbox name, where the two differ (the runner's TASK_SERVER_TO_SANDBOX_NAME,
# the fork's, and the API reference's names); any other server is asked for under its own name
TO_INDIVIDUAL: dict[str, str] = {
    "google_sheet": "google_sheets",
    "arxiv-latex": "arxiv_latex",
    "wandb": "weights_and_biases",
    "yahoo-finance": "yahoo_finance",
    "rail_12306": "12306",
    "youtube-transcript": "youtube_transcript",
    "google_map": "google_maps",
    "memory": "localmemory",
}

# individual sandboxes Klavis documents (API reference and its SDK's SandboxMCPServer); the runner asks
# for others all the same (canvas, k8s, youtube, playwright_with_chunk): the census names them
DOCUMENTED_INDIVIDUAL = frozenset(
    {
        "github",
        "notion",
        "google_sheets",
        "google_calendar",
        "google_forms",
        "google_drive",
        "google_docs",
        "gmail",
        "snowflake",
        "woocommerce",
        "arxiv_latex",
        "scholarly",
        "howtocook",
        "yahoo_finance",
        "12306",
        "youtube_transcript",
        "weights_and_biases",
        "huggingface",
        "fetch",
        "google_maps",
        "serper",
        "localmemory",
        "jira",
        "slack",
        "salesforce",
        "hubspot",
        "airtable",
        "linear",
        "asana",
        "shopify",
        "wordpress",
        "postgres",
        "mongodb",
        "supabase",
        "confluence",
        "discord",
        "dropbox",
        "onedrive",
        "outlook_mail",
        "calculator",
        "wikipedia",
        "weather",
    }
)


@dataclass(frozen=True)
class Credential:
    """One value an individual sandbox hands over: ``field`` of its ``auth_data`` (or ``metadata``),
    exported as ``env`` to the task's preprocess and grader."""

    field: str
    env: str
    source: str = "auth_data"


# the runner's SANDBOX_AUTH_ENV_MAPPING (individual sandbox name -> credentials)
AUTH_ENV: dict[str, tuple[Credential, ...]] = {
    "woocommerce": tuple(
        Credential(f, f"KLAVIS_WOOCOMMERCE_{f.upper()}")
        for f in ("consumer_key", "consumer_secret", "site_url", "admin_username", "admin_password")
    ),
    "github": (Credential("access_token", "KLAVIS_GITHUB_TOKEN"),),
    "snowflake": tuple(
        Credential(f"SNOWFLAKE_{f}", f"KLAVIS_SNOWFLAKE_{f}")
        for f in ("ACCOUNT", "WAREHOUSE", "ROLE", "USER", "PRIVATE_KEY", "DATABASE", "SCHEMA")
    ),
    "notion": (
        Credential("toolathon_notion_integration_key", "KLAVIS_NOTION_INTEGRATION_KEY", "metadata"),
        Credential("toolathon_notion_integration_key_eval", "KLAVIS_NOTION_INTEGRATION_KEY_EVAL", "metadata"),
        Credential("toolathon_source_notion_page_url", "KLAVIS_SOURCE_NOTION_PAGE_URL", "metadata"),
        Credential("toolathon_eval_notion_page_url", "KLAVIS_EVAL_NOTION_PAGE_URL", "metadata"),
    ),
}
# individual sandboxes whose auth_data the fork writes as a credentials file the task's code opens
# (``configs/<name>_credentials.json`` under the Toolathlon root): not handed over yet
CREDENTIAL_FILES = frozenset({"google_sheets", "google_forms", "google_cloud"})

# what the episode's scripts learn besides the credentials: every hosted server's URL (JSON, our
# names), and that the run is remote (the fork's scripts test KLAVIS_API_KEY only for being set; the
# key itself stays with the harness)
SERVER_URLS_ENV = "KLAVIS_MCP_SERVER_URLS"
REMOTE_FLAG_ENV = "KLAVIS_API_KEY"
REMOTE_FLAG = "set-by-mcpworld"


@dataclass(frozen=True)
class Placement:
    """Where one server runs: ``local`` (the local sandbox, as ``name``), ``individual`` (its own
    sandbox ``name``) or ``none`` (the account has no sandbox for it)."""

    kind: str
    name: str

    @property
    def hosted(self) -> bool:
        return self.kind != "none"


@dataclass(frozen=True)
class Classification:
    """Which servers go to the local sandbox (``local``, Klavis names), which individual sandbox
    name each other server is asked for (``names``, over ``TO_INDIVIDUAL``), and which servers the
    account has no sandbox for (``unhosted``, task names: their tasks are skipped). The default is
    the runner's: its 13 local-sandbox servers, every other server an individual sandbox."""

    local: frozenset[str] = RUNNER_LOCAL_SANDBOX
    names: Mapping[str, str] = field(default_factory=dict)
    unhosted: frozenset[str] = frozenset()

    @classmethod
    def of(cls, k: Any) -> Classification:
        """From ``env.klavis`` (``local_sandbox``: None for the runner's 13, ``sandbox_names``, ``no_sandbox``)."""
        local = getattr(k, "local_sandbox", None)
        return cls(
            local=RUNNER_LOCAL_SANDBOX if local is None else frozenset(str(s) for s in local),
            names={str(a): str(b) for a, b in dict(getattr(k, "sandbox_names", None) or {}).items()},
            unhosted=frozenset(str(s) for s in getattr(k, "no_sandbox", None) or ()),
        )

    def placement(self, server: str) -> Placement:
        """The local sandbox if the (mapped) name is one of ``local``; none if the account has no
        sandbox for it; else an individual sandbox under its (mapped) name."""
        if server in self.unhosted:
            return Placement("none", server)
        local = TO_LOCAL_SANDBOX.get(server, server)
        if local in self.local:
            return Placement("local", local)
        individual = self.names.get(server) or TO_INDIVIDUAL.get(server, server)
        return Placement("none", server) if individual in self.unhosted else Placement("individual", individual)

    def is_runners(self) -> bool:
        return self.local == RUNNER_LOCAL_SANDBOX and not self.unhosted

    def differs_from_runner(self, servers: Iterable[str]) -> list[str]:
        """The servers this classification places elsewhere than the runner does (local, individual, none)."""
        return [s for s in servers if self.placement(s).kind != RUNNER.placement(s).kind]


RUNNER = Classification()


def placement(server: str, classification: Classification = RUNNER) -> Placement:
    """Where ``server`` runs (the runner's classification unless another is given)."""
    return classification.placement(server)
