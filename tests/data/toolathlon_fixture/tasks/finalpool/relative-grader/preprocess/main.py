import os
from argparse import ArgumentParser

from utils.general.helper import normalize_str  # upstream's shared package, importable from the root

parser = ArgumentParser()
parser.add_argument("--agent_workspace", required=True)
parser.add_argument("--launch_time", required=True)
args = parser.parse_args()
with open(os.path.join(args.agent_workspace, "prepared.txt"), "w", encoding="utf-8") as f:
    f.write(normalize_str(args.launch_time))
