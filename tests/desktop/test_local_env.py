"""The local backend on a real Xvfb display: input, screenshots, settle, context, teardown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from mcpworld.core.errors import InfraError, UserError
from mcpworld.env.local.display import MARKER
from mcpworld.env.local.environment import LocalEnvironment
from tests.fakes.secret_server import SecretServer
from tests.helpers.desktops import make_task

pytestmark = pytest.mark.desktop


def desktop_processes(env: LocalEnvironment) -> list[psutil.Process]:
    """The desktop's processes: those in its cgroup, and those its marker names (a display number
    is soon another desktop's, so DISPLAY cannot tell)."""
    cgroup = env.confinement.cgroup
    found = {pid for pid in (cgroup.pids() if cgroup else [])}
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARKER) == str(env.workroot):
                found.add(proc.pid)
        except (psutil.Error, OSError):
            pass
    return [psutil.Process(pid) for pid in found if psutil.pid_exists(pid)]


@pytest.mark.parametrize("size", [(1000, 1000), (1024, 768)])
def test_screenshot_has_the_resolution(tmp_path, size):
    with LocalEnvironment(*size) as env:
        env.reset(make_task(tmp_path, []), tmp_path / "ep")
        assert env.screenshot().size == size


def test_typing_into_mousepad_reaches_the_file_and_teardown_kills_everything(tmp_path):
    task = make_task(tmp_path, [{"launch": {"command": ["mousepad", "~/docs/notes.txt"], "window": "notes.txt"}}])
    env = LocalEnvironment(1000, 1000)
    try:
        env.reset(task, tmp_path / "ep")
        name = env.display.name
        before = env.screenshot()
        env.act({"kind": "key", "keys": "ctrl+End"})
        env.act({"kind": "type", "text": "Grüße, ünïcode & Symbols: {}[]|~\n"})
        env.act({"kind": "key", "keys": "ctrl+s"})
        after = env.settle(before)
        assert after.tobytes() != before.tobytes()  # the settle saw the change
        for _ in range(50):
            if env.read_file("~/docs/notes.txt") != b"alpha\n":
                break
            env.settle(None)
        assert env.read_file("/home/user/docs/notes.txt").decode() == "alpha\nGrüße, ünïcode & Symbols: {}[]|~\n"
        assert desktop_processes(env)  # mousepad, dbus, openbox are running
    finally:
        env.end_episode()
    assert desktop_processes(env) == []
    assert not Path(f"/tmp/.X11-unix/X{name[1:]}").exists()
    env.close()
    assert not env.workroot.exists()


def test_context_restore_undoes_the_previous_attempt(tmp_path):
    task = make_task(tmp_path, [])
    with LocalEnvironment(1000, 1000) as env:
        env.reset(task, tmp_path / "ep0")
        (env.home / "docs" / "notes.txt").write_text("changed by the agent")
        (env.home / "stray.txt").write_text("left behind")
        env.end_episode()
        env.reset(task, tmp_path / "ep1")
        assert (env.home / "docs" / "notes.txt").read_text() == "alpha\n"
        assert not (env.home / "stray.txt").exists()


def test_pointer_click_and_cursor_position(tmp_path):
    with LocalEnvironment(1024, 768) as env:
        env.reset(make_task(tmp_path, []), tmp_path / "ep")
        env.act({"kind": "click", "x": 700, "y": 500, "button": 1, "count": 1})
        assert env.cursor_position() == (700, 500)
        env.act({"kind": "move", "x": 5000, "y": -3})  # clamped to the screen
        assert env.cursor_position() == (1023, 0)


def test_shell_is_scrubbed_and_bounded(tmp_path, monkeypatch):
    monkeypatch.setenv("MCPWORLD_TEST_API_KEY", "sk-secret-value")
    with LocalEnvironment(1000, 1000) as env:
        env.reset(make_task(tmp_path, []), tmp_path / "ep")
        r = env.shell("env; pwd")
        assert "sk-secret-value" not in r.stdout
        assert f"HOME={env.home}" in r.stdout
        assert str(env.home) in r.stdout.splitlines()[-1]
        assert env.shell("sleep 5", timeout=0.5).timed_out
        long = env.shell("yes | head -c 50000", max_output=1000)
        assert long.truncated and len(long.stdout) == 1000


