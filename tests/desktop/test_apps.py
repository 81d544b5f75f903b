"""Real applications on a desktop: they run as the desktop's unprivileged account, start under the
names the suites use (the PATH shims) with the desktop's own ports, and count as ready only once
their window takes input."""

from __future__ import annotations

import json
import os
import pwd
import threading
from pathlib import Path

import httpx
import psutil
import pytest

from mcpworld.apps.catalog import programs
from mcpworld.core.errors import InfraError
from mcpworld.core.task import Task
from mcpworld.env.local.environment import LocalEnvironment

pytestmark = pytest.mark.desktop
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching to the desktop account needs root")


def task(tmp_path: Path, *setup: dict, app: str = "xterm") -> Task:
    return Task(id=f"t/{app}", app=app, instruction="x", dir=tmp_path, source=tmp_path / "task.yaml", setup=list(setup))


def owner(pid: int) -> str:
    return psutil.Process(pid).username()


@needs_root
def test_apps_shell_and_desktop_run_as_an_unprivileged_account_with_no_sudo(tmp_path):
    with LocalEnvironment(640, 480, programs=programs()) as env:
        env.reset(task(tmp_path, {"launch": {"command": ["xterm", "-T", "probe"], "window": "probe"}}), tmp_path / "ep")
        account = env.user.name
        assert account.startswith("mcpworld-d") and pwd.getpwnam(account).pw_uid != 0
        assert owner(env.launched[0].proc.pid) == account
        assert env.shell("id -un").stdout.strip() == account
        assert env.shell("id -u").stdout.strip() != "0"
        # the harness's own environment (where API keys live) is closed to it
        result = env.shell(f"cat /proc/{os.getpid()}/environ")
        assert result.returncode != 0 and "Permission denied" in result.stderr
        # its home is its own, and nobody else's
        assert Path(env.home).stat().st_uid == env.user.uid and (Path(env.home).stat().st_mode & 0o077) == 0
        assert env.shell("sudo -n true").returncode != 0
        log = json.loads((tmp_path / "ep" / "logs" / "desktop.json").read_text())
        assert log["user"] == account and log["display"] == env.display.name


@needs_root
def test_two_desktops_at_once_get_different_accounts_that_cannot_see_each_others_homes(tmp_path):
    envs = [LocalEnvironment(320, 240, programs=programs()) for _ in range(2)]
    try:
        for i, env in enumerate(envs):
            env.reset(task(tmp_path), tmp_path / f"ep{i}")
        a, b = envs
        assert a.user.uid != b.user.uid
        (b.home / "secret.txt").write_text("b's")
        assert b.shell("cat ~/secret.txt").stdout == "b's"
        peek = a.shell(f"cat {b.home}/secret.txt")
        assert peek.returncode != 0 and "Permission denied" in peek.stderr
    finally:
        for env in envs:
            env.close()
    # a closed desktop's account is free again: the next desktop takes the first free one (another
    # run on this host may take one meanwhile, never a freed one that is lower)
    slot = lambda e: int(e.user.name.removeprefix("mcpworld-d"))  # noqa: E731
    with LocalEnvironment(320, 240) as env:
        assert slot(env) <= slot(envs[0])


@needs_root
def test_concurrent_desktops_never_share_an_account(tmp_path):
    envs, errors = [], []

    def make():
        try:
            envs.append(LocalEnvironment(200, 200))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=make) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors
        assert len({env.user.uid for env in envs}) == 5
    finally:
        for env in envs:
            env.close()


def test_the_suites_command_names_start_the_real_programs_with_this_desktops_settings(tmp_path):
    """`google-chrome --remote-debugging-port=1337` (OSWorld's command) starts Debian's Chromium on
    this desktop's own DevTools port instead, with its profile where Chrome keeps it."""
    with LocalEnvironment(800, 600, programs=programs()) as env:
        env.reset(
            task(
                tmp_path,
                {"launch": {"command": ["google-chrome", "--remote-debugging-port=1337"], "window": "Chromium", "timeout": 60}},
                app="chromium",
            ),
            tmp_path / "ep",
        )
        port = env.ports["cdp"]
        assert port != 1337
        version = httpx.get(f"http://127.0.0.1:{port}/json/version", timeout=5).json()
        assert "Chrome" in version["Browser"]
        assert (env.home / ".config" / "google-chrome" / "Default").is_dir()
        assert env.shell("command -v google-chrome chrome libreoffice vlc gimp thunderbird").stdout.count(str(env.bin_dir)) == 6
        if env.user:
            assert owner(env.launched[0].proc.pid) == env.user.name


def test_vlc_starts_with_its_http_interface_on_this_desktops_port_and_password(tmp_path):
    with LocalEnvironment(800, 600, programs=programs()) as env:
        env.reset(
            task(
                tmp_path,
                {
                    "launch": {
                        "command": "VLC_VERBOSE=-1 vlc --no-audio --http-port=8080",
                        "shell": True,
                        "window": "VLC media player",
                    }
                },
                app="vlc",
            ),
            tmp_path / "ep",
        )
        url = f"http://127.0.0.1:{env.ports['vlc']}/requests/status.xml"
        assert httpx.get(url, timeout=5).status_code == 401  # the password is required …
        reply = httpx.get(url, auth=("", env.app_password), timeout=5)
        assert reply.status_code == 200 and "<state>stopped</state>" in reply.text  # … and this desktop's works


