"""Create the project/ Git repository (fixed history) and a release-notes draft dated from launch_time."""

import argparse
import datetime
import os
import shutil
import subprocess

FILES = {
    "README.md": "# csvtool\n\nA small command-line tool that converts CSV files.\n\nUsage: `python app.py input.csv`\n",
    "app.py": (
        "import csv\nimport sys\n\n\n"
        "def load(path):\n    with open(path, newline='') as fh:\n        return list(csv.DictReader(fh))\n\n\n"
        "if __name__ == '__main__':\n    print(load(sys.argv[1]))\n"
    ),
    "CHANGELOG.md": (
        "# Changelog\n\nAll notable changes to this project are documented in this file.\n\n"
        "## [1.0] - 2024-03-02\n- Initial release with CSV import.\n- Command-line interface.\n"
    ),
}
JSON_EXPORT = "\n\ndef to_json(rows):\n    import json\n    return json.dumps(rows, indent=2)\n"
EMPTY_FIX = "\n\ndef load_safe(path):\n    rows = load(path)\n    return rows or []\n"


def git(repo, *args, date=None):
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", "-C", repo, *args], check=True, env=env, capture_output=True)


def write(repo, name, text, append=False):
    with open(os.path.join(repo, name), "a" if append else "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--agent_workspace", required=True)
    parser.add_argument("--launch_time", required=True)
    args = parser.parse_args()

    release_date = datetime.datetime.strptime(args.launch_time[:10], "%Y-%m-%d").date()
    workspace = os.path.abspath(args.agent_workspace)
    repo = os.path.join(workspace, "project")
    if os.path.exists(repo):
        shutil.rmtree(repo)
    os.makedirs(repo)

    git(repo, "init", "-q")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    git(repo, "config", "user.name", "Dana Developer")
    git(repo, "config", "user.email", "dana@example.com")
    git(repo, "config", "commit.gpgsign", "false")

    write(repo, "README.md", FILES["README.md"])
    write(repo, "app.py", FILES["app.py"])
    git(repo, "add", "README.md", "app.py")
    git(repo, "commit", "-q", "-m", "Initial commit", date="2024-03-01T10:00:00+00:00")

    write(repo, "CHANGELOG.md", FILES["CHANGELOG.md"])
    git(repo, "add", "CHANGELOG.md")
    git(repo, "commit", "-q", "-m", "Release 1.0", date="2024-03-02T09:30:00+00:00")

    write(repo, "app.py", JSON_EXPORT, append=True)
    git(repo, "commit", "-q", "-am", "Add JSON export", date="2024-05-10T14:00:00+00:00")

    write(repo, "app.py", EMPTY_FIX, append=True)
    git(repo, "commit", "-q", "-am", "Handle empty input files", date="2024-05-12T16:20:00+00:00")

    with open(os.path.join(workspace, "release_notes_draft.md"), "w", encoding="utf-8") as fh:
        fh.write(
            "Release notes draft\n\n"
            "Version: 1.1\n"
            f"Date: {release_date.strftime('%B %d, %Y')} ({release_date.isoformat()})\n\n"
            "Changes:\n"
            "- Add JSON export.\n"
            "- Fix crash on empty input files.\n"
        )


if __name__ == "__main__":
    main()
