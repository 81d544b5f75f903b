"""Compare the agent's Processed.xlsx (long format) with the groundtruth workbook."""

import argparse
import os
import sys

from openpyxl import load_workbook

TOLERANCE = 1e-6


def fail(reason):
    print(f"FAIL: {reason}")
    sys.exit(1)


def sheet_rows(path):
    """The first sheet's rows as lists, without trailing empty cells or trailing empty rows."""
    workbook = load_workbook(path, data_only=True, read_only=True)
    rows = []
    for row in workbook.worksheets[0].iter_rows(values_only=True):
        row = list(row)
        while row and row[-1] in (None, ""):
            row.pop()
        rows.append(row)
    workbook.close()
    while rows and not rows[-1]:
        rows.pop()
    return rows


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent_workspace", required=True)
    parser.add_argument("--groundtruth_workspace", default=None)
    parser.add_argument("--res_log_file", default=None)
    parser.add_argument("--launch_time", default=None)
    args = parser.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    gt_dir = args.groundtruth_workspace or os.path.join(here, "..", "groundtruth_workspace")
    agent_file = os.path.join(args.agent_workspace, "Processed.xlsx")
    if not os.path.isfile(agent_file):
        fail("Processed.xlsx does not exist in the workspace")
    try:
        got = sheet_rows(agent_file)
    except Exception as exc:  # a corrupt or non-xlsx file
        fail(f"Processed.xlsx cannot be read: {exc}")
    want = sheet_rows(os.path.join(gt_dir, "Processed.xlsx"))

    if not got or [str(c).strip() if c is not None else "" for c in got[0]] != want[0]:
        fail(f"header row is {got[0] if got else []}, expected {want[0]}")
    if len(got) != len(want):
        fail(f"{len(got) - 1} data rows, expected {len(want) - 1}")
    for number, (g, w) in enumerate(zip(got[1:], want[1:]), start=2):  # noqa: B905 - grader in the suite's style; row counts checked just above
        if len(g) != len(w):
            fail(f"row {number} has {len(g)} cells, expected {len(w)}")
        for gv, wv in zip(g, w):  # noqa: B905 - grader in the suite's style; cell counts checked just above
            if is_number(wv):
                if not is_number(gv) or abs(gv - wv) > TOLERANCE:
                    fail(f"row {number}: {gv!r} != {wv!r}")
            elif (str(gv).strip() if gv is not None else "") != wv:
                fail(f"row {number}: {gv!r} != {wv!r}")
    print(f"PASS: {len(want) - 1} long-format rows match")


if __name__ == "__main__":
    main()
