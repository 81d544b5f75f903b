"""The certificate on disk: one CSV row and one Markdown line per task, read back to compare a new
run against a committed one (a task certified there and no longer certified here is a regression)."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

from mcpworld.certify.verdict import TaskCertificate, Verdict
from mcpworld.core.errors import UserError

COLUMNS = (
    "task_id",
    "app",
    "status",
    "oracle_passed",
    "oracle_judged",
    "noop_passed",
    "noop_judged",
    "spoiled_passed",
    "spoiled_judged",
    "spoil",
    "unjudged",
    "flake_rate",
    "median_s",
    "p90_s",
    "note",
)


def row(cert: TaskCertificate) -> dict[str, Any]:
    def rounded(value: float | None, places: int) -> Any:
        return "" if value is None else round(value, places)

    return {
        "task_id": cert.task_id,
        "app": cert.app,
        "status": str(cert.status),
        "oracle_passed": cert.oracle.passed,
        "oracle_judged": cert.oracle.judged,
        "noop_passed": cert.noop.passed,
        "noop_judged": cert.noop.judged,
        "spoiled_passed": cert.spoiled.passed,
        "spoiled_judged": cert.spoiled.judged,
        "spoil": cert.spoil,
        "unjudged": sum(len(m.unjudged) for m in (cert.oracle, cert.noop, cert.spoiled)),
        "flake_rate": rounded(cert.flake_rate, 3),
        "median_s": rounded(cert.median_s, 1),
        "p90_s": rounded(cert.p90_s, 1),
        "note": cert.note,
    }


def write_csv(certs: list[TaskCertificate], path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(row(c) for c in certs)


def counts(certs: list[TaskCertificate]) -> dict[str, int]:
    """Tasks per status, every status named (0 included)."""
    found = Counter(str(c.status) for c in certs)
    return {str(v): found.get(str(v), 0) for v in Verdict}


def summary_line(certs: list[TaskCertificate]) -> str:
    return f"{len(certs)} tasks: " + ", ".join(f"{k} {v}" for k, v in counts(certs).items())


def to_markdown(certs: list[TaskCertificate], n: int, beside: dict[str, dict[str, str]] | None = None) -> str:
    """The table; ``beside``: other certificates' statuses as extra columns ({label: {task: status}}),
    e.g. the same tasks certified on the suite's own VM (env=vm)."""
    beside = beside or {}
    extra_head = "".join(f" {label} |" for label in beside)
    lines = [
        f"**{summary_line(certs)}** (N = {n} episodes per mode; passes / episodes with a verdict)",
        "",
        "| task | status |" + extra_head + " oracle | no-op | spoiled | spoil | flake rate | median s | p90 s | note |",
        "|:---|:---|" + ":---|" * len(beside) + "---:|---:|---:|:---|---:|---:|---:|:---|",
    ]
    for cert in certs:
        r = row(cert)
        flake = "" if cert.flake_rate is None else f"{100 * cert.flake_rate:.0f} %"
        note = str(r["note"]).replace("|", "\\|")
        others = "".join(f" {statuses.get(cert.task_id, '–')} |" for statuses in beside.values())
        lines.append(
            f"| {cert.task_id} | {cert.status} |{others} {cert.oracle.cell()} | {cert.noop.cell()} | "
            f"{cert.spoiled.cell()} | {cert.spoil} | {flake} | {r['median_s']} | {r['p90_s']} | {note} |"
        )
    return "\n".join(lines) + "\n"


def read_rows(path: Path, where: str, columns: tuple[str, ...] = ("task_id", "status")) -> list[dict[str, str]]:
    """The rows of a certificate CSV; UserError naming ``where`` (the flag and file) when it is not one."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except OSError as exc:
        raise UserError(
            f"{where}: cannot read it ({exc.strerror}); give a certificate.csv written by python -m mcpworld.certify"
        ) from None
    if rows and not set(columns) <= set(rows[0]):
        raise UserError(
            f"{where}: not a certificate (no {' and '.join(columns)} columns); give a "
            "certificate.csv written by python -m mcpworld.certify"
        )
    return rows


def read_statuses(path: Path, flag: str = "--against") -> dict[str, str]:
    """{task id: status} of a certificate CSV; UserError naming the flag and file when it is not one."""
    return {r["task_id"]: r["status"] for r in read_rows(path, f"{flag} {path}")}


def regressions(before: dict[str, str], now: list[TaskCertificate]) -> tuple[list[str], list[str]]:
    """(regressions, warnings): a task certified before that ran here and is not certified now is a
    regression; one that could not run here (excluded) is a warning only, with its cause. Tasks new
    to the certificate, or better than before, never fail."""
    failed: list[str] = []
    warned: list[str] = []
    for cert in now:
        if before.get(cert.task_id) != Verdict.certified or cert.status == Verdict.certified:
            continue
        line = f"{cert.task_id}: certified before, {cert.status} now ({cert.note})"
        (warned if cert.status == Verdict.excluded else failed).append(line)
    return failed, warned
