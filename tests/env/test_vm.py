"""``env=vm`` without a VM or a display: what is sent to a suite's VM server and how its replies are
read, against an in-process stand-in (httpx.MockTransport) that answers with the status codes and
bodies recorded from OSWorld's own server (tests/data/vm/osworld_server_replies.json); the pool of
VMs and its checks. The same paths run against a real desktop in tests/desktop/test_vm_env.py."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest

from mcpworld.config.schema import EnvConfig, SettleConfig, VmConfig
from mcpworld.core.errors import InfraError, UserError
from mcpworld.env import DesktopSettings, make_environments
from mcpworld.env.vm.actions import PREFIX, TYPE_X11, WRITABLE, type_code
from mcpworld.env.vm.environment import VmEnvironment, check_vm_pool, vm_slots
from mcpworld.evaluation.registry import get_getter

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "tests" / "data" / "vm" / "osworld_server_replies.json").read_text())

Handler = Callable[[httpx.Request], httpx.Response]


def recorded(name: str, body: Any = None, content: bytes = b"") -> httpx.Response:
    """A reply with the status code and content type OSWorld's server gave for ``name``."""
    shape = RECORDED[name]
    if shape["type"] == "application/json":
        return httpx.Response(shape["status"], json=body)
    return httpx.Response(shape["status"], content=content, headers={"content-type": shape["type"]})


class StandIn:
    """OSWorld's server in-process: /execute runs nothing but records what it was sent."""

    def __init__(self, screen: tuple[int, int] = (1280, 800)):
        self.screen = screen
        self.sent: list[dict[str, Any]] = []
        self.terminals: list[str | None] = []
        self.execute_reply: Callable[[dict[str, Any]], httpx.Response] = lambda body: recorded(
            "execute ok", {"status": "success", "output": "", "error": "", "returncode": 0}
        )
        self.routes: dict[str, Handler] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path in self.routes:
            return self.routes[path](request)
        if path == "/screenshot":
            return recorded("screenshot", content=b"\x89PNG\r\n\x1a\n")
        if path == "/screen_size":
            return recorded("screen_size", {"width": self.screen[0], "height": self.screen[1]})
        if path in ("/execute", "/setup/execute"):
            body = json.loads(request.content)
            self.sent.append(body)
            return self.execute_reply(body)
        if path == "/terminal":
            output = self.terminals.pop(0) if len(self.terminals) > 1 else (self.terminals or [None])[0]
            return recorded("terminal", {"output": output, "status": "success"})
        return httpx.Response(404, text="not found")


@pytest.fixture
def vm(tmp_path):
    stand_in = StandIn()
    env = VmEnvironment(1280, 800, url="http://vm.invalid:5000")  # (no answer: no screen check at start)
    env.server.http = httpx.Client(base_url=env.server.url, transport=httpx.MockTransport(stand_in))
    yield env, stand_in
    env.close()


# --- typing -----------------------------------------------------------------------------------------


def test_ascii_text_is_typed_as_the_suites_harnesses_type_it():
    assert type_code("Hello, World!\n\tok") == "pyautogui.write('Hello, World!\\n\\tok')"


def test_text_pyautogui_would_drop_goes_through_the_vms_keymap_whole():
    code = type_code("café Ünïcode 日本 ok")
    runs = eval(code.split("\n", 1)[0].removeprefix("RUNS = "))  # the runs the VM's script types
    assert runs == [
        (True, "caf"),
        (False, "é"),
        (True, " "),
        (False, "Ü"),
        (True, "n"),
        (False, "ï"),
        (True, "code "),
        (False, "日本"),
        (True, " ok"),
    ]
    assert "".join(text for _, text in runs) == "café Ünïcode 日本 ok"
    assert code.endswith(TYPE_X11)
    compile(PREFIX + code, "<vm>", "exec")  # one program for the VM's python -c


