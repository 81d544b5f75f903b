"""Passes when the agent's answer matches the notes and the grader, too, got the GitHub account."""
import os
import sys
from argparse import ArgumentParser

parser = ArgumentParser()
for name in ("--res_log_file", "--agent_workspace", "--groundtruth_workspace", "--launch_time"):
    parser.add_argument(name)
args = parser.parse_args()
if os.environ.get("KLAVIS_GITHUB_TOKEN") != "ghp_fakeTOKEN0123456789":
    sys.exit("grader: the GitHub test account's token was not handed over")
answer = os.path.join(args.agent_workspace, "answer.txt")
if not os.path.isfile(answer) or "login loop" not in open(answer).read():
    sys.exit("grader: answer.txt does not hold the release notes")
if not os.path.isfile(os.path.join(args.agent_workspace, "repo.txt")):
    sys.exit("grader: the preprocess output is missing")
print("pass")
