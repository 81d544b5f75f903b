"""Fetching a URL from inside a desktop's network namespace, as its account does."""

from __future__ import annotations

import sys
from pathlib import Path

from mcpworld.env.local import desktop_user
from mcpworld.env.local.confine import Confinement
from mcpworld.env.local.netns import NetNamespace
from mcpworld.env.local.processes import run_bounded, scrubbed_env

FETCH = """
import sys, urllib.request
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=3).read().decode())
except Exception as exc:
    print("FAILED", type(exc).__name__, exc)
"""


def fetch_inside(ns: NetNamespace, url: str, user: desktop_user.DesktopUser) -> str:
    """What ``url`` answers to a GET from inside ``ns``, as the desktop account (or FAILED and the error)."""
    where = Path("/")  # a folder the desktop account may enter
    out = run_bounded(
        [sys.executable, "-c", FETCH, url],
        scrubbed_env(where, where),
        where,
        30,
        4000,
        user=user,
        confinement=Confinement(netns=ns),
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()