def test_setup_steps_execute_sleep_activate(tmp_path):
    task = make_task(
        tmp_path,
        [
            {"execute": {"command": "echo made > ~/made.txt", "shell": True}},
            {"type": "launch", "parameters": {"command": ["xterm", "-title", "first-term"], "window": "first-term"}},
            {"launch": {"command": ["xterm", "-title", "second-term"], "window": "second-term"}},
            {"sleep": 0.1},
            {"activate_window": {"window_name": "first-term"}},
        ],
    )
    with LocalEnvironment(1000, 1000) as env:
        env.reset(task, tmp_path / "ep")
        assert env.read_file("~/made.txt") == b"made\n"
        first = env.windows.find("first-term")
        for _ in range(100):
            if env.windows.active() == first:
                break
            env.settle(None)
        assert env.windows.active() == first


def test_app_without_window_is_an_infra_error_with_its_output(tmp_path):
    task = make_task(
        tmp_path, [{"launch": {"command": "echo boom >&2; sleep 30", "shell": True, "window": "never-appears", "timeout": 1}}]
    )
    with LocalEnvironment(1000, 1000) as env, pytest.raises(InfraError, match=r"never-appears.*boom"):
        env.reset(task, tmp_path / "ep")


def test_a_launch_after_a_kill_awaits_the_new_window_not_the_closing_one(tmp_path):
    """`pkill chrome; google-chrome`: the killed instance's window still matches for a moment and
    answers nothing; the launch waits for the new program's window instead of failing on it."""
    from tests.desktop.x_client import bare_window

    with LocalEnvironment(1000, 1000) as env:
        env.reset(make_task(tmp_path, []), tmp_path / "ep")
        old, stuck = bare_window(env.display.name, "Relaunched App", ping=True)  # never answers: dying
        try:
            deadline = time.monotonic() + 10
            while env.windows.find("Relaunched App") is None and time.monotonic() < deadline:
                time.sleep(0.05)
            closer = threading.Timer(1.0, lambda: (stuck.destroy(), old.sync()))
            closer.start()
            env.launch("sleep 1.5; exec xterm -T 'Relaunched App'", shell=True, window="Relaunched App", timeout_s=30)
            closer.join()
            assert env.launched[-1].window != stuck.id
            assert env.launched[-1].window in {w for w, _, _ in env.windows.list()}
        finally:
            old.close()


def test_a_pkill_step_is_done_when_what_it_stopped_is_gone(tmp_path):
    """OSWorld's postconfig `pkill chrome` then `google-chrome`: the next step must not meet the
    program still shutting down."""
    with LocalEnvironment(1000, 1000) as env:
        env.reset(make_task(tmp_path, []), tmp_path / "ep")
        env.shell("setsid bash -c 'trap \"sleep 1.5; exit\" TERM; while :; do sleep 0.05; done' lingering-mcpw >/dev/null 2>&1 &")
        lingering = lambda: [p for p in desktop_processes(env) if "lingering-mcpw" in " ".join(p.cmdline())]  # noqa: E731
        deadline = time.monotonic() + 10
        while not lingering() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lingering()
        began = time.monotonic()
        env.run_steps([{"type": "launch", "parameters": {"command": ["pkill", "-f", "lingering-mcpw"]}}])
        assert lingering() == [] and time.monotonic() - began >= 1.0  # it waited out the shutdown


def test_missing_app_names_the_package(tmp_path):
    task = make_task(tmp_path, [{"launch": {"command": ["no-such-app-xyz"]}}])
    with LocalEnvironment(1000, 1000) as env, pytest.raises(UserError, match=r"no-such-app-xyz.*apt-get install"):
        env.reset(task, tmp_path / "ep")


def test_two_environments_get_different_displays(tmp_path):
    with LocalEnvironment(1000, 1000) as a, LocalEnvironment(1000, 1000) as b:
        a.reset(make_task(tmp_path / "a", []), tmp_path / "ea")
        b.reset(make_task(tmp_path / "b", []), tmp_path / "eb")
        assert a.display.name != b.display.name
        assert a.home != b.home


