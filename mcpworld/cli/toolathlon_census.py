"""``python -m mcpworld.cli.toolathlon_census DIR``: every Toolathlon task under a checkout, what it
needs and whether this machine can run it, with ``env=local`` and with ``env=klavis``.

For each task: its MCP servers split by where they run (our local catalog, Klavis's local sandbox,
which individual sandboxes, none), the outside accounts its servers and its own preprocess/grader
code use (read from ``utils.app_specific.*`` imports and ``token_key_session`` keys), and a verdict
per configuration with the reason when it cannot run. ``--markdown FILE`` writes the per-task table
and the summary counts (docs/toolathlon_census.md). Nothing is run or contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from omegaconf import OmegaConf

from mcpworld.core.paths import CONF_DIR
from mcpworld.mcp.install import servers_dir
from mcpworld.mcp.klavis_catalog import CREDENTIAL_FILES, placement
from mcpworld.mcp.spec import parse_servers
from mcpworld.tasks.toolathlon import IGNORED_LOCAL_TOOLS, LOCAL_TOOLS, UNAVAILABLE_LOCAL_TOOLS

# the 13 tasks whose verdicts match upstream's here (docs/mcp.md: 26 of 26 workspaces)
MEASURED = {"arrange-workspace", "courses-ta-hws", "detect-revised-terms", "excel-data-transformation",
            "excel-market-research", "imagenet", "interview-report", "paper-checker", "ppt-analysis",
            "privacy-desensitization", "reimbursement-form-filler", "sales-accounting",
            "university-course-selection"}
# outside accounts, by MCP server and by what the task's own code uses
SERVER_ACCOUNTS = {
    "github": "GitHub", "notion": "Notion", "google_sheet": "Google", "google_calendar": "Google",
    "google_forms": "Google", "google-cloud": "Google Cloud", "snowflake": "Snowflake", "wandb": "W&B",
    "huggingface": "Hugging Face", "google_map": "Google API key", "youtube": "Google API key",
    "emails": "Poste.io mail", "canvas": "Canvas", "woocommerce": "WooCommerce", "k8s": "kind cluster"}
CODE_ACCOUNTS = {
    "github": "GitHub", "notion": "Notion", "googlesheet": "Google", "google_form": "Google",
    "google_oauth": "Google", "google_maps": "Google API key", "google_cloud": "Google Cloud",
    "snowflake": "Snowflake", "woocommerce": "WooCommerce", "canvas": "Canvas", "poste": "Poste.io mail",
    "huggingface": "Hugging Face", "wandb": "W&B", "serper": "Serper", "emails": "Poste.io mail",
    "gcp": "Google Cloud", "kubernetes": "kind cluster", "k8s": "kind cluster"}
APP_IMPORT = re.compile(r"utils\.app_specific\.(\w+)")
TOKEN_KEY = re.compile(r"(?:all_token_key_session|token_key_session)\.(\w+)")
# accounts a Klavis sandbox hands over (its credentials reach the task's scripts; mail lives in the local sandbox)
KLAVIS_ACCOUNTS = {"GitHub": "github", "Notion": "notion", "Snowflake": "snowflake", "WooCommerce": "woocommerce",
                   "Poste.io mail": "emails"}


@dataclass
class Census:
    """One task's needs and verdicts."""

    name: str
    servers: list[str]
    local_tools: list[str]
    catalog: list[str] = field(default_factory=list)  # servers our local catalog has
    klavis_local: list[str] = field(default_factory=list)
    individual: list[str] = field(default_factory=list)  # Klavis names
    unhosted: list[str] = field(default_factory=list)
    accounts: list[str] = field(default_factory=list)
    local: str = ""  # "yes" or why not
    klavis: str = ""

    @property
    def needs(self) -> str:
        if not self.accounts and not self.unhosted and set(self.servers) <= set(self.catalog):
            return "local servers only"
        if not self.individual and not self.unhosted:
            return "Klavis local sandbox"
        return "individual sandboxes" if not self.unhosted else "no Klavis sandbox for some"


def catalog_status() -> dict[str, str | None]:
    """Our catalog's servers -> why each cannot start here (None: installed)."""
    tree = OmegaConf.load(CONF_DIR / "mcp" / "default.yaml")
    catalog = cast(dict[str, Any], OmegaConf.to_container(tree.catalog, resolve=True) or {})
    values = {"servers": str(servers_dir())}
    return {spec.name: spec.filled(values).unavailable() for spec in parse_servers(list(catalog), catalog, "catalog")}


def accounts_in_code(folder: Path) -> set[str]:
    found: set[str] = set()
    for path in folder.rglob("*.py"):
        text = path.read_text(encoding="utf-8", errors="replace")
        for app in APP_IMPORT.findall(text):
            found.add(CODE_ACCOUNTS.get(app, app))
        for key in TOKEN_KEY.findall(text):
            found |= {account for prefix, account in CODE_ACCOUNTS.items() if key.startswith(prefix)}
    return found


