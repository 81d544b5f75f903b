import sys
from argparse import ArgumentParser

from utils.general.helper import read_json

from .check_local import check_local  # a relative import: only works run as a module

parser = ArgumentParser()
parser.add_argument("--agent_workspace", required=True)
parser.add_argument("--groundtruth_workspace", required=True)
parser.add_argument("--res_log_file", required=True)
parser.add_argument("--launch_time", required=True)
args = parser.parse_args()
log = read_json(args.res_log_file)  # the trajectory must exist (25 upstream graders read it)
assert "messages" in log and "status" in log
ok, why = check_local(args.agent_workspace, args.groundtruth_workspace)
print(("pass: " if ok else "fail: ") + why)
sys.exit(0 if ok else 1)
