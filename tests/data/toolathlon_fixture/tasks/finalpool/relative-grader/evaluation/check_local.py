import os

from utils.general.helper import normalize_str, read_json


def check_local(agent_workspace, groundtruth_workspace):
    expected = read_json(os.path.join(groundtruth_workspace, "expected.json"))["answer"]
    path = os.path.join(agent_workspace, "answer.txt")
    if not os.path.isfile(path):
        return False, "answer.txt is missing"
    with open(path, encoding="utf-8") as f:
        got = f.read()
    return normalize_str(got) == normalize_str(expected), f"answer {got.strip()!r}"