def test_a_windows_vm_pastes_such_text_through_its_clipboard():
    code = type_code("café Ü", "waa")
    assert code == "import pyperclip; pyperclip.copy('café Ü'); pyautogui.hotkey('ctrl', 'v')"


def test_a_character_no_key_gives_is_refused_not_lost():
    with pytest.raises(UserError, match="U\\+0007"):
        type_code("bell\x07")
    assert "\x07" not in WRITABLE


def test_a_type_the_vm_could_not_do_fails_the_action_with_the_vms_reason(vm):
    env, stand_in = vm
    stand_in.execute_reply = lambda body: recorded(
        "execute ok",
        {
            "status": "success",
            "output": "",
            "returncode": 1,
            "error": "SystemExit: cannot type 'é': the keymap has no keycode free to lend it",
        },
    )
    with pytest.raises(InfraError, match=r"could not perform type: .*no keycode free to lend"):
        env.act({"kind": "type", "text": "é"})
    command = stand_in.sent[-1]["command"]
    assert command[:2] == ["python3", "-c"] and command[2].startswith(PREFIX) and "_MCPWORLD_LENT_KEYCODES" in command[2]


# --- what OSWorld's getters ask the VM server ----------------------------------------------------------


def test_the_terminal_getter_asks_the_vms_own_terminal_until_it_holds_still(vm, monkeypatch):
    env, stand_in = vm
    monkeypatch.setattr("mcpworld.env.vm.environment.TERMINAL_SETTLE_S", 0.01)
    stand_in.terminals = [
        "user@vm:~$ stty size",
        "user@vm:~$ stty size\n43 132\nuser@vm:~$",
        "user@vm:~$ stty size\n43 132\nuser@vm:~$",
    ]
    assert get_getter("vm_terminal_output")(env, {"type": "vm_terminal_output"}) == "user@vm:~$ stty size\n43 132\nuser@vm:~$"


def test_no_active_terminal_is_none_and_a_server_that_cannot_read_one_is_the_environments_failure(vm):
    env, stand_in = vm
    assert get_getter("vm_terminal_output")(env, {"type": "vm_terminal_output"}) is None
    stand_in.routes["/terminal"] = lambda r: httpx.Response(500, text="Currently not implemented for platform Windows.")
    with pytest.raises(InfraError, match="refused /terminal: 500 Currently not implemented"):
        get_getter("vm_terminal_output")(env, {"type": "vm_terminal_output"})


def test_window_size_and_wallpaper_come_from_the_vms_server(vm):
    env, stand_in = vm
    seen: list[str] = []

    def window_size(request: httpx.Request) -> httpx.Response:
        seen.append(request.content.decode())
        if b"mousepad" in request.content:
            return recorded("screen_size", {"width": 640, "height": 480})
        return recorded("window_size missing", content=b"Internal Server Error")

    stand_in.routes["/window_size"] = window_size
    getter = get_getter("vm_window_size")
    assert getter(env, {"type": "vm_window_size", "app_class_name": "mousepad"}) == {"width": 640, "height": 480}
    assert getter(env, {"type": "vm_window_size", "app_class_name": "gimp"}) is None
    assert seen[0] == "app_class_name=mousepad"  # a form, as OSWorld's controller posts it

    stand_in.routes["/wallpaper"] = lambda r: recorded("wallpaper", content=b"\x89PNG\r\n\x1a\nwallpaper")
    path = get_getter("vm_wallpaper")(env, {"type": "vm_wallpaper", "dest": "bg.png"})
    assert Path(path).read_bytes() == b"\x89PNG\r\n\x1a\nwallpaper" and Path(path).parent == env.cache_dir
    stand_in.routes["/wallpaper"] = lambda r: recorded("wallpaper missing", content=b"Unable to serve")
    assert get_getter("vm_wallpaper")(env, {"type": "vm_wallpaper", "dest": "bg.png"}) is None
    assert not Path(path).exists()  # never an older copy


