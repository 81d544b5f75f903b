"""Where the project's own files are: the one place that knows the checkout's layout."""

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # mcpworld/
PROJECT = PACKAGE.parent  # the checkout: tasks/, scripts/, docker/, .apps/, .mcp-servers/
CONF_DIR = PACKAGE / "conf"  # the Hydra config tree (inside the package: a wheel carries it)
BUILTIN_TASKS = PROJECT / "tasks"  # the built-in tasks (tasks.root when unset)
