"""An oracle for a Toolathlon task made from its ground-truth workspace, to certify the task's grader.

Toolathlon ships no solutions, but 72 tasks ship ``groundtruth_workspace/``: what the grader compares
the agent's workspace with. Where that folder is an image of the finished workspace, replaying it
through the task's own tools (``filesystem-write_file`` for text, ``local-python-execute`` for bytes)
is an oracle that must pass, and the same files each left one record short (the last line of a text,
the last filled row of a workbook's first sheet) is a nearly right answer that must fail. Such an oracle
says the grader accepts the ground truth and rejects a near miss; it does not say the task can be
solved from its inputs. Files the ground truth holds unchanged from ``initial_workspace/`` are not
written; ``*.tar.gz`` archives on either side are read as their members, as preprocess and graders
unpack them. Where a grader reads the ground truth otherwise (an answer key, a file of another name,
files to delete), the two tables below say so, from reading the graders.

    python -m mcpworld.tasks.toolathlon_oracle TASKS_DIR OUT_DIR   # then tasks.solutions=OUT_DIR
"""

from __future__ import annotations

import argparse
import base64
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

ARCHIVES = (".tar.gz", ".tgz")
WORKBOOKS = (".xlsx", ".xlsm")
# what the graders say (read at Klavis-AI/Toolathlon 45d20b06), where the ground truth is not, file for
# file, the finished workspace: a ground-truth file the grader compares with a workspace file of another name
WORKSPACE_NAMES = {("sales-accounting", "Account_Book_Complete.xlsx"): "Account_Book.xlsx"}
# ... and tasks whose finished workspace no ground-truth image gives
NOT_AN_IMAGE = {
    "courses-ta-hws": "its groundtruth_workspace is the grader's answer key (expected_mapping.json: who wrote "
    "what), not the finished workspace",
    "university-course-selection": "the task also asks to delete reference_format.xlsx (the grader counts the "
    "workspace's .xlsx files), which a ground-truth image cannot say",
}
NOTE = (
    "oracle from the ground truth (mcpworld.tasks.toolathlon_oracle): the task's groundtruth_workspace "
    "written into the workspace through the task's own tools; it certifies the grader, not that the "
    "task can be solved from its inputs"
)


