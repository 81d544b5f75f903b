"""Check the release-1.1 branch, its commit and CHANGELOG.md, and a clean working tree, with git."""

import argparse
import datetime
import os
import re
import subprocess
import sys

MAIN_TIP_SUBJECT = "Handle empty input files"
CHANGES = ["- Add JSON export.", "- Fix crash on empty input files."]
OLD_CHANGELOG = [
    "# Changelog",
    "All notable changes to this project are documented in this file.",
    "## [1.0] - 2024-03-02",
    "- Initial release with CSV import.",
    "- Command-line interface.",
]


def fail(reason):
    print(f"FAIL: {reason}")
    sys.exit(1)


def git(repo, *args):
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    proc = subprocess.run(["git", "-c", "safe.directory=*", "-C", repo, *args], capture_output=True, text=True, env=env)
    return proc.returncode, proc.stdout


def release_date(launch_time, workspace):
    if launch_time:
        return datetime.datetime.strptime(launch_time[:10], "%Y-%m-%d").date().isoformat()
    draft = os.path.join(workspace, "release_notes_draft.md")  # fallback when no launch time is passed
    found = re.search(r"\((\d{4}-\d{2}-\d{2})\)", open(draft, encoding="utf-8").read()) if os.path.isfile(draft) else None  # noqa: SIM115 - kept open beyond this block
    if not found:
        fail("no --launch_time given and no date in release_notes_draft.md")
    return found.group(1)


def lines(text):
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent_workspace", required=True)
    parser.add_argument("--groundtruth_workspace", default=None)
    parser.add_argument("--res_log_file", default=None)
    parser.add_argument("--launch_time", default=None)
    args = parser.parse_args()

    repo = os.path.join(args.agent_workspace, "project")
    if git(repo, "rev-parse", "--git-dir")[0] != 0:
        fail("project/ is not a git repository")
    code, branch_tip = git(repo, "rev-parse", "--verify", "-q", "refs/heads/release-1.1^{commit}")  # noqa: RUF059 - grader mimics the suite's own script; the tip is only checked to exist
    if code != 0:
        fail("branch release-1.1 does not exist")
    _, main_tip = git(repo, "rev-parse", "--verify", "-q", "refs/heads/main^{commit}")
    if git(repo, "log", "-1", "--format=%s", "main")[1].strip() != MAIN_TIP_SUBJECT:
        fail("main has changed: its last commit is no longer the original one")
    _, parents = git(repo, "log", "-1", "--format=%P", "release-1.1")
    if parents.split() != [main_tip.strip()]:
        fail("release-1.1 must be exactly one commit on top of main")
    _, subject = git(repo, "log", "-1", "--format=%B", "release-1.1")
    if subject.strip() != "Release 1.1":
        fail(f"last commit message on release-1.1 is {subject.strip()!r}, expected 'Release 1.1'")

    code, changelog = git(repo, "show", "release-1.1:CHANGELOG.md")
    if code != 0:
        fail("CHANGELOG.md is missing from the release-1.1 commit")
    date = release_date(args.launch_time, args.agent_workspace)
    expected = OLD_CHANGELOG[:2] + [f"## [1.1] - {date}"] + CHANGES + OLD_CHANGELOG[2:]  # noqa: RUF005 - grader kept in the suite's style
    got = lines(changelog)
    if got != expected:
        diff = next((f"{g!r} != expected {w!r}" for g, w in zip(got, expected) if g != w), "different line count")  # noqa: B905 - stops at the shorter on purpose; a length mismatch falls to the default message
        fail(f"CHANGELOG.md in release-1.1: {diff}")
    _, changed = git(repo, "diff", "--name-only", "main", "release-1.1")
    if changed.split() != ["CHANGELOG.md"]:
        fail(f"the release commit changes {changed.split()}, expected only CHANGELOG.md")

    code, status = git(repo, "status", "--porcelain", "--untracked-files=all")
    if code != 0 or status.strip():
        fail(f"working tree of project/ is not clean: {status.strip()[:200]!r}")
    print(f"PASS: release-1.1 committed with the {date} changelog entry")


if __name__ == "__main__":
    main()