def census(folder: Path, installed: dict[str, str | None], klavis_key: bool) -> Census:
    data = json.loads((folder / "task_config.json").read_text(encoding="utf-8"))
    servers = [str(s) for s in data.get("needed_mcp_servers") or []]
    tools = [str(t) for t in data.get("needed_local_tools") or []]
    c = Census(folder.name, servers, tools)
    for name in servers:
        if name in installed:
            c.catalog.append(name)
        place = placement(name)
        {"local": c.klavis_local, "individual": c.individual}.get(place.kind, c.unhosted).append(
            place.name if place.kind == "individual" else name)
    accounts = {SERVER_ACCOUNTS[s] for s in servers if s in SERVER_ACCOUNTS} | accounts_in_code(folder)
    accounts |= {"Serper" for t in tools if t == "web_search"}
    c.accounts = sorted(accounts)
    tool_gap = [t for t in tools if t in UNAVAILABLE_LOCAL_TOOLS or t not in LOCAL_TOOLS | IGNORED_LOCAL_TOOLS]

    why: list[str] = []
    if tool_gap:
        why.append(f"local tool {', '.join(tool_gap)}")
    missing = [s for s in servers if s not in installed]
    broken = [s for s in servers if s in installed and installed[s]]
    if missing:
        why.append(f"no local server {', '.join(missing)}")
    if broken:
        why.append(f"not installed: {', '.join(broken)} (make servers)")
    if accounts - {"Serper"}:
        why.append(f"accounts: {', '.join(sorted(accounts - {'Serper'}))}")
    c.local = "yes" if not why else "; ".join(why)

    why = []
    if not klavis_key:
        why.append("KLAVIS_API_KEY unset")
    if tool_gap:
        why.append(f"local tool {', '.join(tool_gap)}")
    if c.unhosted:
        why.append(f"no Klavis sandbox for {', '.join(c.unhosted)}")
    files = sorted({p.name for s in servers if (p := placement(s)).kind == "individual" and p.name in CREDENTIAL_FILES})
    if files:
        why.append(f"{', '.join(files)}: credential files not handed over yet")
    handed = {KLAVIS_ACCOUNTS[a] for a in accounts if a in KLAVIS_ACCOUNTS}
    uncovered = sorted(a for a in accounts - {"Serper"} if a not in KLAVIS_ACCOUNTS
                       and not (a.startswith("Google") and files))
    if uncovered:
        why.append(f"accounts Klavis does not hand over: {', '.join(uncovered)}")
    needed_sandboxes = {s for s in handed if s != "emails"}
    absent = sorted(needed_sandboxes - set(servers))
    if absent:  # the task's code uses an account whose sandbox it does not ask for
        why.append(f"its scripts use {', '.join(absent)} without that server")
    if "emails" in servers:
        why.append("emails: the runner's per-run mail domain is not done")
    c.klavis = "yes" if not why else "; ".join(why)
    return c


def run(root: Path) -> list[Census]:
    pool = root / "tasks" / "finalpool" if (root / "tasks" / "finalpool").is_dir() else root
    folders = sorted(p.parent for p in pool.glob("*/task_config.json"))
    if not folders:
        raise SystemExit(f"{root}: no */task_config.json (give a Toolathlon checkout or its tasks/finalpool)")
    installed = catalog_status()
    return [census(f, installed, bool(os.environ.get("KLAVIS_API_KEY"))) for f in folders]


def markdown(rows: list[Census], source: str) -> str:
    counts = Counter(r.needs for r in rows)
    local_ok = sum(r.local == "yes" for r in rows)
    klavis_ok = sum(r.klavis == "yes" for r in rows)
    individual = Counter(s for r in rows for s in set(r.individual))
    keyed = "KLAVIS_API_KEY set" if any("KLAVIS_API_KEY unset" not in r.klavis for r in rows) else "KLAVIS_API_KEY unset"
    lines = [f"Census of {len(rows)} Toolathlon tasks ({source}), made by `python -m mcpworld.cli.toolathlon_census`.", "",
             "| needs | tasks |", "|---|---:|", *[f"| {k} | {v} |" for k, v in sorted(counts.items())],
             f"| runnable here with env=local | {local_ok} |", f"| runnable with env=klavis ({keyed}) | {klavis_ok} |",
             f"| upstream's verdicts measured (13 local-only) | {sum(r.name in MEASURED for r in rows)} |", "",
             "Individual sandboxes: " + ", ".join(f"{k} {v}" for k, v in individual.most_common()), "",
             "| task | MCP servers | Klavis individual | accounts | env=local | env=klavis |", "|---|---|---|---|---|---|"]
    for r in rows:
        name = f"{r.name} ✓" if r.name in MEASURED else r.name
        lines.append(f"| {name} | {', '.join(r.servers)} | {', '.join(r.individual) or '-'} | "
                     f"{', '.join(r.accounts) or '-'} | {r.local} | {r.klavis} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.cli.toolathlon_census", description=__doc__)
    parser.add_argument("root", type=Path, help="a Toolathlon checkout (or its tasks/finalpool)")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args(argv)
    rows = run(args.root)
    text = markdown(rows, args.root.name)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
