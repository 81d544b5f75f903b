"""Each desktop's X server admits only the clients that hold its cookie (docs/isolation.md,
docs/security.md). Without ``-auth``, any local user (a shared SLURM node) could open an episode's
display and read its screen or type into it, and so change its outcome. The desktop's own account
(its apps, the agent's shell) and the harness (input, screenshots, getters) get the cookie;
``nobody`` and another desktop's account do not, and neither can read the files that hold it."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from Xlib import error as xerror

from mcpworld.core.task import Task
from mcpworld.env.local.display import MARKER
from mcpworld.env.local.environment import LocalEnvironment
from mcpworld.env.local.xconnection import open_display

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("xdpyinfo"),
        reason="another uid's connection needs root, util-linux's setpriv and x11-utils' xdpyinfo",
    ),
]
NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
REFUSED = "Authorization required"  # what the X server answers a client without the cookie


def task(tmp_path: Path) -> Task:
    """A task whose setup starts an app (xterm) as the desktop's account: it must still show."""
    return Task(
        id="t/x-auth",
        app="xterm",
        instruction="-",
        dir=tmp_path / "task",
        source=tmp_path / "task" / "task.yaml",
        setup=[{"launch": {"command": ["xterm", "-T", "x-auth-window"], "window": "x-auth-window"}}],
    )


def xdpyinfo(display: str, env: dict[str, str], as_nobody: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*(NOBODY if as_nobody else []), "xdpyinfo", "-display", display],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
    )


def server_auth_file(desktop_id: str) -> Path:
    """The ``-auth`` file on the command line of the desktop's Xvfb (found by the desktop's marker)."""
    for proc in psutil.process_iter(["name", "cmdline"]):
        argv = proc.info["cmdline"] or []
        try:
            if proc.info["name"] == "Xvfb" and proc.environ().get(MARKER) == desktop_id:
                assert "-auth" in argv, argv
                return Path(argv[argv.index("-auth") + 1])
        except psutil.Error:
            continue
    raise AssertionError(f"no Xvfb of the desktop {desktop_id}")


def assert_closed_to_others(display: str, desktop_env: dict[str, str]) -> None:
    plain = {"PATH": "/usr/bin:/bin"}
    refused = xdpyinfo(display, plain, as_nobody=True)
    assert refused.returncode != 0 and REFUSED in refused.stderr, refused
    # nor with the desktop's XAUTHORITY named: the file is the account's, 0600, in its 0700 folder
    refused = xdpyinfo(display, dict(plain, XAUTHORITY=desktop_env["XAUTHORITY"]), as_nobody=True)
    assert refused.returncode != 0 and REFUSED in refused.stderr, refused


@pytest.mark.parametrize("network", ["host", "isolated_unfenced"])
def test_only_the_desktops_account_and_the_harness_open_its_display(tmp_path, network, monkeypatch):
    with LocalEnvironment(320, 240, network=network) as env:
        env.reset(task(tmp_path), tmp_path / "ep")  # the xterm's window appeared: the app reached the display
        assert env.display is not None and env.user is not None
        assert (env.netns is not None) == (network != "host")  # inside a namespace, apps use the socket file
        name, desktop_env = env.display.name, env.display.env
        assert env.shell("xdotool search --name x-auth-window").stdout.strip()

        # the desktop's own account, as the agent's shell runs: its XAUTHORITY, its file
        mine = env.shell(
            'id -un; xdpyinfo | grep -c dimensions; stat -c \'%U %a\' "$XAUTHORITY"; stat -c \'%U %a\' "$(dirname "$XAUTHORITY")"'
        )
        assert mine.returncode == 0 and mine.stdout.split("\n")[:4] == [
            env.user.name,
            "1",
            f"{env.user.name} 600",
            f"{env.user.name} 700",
        ], mine

        # the harness: in-process (python-xlib, mss) and its own subprocesses
        conn = open_display(name)
        conn.close()
        assert env.screenshot().size == (320, 240)
        assert xdpyinfo(name, dict(os.environ)).returncode == 0

        assert_closed_to_others(name, desktop_env)
        # a client of the harness's uid that lacks the cookie is refused too: the cookie, not the uid, lets in
        monkeypatch.setenv("XAUTHORITY", str(tmp_path / "none"))
        with pytest.raises(xerror.DisplayConnectionError, match=REFUSED):
            open_display(name)
        monkeypatch.undo()

        # the server's own file: the harness's alone (an X server that finds it emptied lets everyone in)
        server_file = server_auth_file(env.display.desktop_id)
        assert server_file.stat().st_uid == os.getuid() and stat.S_IMODE(server_file.stat().st_mode) == 0o600
        assert stat.S_IMODE(server_file.parent.stat().st_mode) == 0o700
        emptied = env.shell(f": > {server_file}")
        assert emptied.returncode != 0 and "Permission denied" in emptied.stderr
        assert_closed_to_others(name, desktop_env)
    assert not server_file.exists()  # gone with the display


def test_a_spare_desktops_display_is_closed_to_the_running_episodes_account(tmp_path):
    """env.pool=2: the desktop started ahead runs as another account; the running episode's agent
    cannot open it (nor any other local user)."""
    with LocalEnvironment(320, 240, pool=2) as env:
        env.reset(task(tmp_path), tmp_path / "ep")
        deadline = time.monotonic() + 60
        while not env.spares() and time.monotonic() < deadline:
            time.sleep(0.05)
        spare = next(iter(env.spares()), None)
        assert spare is not None and spare.user is not None and env.user is not None
        assert spare.user.uid != env.user.uid
        other = env.shell(f"xdpyinfo -display {spare.display.name}")
        assert other.returncode != 0 and REFUSED in other.stderr, other
        assert_closed_to_others(spare.display.name, spare.display.env)
        assert re.search(r"dimensions:\s+320x240", xdpyinfo(spare.display.name, dict(os.environ)).stdout)


def test_access_control_turned_off_from_the_desktop_is_turned_back_on(tmp_path):
    """The cookie's holder may run `xhost +` (any X client may): after the step the harness closes the
    display again, so the agent cannot open its desktop to other local users."""
    with LocalEnvironment(320, 240, network="host") as env:
        env.reset(task(tmp_path), tmp_path / "ep")
        assert env.display is not None
        assert env.restore_access() is False  # nothing to do: access control is on
        opened = env.shell("xhost +")
        assert opened.returncode == 0, opened
        let_in = xdpyinfo(env.display.name, {"PATH": "/usr/bin:/bin"}, as_nobody=True)
        assert let_in.returncode == 0, let_in  # what it did: any local user gets in
        assert env.restore_access() is True
        assert_closed_to_others(env.display.name, env.display.env)
        assert env.restore_access() is False
