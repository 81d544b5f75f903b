import sys
from argparse import ArgumentParser

parser = ArgumentParser()
for name in ("--agent_workspace", "--groundtruth_workspace", "--res_log_file", "--launch_time"):
    parser.add_argument(name, required=True)
args = parser.parse_args()
seen = {"answer": "ok"}
print(f"verdict: {seen["answer"]}")  # the same quotes inside an f-string: valid only from Python 3.12
sys.exit(0)
