"""Check redacted/ against the groundtruth copies, ignoring all whitespace."""

import argparse
import os
import re
import sys


def fail(reason):
    print(f"FAIL: {reason}")
    sys.exit(1)


def visible_files(folder):
    return sorted(n for n in os.listdir(folder) if not n.startswith(".") and os.path.isfile(os.path.join(folder, n)))


def squeezed(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return re.sub(r"\s+", "", fh.read())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent_workspace", required=True)
    parser.add_argument("--groundtruth_workspace", default=None)
    parser.add_argument("--res_log_file", default=None)
    parser.add_argument("--launch_time", default=None)
    args = parser.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    gt_dir = os.path.join(args.groundtruth_workspace or os.path.join(here, "..", "groundtruth_workspace"), "redacted")
    out_dir = os.path.join(args.agent_workspace, "redacted")
    src_dir = os.path.join(args.agent_workspace, "documents")
    expected = visible_files(gt_dir)

    if not os.path.isdir(out_dir):
        fail("redacted/ does not exist")
    if not os.path.isdir(src_dir) or visible_files(src_dir) != expected:
        fail("documents/ no longer holds the original files")
    got = visible_files(out_dir)
    if got != expected:
        fail(f"redacted/ holds {got}, expected {expected}")
    for name in expected:
        if squeezed(os.path.join(out_dir, name)) != squeezed(os.path.join(gt_dir, name)):
            fail(f"redacted/{name} differs from the expected redaction")
    print(f"PASS: {len(expected)} files redacted correctly")


if __name__ == "__main__":
    main()
