"""Where each Toolathlon MCP server runs on Klavis, and which credentials its sandbox hands over.

The facts come from Klavis's Toolathlon runner and its fork of Toolathlon (``utils/klavis_sandbox.py``,
``utils/roles/task_agent.py``) and from Klavis's API reference; kept in one place so the sandbox
client, the episode's grant and the census agree:

- the runner's local sandbox (one shared VM, a ``/data`` workspace) hosts filesystem, git, terminal,
  desktop-commander, arxiv, excel, word, powerpoint, code-executor, code-runner, pdf-tools,
  google_cloud and poste_email_toolathlon; Klavis also documents localmemory and playwright there;
- every other server is an individual sandbox (``POST /sandbox/{name}``), a few under another name;
- individual sandboxes return a test account's credentials, which the runner exports to the task's
  preprocess and evaluation scripts as ``KLAVIS_*`` environment variables (the fork's
  ``configs/token_key_session.py`` reads them back).
"""

from __future__ import annotations

from dataclasses import dataclass

# the runner's LOCAL_SANDBOX_SERVERS (Klavis names), plus two the API reference lists for /local-sandbox
RUNNER_LOCAL_SANDBOX = frozenset({
    "filesystem", "git", "terminal", "desktop-commander", "arxiv", "excel", "word", "powerpoint",
    "code-executor", "code-runner", "pdf-tools", "google_cloud", "poste_email_toolathlon"})
LOCAL_SANDBOX = RUNNER_LOCAL_SANDBOX | {"localmemory", "playwright"}

# task (or catalog) server name -> its name in the local sandbox, where the two differ
TO_LOCAL_SANDBOX: dict[str, str] = {
    "pptx": "powerpoint",
    "arxiv_local": "arxiv",
    "python_execute": "code-executor",
    "google-cloud": "google_cloud",
    "emails": "poste_email_toolathlon",
    "memory": "localmemory",
    # Toolathlon's chunking Playwright fork; the local sandbox's playwright with benchmark=Toolathlon
    # (Klavis: the benchmark may route a server to a benchmark-specific implementation)
    "playwright_with_chunk": "playwright",
}

# task server name -> individual sandbox name, where the two differ (the fork's TASK_SERVER_TO_SANDBOX_NAME
# and the API reference's names)
TO_INDIVIDUAL: dict[str, str] = {
    "google_sheet": "google_sheets",
    "arxiv-latex": "arxiv_latex",
    "wandb": "weights_and_biases",
    "yahoo-finance": "yahoo_finance",
    "rail_12306": "12306",
    "youtube-transcript": "youtube_transcript",
    "google_map": "google_maps",
}

# individual sandboxes Klavis documents (API reference and its SDK's SandboxMCPServer)
INDIVIDUAL = frozenset({
    "github", "notion", "google_sheets", "google_calendar", "google_forms", "google_drive", "google_docs",
    "gmail", "snowflake", "woocommerce", "arxiv_latex", "scholarly", "howtocook", "yahoo_finance", "12306",
    "youtube_transcript", "weights_and_biases", "huggingface", "fetch", "google_maps", "serper", "localmemory",
    "jira", "slack", "salesforce", "hubspot", "airtable", "linear", "asana", "shopify", "wordpress", "postgres",
    "mongodb", "supabase", "confluence", "discord", "dropbox", "onedrive", "outlook_mail", "calculator",
    "wikipedia", "weather"})


@dataclass(frozen=True)
class Credential:
    """One value an individual sandbox hands over: ``field`` of its ``auth_data`` (or ``metadata``),
    exported as ``env`` to the task's preprocess and grader."""

    field: str
    env: str
    source: str = "auth_data"


# the runner's SANDBOX_AUTH_ENV_MAPPING (individual sandbox name -> credentials)
AUTH_ENV: dict[str, tuple[Credential, ...]] = {
    "woocommerce": tuple(Credential(f, f"KLAVIS_WOOCOMMERCE_{f.upper()}") for f in
                         ("consumer_key", "consumer_secret", "site_url", "admin_username", "admin_password")),
    "github": (Credential("access_token", "KLAVIS_GITHUB_TOKEN"),),
    "snowflake": tuple(Credential(f"SNOWFLAKE_{f}", f"KLAVIS_SNOWFLAKE_{f}") for f in
                       ("ACCOUNT", "WAREHOUSE", "ROLE", "USER", "PRIVATE_KEY", "DATABASE", "SCHEMA")),
    "notion": (Credential("toolathon_notion_integration_key", "KLAVIS_NOTION_INTEGRATION_KEY", "metadata"),
               Credential("toolathon_notion_integration_key_eval", "KLAVIS_NOTION_INTEGRATION_KEY_EVAL", "metadata"),
               Credential("toolathon_source_notion_page_url", "KLAVIS_SOURCE_NOTION_PAGE_URL", "metadata"),
               Credential("toolathon_eval_notion_page_url", "KLAVIS_EVAL_NOTION_PAGE_URL", "metadata")),
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
    sandbox ``name``) or ``none`` (Klavis offers nothing for it)."""

    kind: str
    name: str

    @property
    def hosted(self) -> bool:
        return self.kind != "none"


def placement(server: str) -> Placement:
    """The runner's classification: the local sandbox if the (mapped) name is one it hosts, else an
    individual sandbox under its (mapped) name, if Klavis documents one."""
    local = TO_LOCAL_SANDBOX.get(server, server)
    if local in LOCAL_SANDBOX:
        return Placement("local", local)
    individual = TO_INDIVIDUAL.get(server, server)
    return Placement("individual", individual) if individual in INDIVIDUAL else Placement("none", individual)
