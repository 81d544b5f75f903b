"""Check report.docx: a Heading 1 'Inventory Report' first, then a table equal to the CSV."""

import argparse
import csv
import os
import sys

from docx import Document

HEADING = "Inventory Report"


def fail(reason):
    print(f"FAIL: {reason}")
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent_workspace", required=True)
    parser.add_argument("--groundtruth_workspace", default=None)
    parser.add_argument("--res_log_file", default=None)
    parser.add_argument("--launch_time", default=None)
    args = parser.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    gt_dir = args.groundtruth_workspace or os.path.join(here, "..", "groundtruth_workspace")
    with open(os.path.join(gt_dir, "expected_table.csv"), newline="", encoding="utf-8") as fh:
        expected = [row for row in csv.reader(fh) if row]

    path = os.path.join(args.agent_workspace, "report.docx")
    if not os.path.isfile(path):
        fail("report.docx does not exist in the workspace")
    try:
        document = Document(path)
    except Exception as exc:  # not a valid docx
        fail(f"report.docx cannot be opened: {exc}")

    paragraphs = [p for p in document.paragraphs if p.text.strip()]
    if not paragraphs:
        fail("report.docx has no text paragraphs")
    first = paragraphs[0]
    if first.text.strip() != HEADING:
        fail(f"first paragraph is {first.text.strip()!r}, expected {HEADING!r}")
    if first.style is None or first.style.name != "Heading 1":
        fail(f"the heading uses style {first.style.name if first.style else None!r}, expected 'Heading 1'")

    if len(document.tables) != 1:
        fail(f"report.docx has {len(document.tables)} tables, expected 1")
    table = document.tables[0]
    got = [[cell.text.strip() for cell in row.cells] for row in table.rows]
    if len(got) != len(expected):
        fail(f"table has {len(got)} rows, expected {len(expected)}")
    for number, (g, w) in enumerate(zip(got, expected), start=1):  # noqa: B905 - grader in the suite's style; row counts checked just above
        if g != w:
            fail(f"table row {number} is {g}, expected {w}")
    print("PASS: heading and table match inventory.csv")


if __name__ == "__main__":
    main()
