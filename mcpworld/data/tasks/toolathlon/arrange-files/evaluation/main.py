"""Check that the inbox files were moved, unchanged, into the requested folder tree."""

import argparse
import hashlib
import json
import os
import sys


def fail(reason):
    print(f"FAIL: {reason}")
    sys.exit(1)


def claimed_done(log_path):
    if not log_path or not os.path.isfile(log_path):
        fail(f"trajectory log not found: {log_path}")
    try:
        with open(log_path, encoding="utf-8") as fh:
            log = json.load(fh)
    except (OSError, ValueError) as exc:
        fail(f"trajectory log unreadable: {exc}")
    for message in log.get("messages") or []:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        for call in message.get("tool_calls") or []:
            name = (call.get("function") or {}).get("name") or call.get("name")
            if name == "local-claim_done":
                return True
    return False


def scan(root):
    """Visible (not dot-prefixed) directories and files under root, as relative paths."""
    dirs, files = set(), {}
    for here, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if not d.startswith(".")]
        rel = os.path.relpath(here, root)
        if rel != ".":
            dirs.add(rel.replace(os.sep, "/"))
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(here, name)
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            files[os.path.relpath(path, root).replace(os.sep, "/")] = digest
    return dirs, files


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent_workspace", required=True)
    parser.add_argument("--groundtruth_workspace", default=None)
    parser.add_argument("--res_log_file", default=None)
    parser.add_argument("--launch_time", default=None)
    args = parser.parse_args()

    here = os.path.dirname(os.path.abspath(__file__))
    gt_dir = args.groundtruth_workspace or os.path.join(here, "..", "groundtruth_workspace")
    with open(os.path.join(gt_dir, "expected_tree.json"), encoding="utf-8") as fh:
        expected = json.load(fh)["files"]
    expected_dirs = set()
    for path in expected:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            expected_dirs.add("/".join(parts[:i]))

    dirs, files = scan(args.agent_workspace)
    missing = sorted(set(expected) - set(files))
    if missing:
        fail(f"{len(missing)} file(s) not at their expected place, e.g. {missing[0]}")
    extra = sorted(set(files) - set(expected))
    if extra:
        fail(f"unexpected file(s) left in the workspace, e.g. {extra[0]}")
    changed = sorted(p for p in expected if files[p] != expected[p])
    if changed:
        fail(f"file content changed: {changed[0]}")
    missing_dirs = sorted(expected_dirs - dirs)
    if missing_dirs:
        fail(f"missing folder {missing_dirs[0]}")
    extra_dirs = sorted(dirs - expected_dirs - {"inbox"})
    if extra_dirs:
        fail(f"unexpected folder {extra_dirs[0]}")
    if not claimed_done(args.res_log_file):
        fail("the agent never called local-claim_done")
    print("PASS: all 12 files are in place and unchanged")


if __name__ == "__main__":
    main()
