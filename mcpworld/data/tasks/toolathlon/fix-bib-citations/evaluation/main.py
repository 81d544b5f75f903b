"""Compare paper/main.tex and paper/refs.bib line by line (normalized) with the groundtruth."""

import argparse
import os
import re
import sys

FILES = ("paper/main.tex", "paper/refs.bib")
CITE = re.compile(r"(\\cite[a-zA-Z]*\*?(?:\[[^\]]*\])*)\{([^}]*)\}")


def fail(reason):
    print(f"FAIL: {reason}")
    sys.exit(1)


def normalized_lines(path):
    """Non-blank lines with runs of whitespace collapsed and spaces inside citation key lists removed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    text = CITE.sub(lambda m: m.group(1) + "{" + re.sub(r"\s+", "", m.group(2)) + "}", text)
    lines = (" ".join(line.split()) for line in text.splitlines())
    return [line for line in lines if line]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent_workspace", required=True)
    parser.add_argument("--groundtruth_workspace", default=None)
    parser.add_argument("--res_log_file", default=None)
    parser.add_argument("--launch_time", default=None)
    args = parser.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    gt_dir = args.groundtruth_workspace or os.path.join(here, "..", "groundtruth_workspace")
    for rel in FILES:
        agent_path = os.path.join(args.agent_workspace, rel)
        if not os.path.isfile(agent_path):
            fail(f"{rel} is missing")
        got = normalized_lines(agent_path)
        want = normalized_lines(os.path.join(gt_dir, rel))
        for number, (g, w) in enumerate(zip(got, want), start=1):  # noqa: B905 - stops at the shorter on purpose; the line count is compared after
            if g != w:
                fail(f"{rel}, non-blank line {number}: {g!r} != expected {w!r}")
        if len(got) != len(want):
            fail(f"{rel} has {len(got)} non-blank lines, expected {len(want)}")
    print("PASS: citations fixed and nothing else changed")


if __name__ == "__main__":
    main()
