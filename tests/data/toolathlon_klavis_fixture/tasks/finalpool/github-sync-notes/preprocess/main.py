"""Like the finalpool's GitHub preprocess scripts: it needs the test account's token and the servers' URLs."""
import json
import os
import sys
from argparse import ArgumentParser

parser = ArgumentParser()
parser.add_argument("--agent_workspace", required=True)
parser.add_argument("--launch_time", required=True)
args = parser.parse_args()
token = os.environ.get("KLAVIS_GITHUB_TOKEN")
urls = json.loads(os.environ.get("KLAVIS_MCP_SERVER_URLS", "{}"))
if not token or "github" not in urls or not os.environ.get("KLAVIS_API_KEY"):
    sys.exit(f"preprocess: no GitHub account handed over (token set: {bool(token)}, servers: {sorted(urls)})")
with open(os.path.join(args.agent_workspace, "repo.txt"), "w") as f:
    f.write("klavis-test-1/release-notes\n")  # what a real preprocess learns from the account