def test_the_clipboard_is_read_on_the_vm_not_on_this_hosts_display(vm):
    env, stand_in = vm
    from mcpworld.env.vm.environment import CLIPBOARD_MARK

    stand_in.execute_reply = lambda body: recorded(
        "execute ok",
        {
            "status": "success",
            "returncode": 0,
            "error": "",
            "output": "Xlib.xauth: warning\n" + CLIPBOARD_MARK + json.dumps("café Ü 日本"),
        },
    )
    assert get_getter("vm_clipboard")(env, {"type": "vm_clipboard"}) == "café Ü 日本"
    assert stand_in.sent[-1]["command"][2].startswith("WHICH = 'CLIPBOARD'\n")
    compile(stand_in.sent[-1]["command"][2], "<vm>", "exec")  # one program for the VM's python -c


def test_paths_are_tested_on_the_vm(vm):
    """Getters that ask whether a path exists (WAA's, Chromium's profile, GIMP's config) ask the VM."""
    env, stand_in = vm
    kinds = {"/home/user/Desktop/a.txt": "file 5", "/home/user/Archive": "dir 7"}
    stand_in.execute_reply = lambda body: recorded(
        "execute ok",
        {"status": "success", "returncode": 0, "error": "", "output": kinds.get(body["command"][-1], "none 0") + "\n"},
    )
    assert env.stat("~/Desktop/a.txt").kind == "file" and env.stat("~/Archive").kind == "dir"
    assert env.stat("/home/user/nothing") is None
    assert get_getter("vm_file_exists_in_desktop")(env, {"type": "vm_file_exists_in_desktop", "file_name": "a.txt"})
    assert get_getter("vm_folder_exists_in_documents")(env, {"type": "x", "folder_name": "b"}) is False


def test_the_stat_script_tells_each_kind(tmp_path):
    from mcpworld.env.vm.environment import STAT_CODE

    (tmp_path / "f").write_text("x")
    (tmp_path / "d").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    kinds = {
        name: subprocess.run(
            [sys.executable, "-c", STAT_CODE, str(tmp_path / name)], capture_output=True, text=True
        ).stdout.split()[0]
        for name in ("f", "d", "dangling", "missing")
    }
    assert kinds == {"f": "file", "d": "dir", "dangling": "other", "missing": "none"}


# --- a pool of VMs --------------------------------------------------------------------------------------


def vm_config(**keys: Any) -> SimpleNamespace:
    return SimpleNamespace(**{"url": None, "urls": None, "reset_command": None, "reset_commands": None} | keys)


def test_each_vm_of_the_pool_gets_its_own_reset():
    urls = ["http://10.0.0.1:5000", "http://10.0.0.2:5000"]
    by_url = vm_slots(vm_config(urls=urls, reset_command="vmrun revert --vm {url}"))
    assert [(s.url, s.reset_command) for s in by_url] == [(u, f"vmrun revert --vm {u}") for u in urls]
    listed = vm_slots(vm_config(urls=urls, reset_commands=["docker restart a", "docker restart b"]))
    assert [s.reset_command for s in listed] == ["docker restart a", "docker restart b"]
    odd = vm_slots(vm_config(urls=["http://h:5000/x?a=1&b=2"], reset_command="reset {url}"))
    assert shlex.split(odd[0].reset_command) == ["reset", "http://h:5000/x?a=1&b=2"]  # quoted for the shell
    assert vm_slots(vm_config(url="http://vm:5000"))[0].reset_command is None


