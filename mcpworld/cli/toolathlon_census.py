"""``python -m mcpworld.cli.toolathlon_census DIR``: every Toolathlon task under a checkout, what it
needs and whether this machine can run it, with ``env=local`` and with ``env=klavis``.

For each task: its MCP servers split by where they run (our local catalog; on Klavis, the runner's
classification: its 13 local-sandbox servers, every other server an individual sandbox, unless
``--local-sandbox`` / ``--no-sandbox`` say the account differs), the outside accounts its servers
and its own preprocess/grader code use (what that code actually executes: ``tasks.toolathlon_accounts``,
each account with the file and line that needs it), and a verdict per configuration with the reason
when it cannot run. ``--markdown FILE`` writes the per-task tables and the summary counts
(docs/toolathlon_census.md). Nothing is run or contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from omegaconf import OmegaConf

from mcpworld.core.interpreters import find_python
from mcpworld.core.paths import CONF_DIR
from mcpworld.mcp.install import servers_dir
from mcpworld.mcp.klavis_catalog import CREDENTIAL_FILES, DOCUMENTED_INDIVIDUAL, RUNNER, RUNNER_LOCAL_SANDBOX, Classification
from mcpworld.mcp.spec import parse_servers
from mcpworld.tasks.toolathlon import IGNORED_LOCAL_TOOLS, LOCAL_TOOLS, UNAVAILABLE_LOCAL_TOOLS
from mcpworld.tasks.toolathlon_accounts import Accounts, Use, accounts_of

# the 13 tasks whose verdicts match upstream's here (docs/mcp.md: 26 of 26 workspaces)
MEASURED = {
    "arrange-workspace",
    "courses-ta-hws",
    "detect-revised-terms",
    "excel-data-transformation",
    "excel-market-research",
    "imagenet",
    "interview-report",
    "paper-checker",
    "ppt-analysis",
    "privacy-desensitization",
    "reimbursement-form-filler",
    "sales-accounting",
    "university-course-selection",
}
# outside accounts, by MCP server (the task's own code: tasks.toolathlon_accounts)
SERVER_ACCOUNTS = {
    "github": "GitHub",
    "notion": "Notion",
    "google_sheet": "Google",
    "google_calendar": "Google",
    "google_forms": "Google",
    "google-cloud": "Google Cloud",
    "snowflake": "Snowflake",
    "wandb": "W&B",
    "huggingface": "Hugging Face",
    "google_map": "Google API key",
    "youtube": "Google API key",
    "emails": "Poste.io mail",
    "canvas": "Canvas",
    "woocommerce": "WooCommerce",
    "k8s": "kind cluster",
}
# accounts a Klavis sandbox hands over (its credentials reach the task's scripts; mail lives in the local sandbox)
KLAVIS_ACCOUNTS = {
    "GitHub": "github",
    "Notion": "notion",
    "Snowflake": "snowflake",
    "WooCommerce": "woocommerce",
    "Poste.io mail": "emails",
}
SHOWN_USES = 3  # code places named per account in the table (the rest counted)


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
    needed_by: dict[str, list[str]] = field(default_factory=dict)  # account -> "server x", "file:line (what)"
    as_runner: bool = True  # every server placed where the seed's runner places it
    read_as_text: list[str] = field(default_factory=list)  # files this interpreter could not parse
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


def census(
    folder: Path,
    installed: dict[str, str | None],
    klavis_key: bool,
    code: Accounts | None = None,
    classification: Classification = RUNNER,
) -> Census:
    data = json.loads((folder / "task_config.json").read_text(encoding="utf-8"))
    servers = [str(s) for s in data.get("needed_mcp_servers") or []]
    tools = [str(t) for t in data.get("needed_local_tools") or []]
    c = Census(folder.name, servers, tools)
    for name in servers:
        if name in installed:
            c.catalog.append(name)
        place = classification.placement(name)
        {"local": c.klavis_local, "individual": c.individual}.get(place.kind, c.unhosted).append(
            place.name if place.kind == "individual" else name
        )
    c.as_runner = not classification.differs_from_runner(servers)
    needed: dict[str, list[str]] = {}
    for s in servers:
        if s in SERVER_ACCOUNTS:
            needed.setdefault(SERVER_ACCOUNTS[s], []).append(f"server {s}")
    code = code if code is not None else accounts_of([folder])[folder]
    for account, uses in code.by_account().items():
        firsts: dict[str, Use] = {}
        for use in uses:  # the first place in each file
            firsts.setdefault(use.file, use)
        shown = [f"{u.where} ({u.what})" for u in list(firsts.values())[:SHOWN_USES]]
        more = len(uses) - len(shown)
        needed.setdefault(account, []).extend(shown + ([f"+{more} more place{'s' * (more > 1)}"] if more > 0 else []))
    c.read_as_text = list(code.unparsed)
    if "web_search" in tools:
        needed.setdefault("Serper", []).append("local tool web_search")
    c.needed_by = dict(sorted(needed.items()))
    accounts = set(needed)
    c.accounts = sorted(accounts)
    tool_gap = [t for t in tools if t in UNAVAILABLE_LOCAL_TOOLS or t not in LOCAL_TOOLS | IGNORED_LOCAL_TOOLS]

    why: list[str] = []
    if tool_gap:
        why.append(f"local tool {', '.join(tool_gap)}")
    missing = [s for s in servers if s not in installed]
    broken = [s for s in servers if installed.get(s)]
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
        why.append(f"no Klavis sandbox for {', '.join(c.unhosted)} on this account")
    files = sorted(
        {p.name for s in servers if (p := classification.placement(s)).kind == "individual" and p.name in CREDENTIAL_FILES}
    )
    if files:
        why.append(f"{', '.join(files)}: credential files not handed over yet")
    handed = {KLAVIS_ACCOUNTS[a] for a in accounts if a in KLAVIS_ACCOUNTS}
    uncovered = sorted(a for a in accounts - {"Serper"} if a not in KLAVIS_ACCOUNTS and not (a.startswith("Google") and files))
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


def run(root: Path, classification: Classification = RUNNER) -> list[Census]:
    pool = root / "tasks" / "finalpool" if (root / "tasks" / "finalpool").is_dir() else root
    folders = sorted(p.parent for p in pool.glob("*/task_config.json"))
    if not folders:
        raise SystemExit(f"{root}: no */task_config.json (give a Toolathlon checkout or its tasks/finalpool)")
    installed = catalog_status()
    # upstream's graders use Python 3.12 syntax: a 3.12 reads the ones this interpreter cannot
    code = accounts_of(folders, find_python("3.12") if sys.version_info < (3, 12) else None)
    key = bool(os.environ.get("KLAVIS_API_KEY"))
    return [census(f, installed, key, code[f], classification) for f in folders]


def markdown(rows: list[Census], source: str, classification: Classification = RUNNER) -> str:
    counts = Counter(r.needs for r in rows)
    local_ok = sum(r.local == "yes" for r in rows)
    klavis_ok = sum(r.klavis == "yes" for r in rows)
    individual = Counter(s for r in rows for s in set(r.individual))
    undocumented = sorted(s for s in individual if s not in DOCUMENTED_INDIVIDUAL)
    keyed = "KLAVIS_API_KEY set" if any("KLAVIS_API_KEY unset" not in r.klavis for r in rows) else "KLAVIS_API_KEY unset"
    local_names = ", ".join(sorted(classification.local))
    placed = (
        "the seed runner's: its 13 local-sandbox servers, every other server an individual sandbox"
        if classification.is_runners() and not classification.names
        else f"local sandbox {local_names}; no sandbox for {', '.join(sorted(classification.unhosted)) or '-'}"
    )
    lines = [
        f"Census of {len(rows)} Toolathlon tasks ({source}), made by `python -m mcpworld.cli.toolathlon_census`; "
        f"Klavis placement: {placed}.",
        "",
        "| needs | tasks |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in sorted(counts.items())],
        f"| runnable here with env=local | {local_ok} |",
        f"| runnable with env=klavis ({keyed}) | {klavis_ok} |",
        f"| servers placed as the seed runner places them | {sum(r.as_runner for r in rows)} of {len(rows)} |",
        f"| upstream's verdicts measured (13 local-only) | {sum(r.name in MEASURED for r in rows)} |",
        "",
        "Individual sandboxes: " + ", ".join(f"{k} {v}" for k, v in individual.most_common()),
        "",
    ]
    if undocumented:
        lines += [
            f"Asked for as the runner asks, though Klavis's API reference does not list them as individual "
            f"sandboxes: {', '.join(undocumented)}.",
            "",
        ]
    lines += ["| task | MCP servers | Klavis individual | accounts | env=local | env=klavis |", "|---|---|---|---|---|---|"]
    for r in rows:
        name = f"{r.name} ✓" if r.name in MEASURED else r.name
        lines.append(
            f"| {name} | {', '.join(r.servers)} | {', '.join(r.individual) or '-'} | "
            f"{', '.join(r.accounts) or '-'} | {r.local} | {r.klavis} |"
        )
    lines += [
        "",
        "Each account, and what needs it: the task's server, or the first place in each file of its live "
        "preprocess/grader code (file:line, relative to the task folder).",
        "",
        "| task | account | needed by |",
        "|---|---|---|",
    ]
    for r in rows:
        lines += [f"| {r.name} | {account} | {'; '.join(where)} |" for account, where in r.needed_by.items()]
    text = sorted({f"{r.name}/{f}" for r in rows for f in r.read_as_text})
    if text:
        lines += [
            "",
            f"Read as text (this Python cannot parse them; install a python3.12 for an exact reading): {', '.join(text)}.",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.cli.toolathlon_census", description=__doc__)
    parser.add_argument("root", type=Path, help="a Toolathlon checkout (or its tasks/finalpool)")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    parser.add_argument(
        "--local-sandbox",
        metavar="NAMES",
        help="the account's local-sandbox servers, comma-separated Klavis names (env.klavis.local_sandbox; "
        f"default: the runner's {len(RUNNER_LOCAL_SANDBOX)})",
    )
    parser.add_argument(
        "--no-sandbox",
        metavar="NAMES",
        default="",
        help="task servers the account has no sandbox for, comma-separated (env.klavis.no_sandbox)",
    )
    args = parser.parse_args(argv)
    local = frozenset(filter(None, args.local_sandbox.split(","))) if args.local_sandbox else RUNNER_LOCAL_SANDBOX
    classification = Classification(local=local, unhosted=frozenset(filter(None, args.no_sandbox.split(","))))
    rows = run(args.root, classification)
    text = markdown(rows, args.root.name, classification)
    if args.markdown:
        args.markdown.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
