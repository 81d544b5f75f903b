"""The oracle made from a Toolathlon task's ground-truth workspace: which files it writes, with which
tools, that its steps reproduce the ground truth, and that its spoiled steps fall one record short."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import openpyxl
from openpyxl.styles import Font

from mcpworld.agent.providers.oracle import spoiled
from mcpworld.tasks.solutions import read_overlay, read_solution
from mcpworld.tasks.toolathlon_oracle import archive_members, oracle_for, write_solutions


def tar_gz(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def workbook_bytes(rows: list[list[object]]) -> bytes:
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    book.active.cell(row=len(rows) + 2, column=1).font = Font(bold=True)  # a blank row below, as real workbooks have
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def make_task(
    root: Path,
    name: str = "demo",
    servers: tuple[str, ...] = ("filesystem",),
    local: tuple[str, ...] = ("claim_done", "python_execute"),
) -> Path:
    """A task whose initial workspace is an archive (notes.txt, kept as it is in the ground truth) and
    whose ground truth adds out/report.csv (text) and book.xlsx (bytes)."""
    folder = root / name
    (folder / "initial_workspace").mkdir(parents=True)
    (folder / "groundtruth_workspace" / "out").mkdir(parents=True)
    (folder / "task_config.json").write_text(json.dumps({"needed_mcp_servers": list(servers), "needed_local_tools": list(local)}))
    tar_gz(folder / "initial_workspace" / "files.tar.gz", {"./notes.txt": b"keep me\n"})
    (folder / "groundtruth_workspace" / "notes.txt").write_bytes(b"keep me\n")
    (folder / "groundtruth_workspace" / "out" / "report.csv").write_text("name,total\nann,3\nbob,4\n\n")
    (folder / "groundtruth_workspace" / "book.xlsx").write_bytes(workbook_bytes([["year", "rate"], [2023, 1.5], [2024, 2.5]]))
    return folder


def run_code(code: str, cwd: Path) -> None:
    """A python_execute step as the tool runs it: this interpreter, the workspace as working directory."""
    subprocess.run([sys.executable, "-c", code], cwd=cwd, check=True, capture_output=True)


def test_it_writes_what_the_ground_truth_changes_with_the_tasks_own_tools(tmp_path: Path):
    oracle = oracle_for(make_task(tmp_path))
    tools = [(s["tool"], s["args"].get("path")) for s in oracle.steps]
    assert tools == [
        ("local-python-execute", None),
        ("filesystem-create_directory", "{workspace}/out"),
        ("filesystem-write_file", "{workspace}/out/report.csv"),
        ("local-claim_done", None),
    ]  # notes.txt is the initial workspace's: not written
    write = oracle.steps[2]
    assert write["args"]["content"] == "name,total\nann,3\nbob,4\n\n"
    assert write["spoil"] == {"content": "name,total\nann,3\n\n"}  # the last record left out


def test_its_python_steps_reproduce_the_workbook_and_the_spoiled_one_is_a_row_short(tmp_path: Path):
    folder = make_task(tmp_path)
    step = oracle_for(folder).steps[0]
    right, near = tmp_path / "right", tmp_path / "near"
    right.mkdir(), near.mkdir()
    run_code(step["args"]["code"], right)
    run_code(step["spoil"]["code"], near)
    assert (right / "book.xlsx").read_bytes() == (folder / "groundtruth_workspace" / "book.xlsx").read_bytes()
    rows = [r for r in openpyxl.load_workbook(near / "book.xlsx").worksheets[0].iter_rows(values_only=True) if any(r)]
    assert rows == [("year", "rate"), (2023, 1.5)]  # the last filled row went, not the blank one below it


def test_without_a_filesystem_server_text_goes_through_python_too(tmp_path: Path):
    oracle = oracle_for(make_task(tmp_path, servers=("terminal",)))
    csv_step = next(s for s in oracle.steps if "report.csv" in s["args"].get("code", ""))
    run_code(csv_step["spoil"]["code"], tmp_path)
    assert (tmp_path / "out" / "report.csv").read_text() == "name,total\nann,3\n\n"


def test_no_oracle_when_no_tool_of_the_task_can_write_a_file(tmp_path: Path):
    oracle = oracle_for(make_task(tmp_path, servers=("filesystem", "word"), local=("claim_done",)))
    assert oracle.steps == []
    assert oracle.reason == (
        "no tool of the task writes book.xlsx (bytes): it offers filesystem, word and no local-python-execute"
    )


def test_no_oracle_without_a_ground_truth_or_with_an_unchanged_one(tmp_path: Path):
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "task_config.json").write_text(json.dumps({"needed_mcp_servers": ["filesystem"]}))
    assert oracle_for(bare).reason == "it has no groundtruth_workspace"
    same = make_task(tmp_path, "same")
    for extra in ("out/report.csv", "book.xlsx"):
        (same / "groundtruth_workspace" / extra).unlink()
    assert oracle_for(same).reason == "its groundtruth_workspace holds only files of its initial workspace"


def test_archive_members_that_would_leave_the_folder_are_left_out(tmp_path: Path):
    tar_gz(tmp_path / "a.tar.gz", {"ok/x.txt": b"x", "../evil.txt": b"no", "/abs.txt": b"no"})
    assert archive_members(tmp_path / "a.tar.gz", Path("sub")) == {"sub/ok/x.txt": b"x"}


def test_solution_files_load_as_tasks_solutions_and_spoil_as_declared(tmp_path: Path):
    make_task(tmp_path / "tasks", "with-truth")
    make_task(tmp_path / "tasks", "docx-only", servers=("filesystem", "word"), local=("claim_done",))
    oracles = write_solutions(tmp_path / "tasks", tmp_path / "out")
    assert [(o.name, bool(o.steps)) for o in oracles] == [("docx-only", False), ("with-truth", True)]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["docx-only.yaml", "with-truth.yaml"]
    none = read_overlay(tmp_path / "out" / "docx-only.yaml")  # why it has none: a certificate's cause
    assert none.solution.as_written() == {} and none.unsolved.startswith("no oracle from the ground truth: no tool of the task")
    task_id, solution = read_solution(tmp_path / "out" / "with-truth.yaml")
    assert task_id == "toolathlon/with-truth" and set(solution) == {"mcp", "hybrid"}
    near = spoiled(solution.get("mcp"))
    assert near is not None and [s.tool for s in near] == [s.tool for s in solution.get("mcp")]
    assert near[2].args["content"] == "name,total\nann,3\n\n"


def test_a_ground_truth_file_the_grader_reads_under_another_name_is_written_under_that_name(tmp_path: Path):
    folder = make_task(tmp_path, "sales-accounting")
    (folder / "groundtruth_workspace" / "book.xlsx").rename(folder / "groundtruth_workspace" / "Account_Book_Complete.xlsx")
    codes = [s["args"]["code"] for s in oracle_for(folder).steps if s["tool"] == "local-python-execute"]
    assert len(codes) == 1 and "pathlib.Path('Account_Book.xlsx')" in codes[0]


def test_a_task_whose_ground_truth_is_not_the_finished_workspace_has_no_oracle(tmp_path: Path):
    oracle = oracle_for(make_task(tmp_path, "courses-ta-hws"))
    assert oracle.steps == [] and "answer key" in oracle.reason