@pytest.mark.parametrize(
    "keys, message",
    [
        ({}, "env=vm needs the VM server's address"),
        ({"url": "http://a:5000", "urls": ["http://b:5000"]}, "env.vm.url and env.vm.urls both name VMs"),
        ({"urls": ["http://a:5000", "http://a:5000/"]}, "names a VM twice"),
        ({"urls": ["10.0.0.1:5000"]}, "not a VM server's URL: write it as http://HOST:PORT"),
        (
            {"urls": ["http://a:5000", "http://b:5000"], "reset_commands": ["r1"]},
            "env.vm.reset_commands has 1 command\\(s\\) for 2 VM\\(s\\)",
        ),
        (
            {"urls": ["http://a:5000", "http://b:5000"], "reset_command": "docker restart osworld"},
            "env.vm.reset_command has no \\{url\\}: with 2 VMs",
        ),
        ({"url": "http://a:5000", "reset_command": "r", "reset_commands": ["r"]}, "are both set"),
    ],
)
def test_a_pool_that_does_not_add_up_is_one_error_naming_the_key(keys, message):
    with pytest.raises(UserError, match=message):
        vm_slots(vm_config(**keys))


def test_more_concurrent_episodes_than_vms_is_refused_naming_both_counts():
    with pytest.raises(UserError, match="concurrency=2 but env=vm has 1 VM\\(s\\)"):
        check_vm_pool(vm_config(url="http://a:5000", reset_command="docker restart osworld"), 2)
    assert len(check_vm_pool(vm_config(urls=["http://a:5000", "http://b:5000"]), 2)) == 2


def test_the_run_gives_each_desktop_its_own_vm(monkeypatch):
    made: list[tuple[str, str | None]] = []

    class Recorded:
        def __init__(self, width, height, *, url, reset_command, **_):
            made.append((url, reset_command))

        def close(self):
            pass

    monkeypatch.setattr("mcpworld.env.vm.environment.VmEnvironment", Recorded)
    vm = VmConfig(urls=["http://a:5000", "http://b:5000", "http://c:5000"], reset_command="reset {url}")
    settings = DesktopSettings(env=EnvConfig(backend="vm", vm=vm), width=1280, height=800, settle=SettleConfig())
    make_environments(settings, [], 2)
    assert sorted(made) == [("http://a:5000", "reset http://a:5000"), ("http://b:5000", "reset http://b:5000")]
    with pytest.raises(UserError, match="desktop 4 of the run has no VM: env=vm has 3 VM"):
        from mcpworld.env import make_environment

        make_environment(replace(settings, slot=3))


def test_the_cli_refuses_more_concurrency_than_vms_before_any_episode(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcpworld",
            "env=vm",
            "env.vm.url=http://127.0.0.1:9",
            "concurrency=2",
            "tracking=none",
            "provider=oracle",
            "task=[mousepad/append_line]",
            f"hydra.run.dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if "concurrency=2 but env=vm has 1 VM(s)" in line]
    assert len(errors) == 1, proc.stderr[-2000:]
    assert not (tmp_path / "episodes").exists()


def test_close_window_with_wait_waits_for_the_window_to_leave_the_vms_list(vm):
    """The VM's server shows no window's process: `wait: true` waits for wmctrl to stop listing it."""
    env, stand_in = vm
    stand_in.routes["/setup/close_window"] = lambda r: recorded("close_window", content=b"Window closed successfully")
    listings = ["0x01 0 vm Team Wiki - Chromium\n", "0x01 0 vm Team Wiki - Chromium\n", "0x02 0 vm Terminal\n"]
    stand_in.execute_reply = lambda body: recorded(
        "execute ok",
        {"status": "success", "output": listings.pop(0) if len(listings) > 1 else listings[0], "error": "", "returncode": 0},
    )
    env.run_steps([{"close_window": {"window_name": "Chromium", "wait": True, "timeout": 30}}])
    assert listings == ["0x02 0 vm Terminal\n"] and stand_in.sent[-1]["command"] == ["wmctrl", "-l"]
    listings[:] = ["0x01 0 vm Team Wiki - Chromium\n"]
    with pytest.raises(InfraError, match="'Chromium' was still open on the VM 0s after it was asked to close"):
        env.run_steps([{"close_window": {"window_name": "Chromium", "wait": True, "timeout": 0}}])