def test_copy_and_close_window_steps_and_home_user_commands(tmp_path):
    src = tmp_path / "payload.txt"
    src.write_text("payload")
    task = make_task(
        tmp_path,
        [
            {"copy": {"src": str(src), "dest": "/home/user/in/payload.txt"}},
            {"execute": {"command": "cp /home/user/in/payload.txt /home/user/copy.txt", "shell": True}},
            {"launch": {"command": ["xterm", "-title", "closing-term"], "window": "closing-term"}},
            {"close_window": {"window_name": "closing-term"}},
        ],
    )
    with LocalEnvironment(1000, 1000) as env:
        env.reset(task, tmp_path / "ep")
        assert env.read_file("~/copy.txt") == b"payload"
        for _ in range(100):
            if env.windows.find("closing-term") is None:
                break
            env.settle(None)
        assert env.windows.find("closing-term") is None


def _slow_quit_app(env: LocalEnvironment, title: str, flushed: Path, seconds: str) -> subprocess.Popen:
    app = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("slow_quit_app.py")), env.display.name, title, str(flushed), seconds]
    )
    deadline = time.monotonic() + 20
    while env.windows.find(title) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert env.windows.find(title) is not None
    return app


def test_close_window_with_wait_returns_once_the_app_has_quit(tmp_path):
    """A postconfig reads what an app writes when it quits (Chromium's Preferences): `wait: true`
    holds the step until the window's process is gone; without it the step returns at once."""
    with LocalEnvironment(1000, 1000) as env:
        env.reset(make_task(tmp_path, []), tmp_path / "ep")
        waited, unwaited = tmp_path / "waited", tmp_path / "unwaited"
        app = _slow_quit_app(env, "slow-quit-a", unwaited, "1.5")
        env.run_steps([{"close_window": {"window_name": "slow-quit-a"}}])
        assert not unwaited.exists()
        app.wait(20)
        app = _slow_quit_app(env, "slow-quit-b", waited, "1.5")
        env.run_steps([{"close_window": {"window_name": "slow-quit-b", "wait": True, "timeout": 20}}])
        assert waited.read_text() == "flushed"
        app.wait(5)


def test_close_window_with_wait_fails_as_the_environment_when_the_app_stays(tmp_path):
    with LocalEnvironment(1000, 1000) as env:
        env.reset(make_task(tmp_path, []), tmp_path / "ep")
        app = _slow_quit_app(env, "stays-open", tmp_path / "never", "never")
        try:
            with pytest.raises(InfraError, match=r"stays-open.*still ran 1s after it was asked to close"):
                env.run_steps([{"close_window": {"window_name": "stays-open", "wait": True, "timeout": 1}}])
        finally:
            app.kill()
            app.wait(5)


def test_a_launched_command_that_ends_without_a_window_is_done(tmp_path):
    """OSWorld postconfigs `launch` commands too (`pkill vlc`): one that ends is no app that failed;
    an app that shows no window still is (the test above)."""
    task = make_task(
        tmp_path,
        [{"launch": {"command": ["touch", "/home/user/ran"]}}, {"launch": {"command": ["pkill", "no-such-process-xyz"]}}],
    )  # exits 1, as pkill does
    with LocalEnvironment(1000, 1000) as env:
        started = time.monotonic()
        env.reset(task, tmp_path / "ep")
        assert time.monotonic() - started < 15  # not two 20 s window waits
        assert (env.home / "ran").exists()


def test_setup_python_is_python3_and_path_holds_only_what_the_account_reaches(tmp_path):
    task = make_task(
        tmp_path,
        [
            {
                "execute": {
                    "command": [
                        "python",
                        "-c",
                        "import os, sys; open(os.path.expanduser('~/py'), 'w').write(sys.version + '\\n' + os.environ['PATH'])",
                    ]
                }
            }
        ],
    )
    with LocalEnvironment(1000, 1000) as env:
        env.reset(task, tmp_path / "ep")
        version, path = (env.home / "py").read_text().split("\n")
    assert version.startswith("3.")
    assert "/root" not in path


# forks, leaves the session, forks again and becomes `sleep` with an empty environment (as
# Chromium's rewritten environ block hides the desktop's marker); prints the survivor's pid
ESCAPE = (
    "python3 -c 'import os\nif os.fork(): os._exit(0)\nos.setsid()\npid = os.fork()\n"
    'if pid: os.write(1, str(pid).encode()); os._exit(0)\nnull = os.open("/dev/null", os.O_RDWR)\n'
    '[os.dup2(null, fd) for fd in (0, 1, 2)]\nos.execve("/bin/sleep", ["sleep", "600"], {})\''
)


