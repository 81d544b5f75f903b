"""The instruction as the agent reads it on a given desktop.

The suites name their machines' paths in their instructions: OSWorld's ``/home/user/…``,
PC-Canary's ``/workspace/.mcpworld/…``, ``/home/agent/…`` and ``/FreeCAD/…``. The loaders keep that
text as the suite wrote it, and the desktops give those paths: env=local's mount namespace
(``env.files=hidden``, env/local/mountns.py), env=docker's container, a suite's own VM. Only a desktop that
lacks them (env=local with ``env.files=open``) gets the text with its home in their place.
"""

from __future__ import annotations

from mcpworld.core.task import HOME_USER
from mcpworld.tasks.mcpworld_format import AUTHOR_HOME_FOLDERS, AUTHOR_HOME_TEXT


def without_suite_paths(text: str) -> str:
    """``text`` with the suites' home paths as ``~/…`` (a desktop where they do not exist)."""
    text = AUTHOR_HOME_TEXT.sub(lambda m: "~/" + AUTHOR_HOME_FOLDERS[m.group(0)], text)
    return HOME_USER.sub("~", text)


def shown(instruction: str, suite_paths: bool) -> str:
    """The instruction the agent is given on a desktop that has the suites' paths or not."""
    return instruction if suite_paths else without_suite_paths(instruction)