def test_a_program_this_machine_lacks_names_its_install_command(tmp_path):
    from mcpworld.apps.programs import Program

    ghost = Program(app="ghost", binary="ghost-app-not-installed", names=("ghost",), install="apt-get install -y ghost")
    with LocalEnvironment(320, 240, programs=[ghost]) as env:
        with pytest.raises(InfraError, match="apt-get install -y ghost"):
            env.reset(task(tmp_path, {"launch": {"command": ["ghost"]}}), tmp_path / "ep")
        result = env.shell("ghost")
        assert result.returncode == 127 and "apt-get install -y ghost" in result.stderr


def test_a_window_that_does_not_take_input_is_not_ready(tmp_path):
    """A client that advertises _NET_WM_PING but never runs its event loop again (stopped) is not ready."""
    with LocalEnvironment(320, 240) as env:
        env.reset(task(tmp_path, {"launch": {"command": ["mousepad"], "window": "Mousepad"}}), tmp_path / "ep")
        wid = env.windows.find("Mousepad")
        assert env.windows.responds(wid, 5)
        proc = psutil.Process(env.launched[0].proc.pid)
        proc.suspend()
        try:
            assert not env.windows.responds(wid, 1.0)
        finally:
            proc.resume()


def test_mcp_servers_run_as_the_desktop_account_and_playwright_drives_the_episodes_chromium(tmp_path):
    """@playwright/mcp attaches over this desktop's DevTools port (no browser of its own); the
    filesystem server writes files the desktop's apps own."""
    import anyio
    import yaml

    from mcpworld.mcp.client import ServerPool
    from mcpworld.mcp.install import servers_dir
    from mcpworld.mcp.servers import as_account
    from mcpworld.mcp.spec import parse_servers

    catalog = yaml.safe_load((Path(__file__).parents[2] / "mcpworld" / "conf" / "mcp" / "default.yaml").read_text())["catalog"]
    with LocalEnvironment(800, 600, programs=programs()) as env:
        env.reset(
            task(tmp_path, {"launch": {"command": ["google-chrome"], "window": "Chromium", "timeout": 60}}, app="chromium"),
            tmp_path / "ep",
        )
        (env.home / "page.html").write_text("<title>Hello MCP</title><p>hi</p>")
        env.user and env.user.own(env.home / "page.html")
        values = {
            "workspace": str(env.home),
            "home": str(env.home),
            "servers": str(servers_dir()),
            "episode": str(tmp_path),
            **{f"port_{k}": str(v) for k, v in env.ports.items()},
        }
        events = []
        specs = [
            as_account(s.filled(values), env.user, lambda kind, **f: events.append((kind, f)), str(env.runtime_dir))
            for s in parse_servers(["playwright", "filesystem"], catalog, "test")
        ]

        async def drive():
            async with ServerPool(specs, tmp_path / "logs", home=env.home) as pool:
                for server, tool, args in [
                    ("playwright", "browser_navigate", {"url": f"file://{env.home}/page.html"}),
                    ("filesystem", "write_file", {"path": f"{env.home}/made.txt", "content": "x"}),
                ]:
                    result = await pool.call(server, tool, args)
                    assert not result.is_error, result

        anyio.run(drive)
        tabs = httpx.get(f"http://127.0.0.1:{env.ports['cdp']}/json/list", timeout=5).json()
        assert any(t.get("title") == "Hello MCP" for t in tabs), tabs
        assert not [e for e in events if e[0] == "mcp_user"]  # both ran as the account
        if env.user:
            assert (env.home / "made.txt").stat().st_uid == env.user.uid


@pytest.mark.skipif(
    not [p for p in programs() if p.app == "vscode" and p.installed()],
    reason="code-server is not installed (make apps APPS=vscode)",
)
def test_code_opens_the_folder_in_vs_code_and_answers_the_command_line(tmp_path):
    """`code ~/project` (as the suites run it) serves VS Code on this desktop's port and shows it;
    `code --list-extensions` works from the agent's shell; settings live where VS Code keeps them."""
    with LocalEnvironment(1000, 800, programs=programs()) as env:
        env.reset(
            task(
                tmp_path,
                {"execute": {"command": "mkdir -p ~/project", "shell": True}},
                {"launch": {"command": ["code", "~/project"], "timeout": 90}},
                app="vscode",
            ),
            tmp_path / "ep",
        )
        assert env.windows.find("project - Visual Studio Code") is not None
        assert httpx.get(f"http://127.0.0.1:{env.ports['vscode']}/healthz", timeout=5).status_code == 200
        listed = env.shell("code --list-extensions; echo rc=$?", timeout=60)
        assert "rc=0" in listed.stdout, listed.stderr
        assert (env.home / ".config" / "Code" / "User" / "settings.json").is_file()
        # code-server (no login) serves on the desktop's own unix socket, not on a TCP port
        socket_path = env.runtime_dir / "vscode.sock"
        server = [p for p in psutil.process_iter(["cmdline", "username"]) if str(socket_path) in (p.info["cmdline"] or [])]
        assert server and not any("--bind-addr" in (p.info["cmdline"] or []) for p in server)
        assert socket_path.stat().st_mode & 0o777 == 0o600
        if env.user:
            assert all(p.info["username"] == env.user.name for p in server)
            assert socket_path.stat().st_uid == env.user.uid