@pytest.mark.parametrize("network", ["host", "isolated"])
def test_a_process_that_hides_its_marker_and_double_forks_is_gone_after_teardown(tmp_path, network):
    with LocalEnvironment(400, 300, network=network) as env:
        if env.confinement.cgroup is None:
            pytest.skip("no cgroup v2 here: teardown relies on the environment marker alone")
        env.reset(make_task(tmp_path, [{"launch": {"command": ["xterm", "-T", "probe"], "window": "probe"}}]), tmp_path / "ep")
        escapee = psutil.Process(int(env.shell(ESCAPE).stdout.strip()))
        for _ in range(200):
            if escapee.name() == "sleep":
                break
            time.sleep(0.01)
        assert MARKER not in escapee.environ() and escapee.ppid() != env.launched[0].proc.pid
        env.end_episode()
        assert not escapee.is_running() or escapee.status() == psutil.STATUS_ZOMBIE
        assert desktop_processes(env) == []
        cgroup = env.confinement.cgroup.path
    assert not cgroup.exists()


def test_an_isolated_desktop_reaches_no_host_loopback_service_but_the_site_its_task_names(tmp_path):
    hidden, named = SecretServer(secret="s3cr3t-" + tmp_path.name), SecretServer(secret="s3cr3t-" + tmp_path.name)
    secret = hidden.secret
    fetch = "curl -s -m 3 http://127.0.0.1:{}/{} || echo FAILED"
    try:
        with LocalEnvironment(400, 300, network="isolated") as env:
            if env.netns is None:
                pytest.skip("no network namespace here (not root, or no iproute2)")
            assert env.network_effective in ("isolated", "isolated_offline")
            named_url = f"http://127.0.0.1:{named.port}/page"
            env.reset(
                make_task(
                    tmp_path,
                    [
                        {"execute": {"command": ["true", named_url]}},
                        {"launch": {"command": ["xterm", "-T", "probe"], "window": "probe"}},
                    ],
                ),
                tmp_path / "ep",
            )
            assert env.windows.find("probe")  # X reaches the desktop's clients from inside
            answer = env.shell(fetch.format(hidden.port, "hidden")).stdout
            assert "FAILED" in answer and secret not in answer and hidden.hits == []
            assert env.shell(fetch.format(named.port, "named")).stdout == secret  # the task's own site
            assert "/named" in named.hits
            # an MCP server started through the desktop's wrapper: its account, its cgroup, its network
            where = subprocess.run(
                env.confined(["sh", "-c", "id -u; grep ^0:: /proc/self/cgroup; readlink /proc/self/ns/net"]),
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout.split()
            assert env.user is not None and where[0] == str(env.user.uid)  # a namespace needs root: an account
            assert env.confinement.cgroup is None or where[1].endswith(env.confinement.cgroup.path.name)
            assert where[-1] == f"net:[{os.stat(env.netns.path).st_ino}]" != os.readlink("/proc/self/ns/net")
            log = json.loads((tmp_path / "ep" / "logs" / "desktop.json").read_text())
            assert log["network"] == env.network_effective
            env.end_episode()
    finally:
        hidden.close()
        named.close()


def test_a_stopped_desktop_leaves_the_socket_of_the_server_that_took_its_number(tmp_path):
    """-displayfd servers write no lock file: the socket file of a live server (the only way in for
    clients in a network namespace) must survive another desktop's clean-up of that number."""
    from mcpworld.env.local.display import X_SOCKET_DIR, VirtualDisplay, remove_stale_lock
    from mcpworld.env.local.processes import scrubbed_env

    live = VirtualDisplay(200, 200, window_manager="")
    live.start(scrubbed_env(tmp_path, tmp_path))
    try:
        assert live.number is not None
        remove_stale_lock(live.number)  # what a desktop that just had this number does at stop
        assert (X_SOCKET_DIR / f"X{live.number}").exists()
        number = live.number
    finally:
        live.stop()
    assert not (X_SOCKET_DIR / f"X{number}").exists()  # its own stop removes it