@dataclass(frozen=True)
class Oracle:
    """A task's oracle steps, or why it has none."""

    name: str
    steps: list[dict[str, Any]]
    reason: str = ""


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its relative POSIX path; an archive stands for its members."""
    files: dict[str, bytes] = {}
    if not folder.is_dir():
        return files
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder).as_posix()
        if rel.endswith(ARCHIVES):
            files.update(archive_members(path, PurePosixPath(rel).parent))
        else:
            files[rel] = path.read_bytes()
    return files


def archive_members(path: Path, into: PurePosixPath) -> dict[str, bytes]:
    """The regular files of a tar archive, by the path they unpack to under ``into`` (the folder the
    archive lies in); members that would unpack outside it are left out, as ``filter='data'`` does."""
    members: dict[str, bytes] = {}
    with tarfile.open(path, "r:*") as archive:
        for member in archive.getmembers():
            name = PurePosixPath(member.name)
            if not member.isfile() or name.is_absolute() or ".." in name.parts:
                continue
            data = archive.extractfile(member)
            if data is not None:
                rel = (into / name).as_posix()
                members[rel[2:] if rel.startswith("./") else rel] = data.read()
    return members


def as_text(data: bytes) -> str | None:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if "\x00" not in text else None


def one_record_short(text: str) -> str:
    """``text`` without its last non-blank line: nearly right, and wrong for any grader that reads it all."""
    lines = text.splitlines(keepends=True)
    last = max((i for i, line in enumerate(lines) if line.strip()), default=None)
    return text + "\n" if last is None else "".join(lines[:last] + lines[last + 1 :])


def python_write(rel: str, data: bytes, spoil: bool) -> str:
    """Python source that writes ``data`` to ``rel`` (relative to the workspace, python_execute's working
        directory); spoiled, a workbook loses the last row of its first sheet that holds a value (a grader
    reading the sheet with pandas drops blank rows, so leaving out a blank one would change nothing)."""
    code = (
        "import base64, pathlib\n"
        f"path = pathlib.Path({rel!r})\n"
        "path.parent.mkdir(parents=True, exist_ok=True)\n"
        f"path.write_bytes(base64.b64decode({base64.b64encode(data).decode()!r}))\n"
    )
    if spoil:
        code += (
            "import openpyxl\n"
            "book = openpyxl.load_workbook(path)\n"
            "sheet = book.worksheets[0]\n"
            "filled = [r for r in range(1, sheet.max_row + 1) if any(c.value is not None for c in sheet[r])]\n"
            "sheet.delete_rows(filled[-1])\n"
            "book.save(path)\n"
        )
    return code + "print('wrote', path, path.stat().st_size)\n"


def oracle_for(task: Path) -> Oracle:
    """The ground-truth oracle of one Toolathlon task folder, or the reason it has none."""
    config = json.loads((task / "task_config.json").read_text(encoding="utf-8"))
    servers = set(config.get("needed_mcp_servers") or [])
    local = set(config.get("needed_local_tools") or [])
    if task.name in NOT_AN_IMAGE:
        return Oracle(task.name, [], NOT_AN_IMAGE[task.name])
    truth = {
        WORKSPACE_NAMES.get((task.name, rel), rel): data for rel, data in folder_files(task / "groundtruth_workspace").items()
    }
    if not truth:
        return Oracle(task.name, [], "it has no groundtruth_workspace")
    initial = folder_files(task / "initial_workspace")
    changed = {rel: data for rel, data in truth.items() if initial.get(rel) != data}
    if not changed:
        return Oracle(task.name, [], "its groundtruth_workspace holds only files of its initial workspace")
    steps: list[dict[str, Any]] = []
    made: set[str] = set()
    for rel, data in sorted(changed.items()):
        text = as_text(data)
        path = f"{{workspace}}/{rel}"
        if text is not None and "filesystem" in servers:
            parent = str(PurePosixPath(rel).parent)
            if parent != "." and parent not in made:
                made.add(parent)
                steps.append({"tool": "filesystem-create_directory", "args": {"path": f"{{workspace}}/{parent}"}})
            steps.append(
                {
                    "tool": "filesystem-write_file",
                    "args": {"path": path, "content": text},
                    "spoil": {"content": one_record_short(text)},
                }
            )
        elif "python_execute" in local:
            step: dict[str, Any] = {"tool": "local-python-execute", "args": {"code": python_write(rel, data, False)}}
            if text is not None:
                step["spoil"] = {"code": python_write(rel, one_record_short(text).encode(), False)}
            elif rel.endswith(WORKBOOKS):
                step["spoil"] = {"code": python_write(rel, data, True)}
            else:
                step["spoil"] = "omit"
            steps.append(step)
        else:
            kind = "text" if text is not None else "bytes"
            return Oracle(
                task.name,
                [],
                f"no tool of the task writes {rel} ({kind}): it offers "
                f"{', '.join(sorted(servers)) or 'no server'} and no local-python-execute",
            )
    if "claim_done" in local:
        steps.append({"tool": "local-claim_done", "args": {}})
    return Oracle(task.name, steps)


def write_solutions(tasks_dir: Path, out: Path) -> list[Oracle]:
    """A ``tasks.solutions`` file (``<name>.yaml``) for every task under ``tasks_dir``: its oracle, or
    ``unsolved:`` with why it has none (a certificate then names that cause)."""
    out.mkdir(parents=True, exist_ok=True)
    oracles = [oracle_for(config.parent) for config in sorted(tasks_dir.glob("*/task_config.json"))]
    for oracle in oracles:
        data: dict[str, Any] = {"id": f"toolathlon/{oracle.name}", "note": NOTE}
        if oracle.steps:
            data["solution"] = {"mcp": oracle.steps, "hybrid": oracle.steps}
        else:
            data["unsolved"] = f"no oracle from the ground truth: {oracle.reason}"
        (out / f"{oracle.name}.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return oracles


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mcpworld.tasks.toolathlon_oracle", description=__doc__.split("\n")[0])
    parser.add_argument("tasks_dir", type=Path, help="a folder of Toolathlon task folders (tasks/finalpool)")
    parser.add_argument("out", type=Path, help="where the solution files go (give it as tasks.solutions=OUT)")
    args = parser.parse_args(argv)
    for oracle in write_solutions(args.tasks_dir, args.out):
        print(f"{oracle.name}: " + (f"{len(oracle.steps)} steps" if oracle.steps else f"no oracle: {oracle.reason}"))


if __name__ == "__main__":
    main()
