"""The rules behind OSWorld's machine conventions, without a desktop: window names as wmctrl finds
them (Chrome's names for Chromium's windows), the openbox configuration with GNOME's terminal key,
and the chrome:// pages a browser command line asks for. tests/desktop/test_osworld_conventions.py
runs them on real desktops."""

from __future__ import annotations

import os
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from mcpworld.apps.catalog import programs
from mcpworld.apps.programs import desktop_values, program_for, write_shims
from mcpworld.env.chrome_steps import command_line_pages
from mcpworld.env.local.display import TERMINAL_KEY, openbox_config
from mcpworld.env.local.windows import name_matches

CHROMIUM = ("New Tab - Chromium", "chromium (/home/x/.config/google-chrome).Chromium")


@pytest.mark.parametrize(
    "name, strict, by_class, found",
    [
        ("Google Chrome", False, False, True),  # OSWorld's 28 chrome setups
        ("google chrome", False, False, True),  # wmctrl -a ignores case
        ("New Tab - Google Chrome", True, False, True),  # -F: the whole title, Chrome's name swapped
        ("new tab - google chrome", True, False, False),  # -F compares case
        ("New Tab", True, False, False),
        ("Google-chrome", False, True, True),  # -x: the class
        ("Chromium", False, True, True),
        ("New Tab", False, True, False),  # a title is no class
        ("Mozilla Firefox", False, False, False),
    ],
)
def test_chrome_window_names_find_chromiums_window_as_wmctrl_would(name, strict, by_class, found):
    assert name_matches(name, *CHROMIUM, strict=strict, by_class=by_class) is found


def test_strict_names_compare_the_whole_title_or_class():
    assert name_matches("Mail.thunderbird", "Inbox", "Mail.thunderbird", strict=True, by_class=True)
    assert not name_matches("Mail", "Inbox", "Mail.thunderbird", strict=True, by_class=True)
    assert name_matches("notes.txt (~/Desktop) - gedit", "notes.txt (~/Desktop) - gedit", "gedit.Gedit", strict=True)
    assert name_matches("(~/Desktop)", "notes.txt (~/Desktop) - gedit", "gedit.Gedit")  # a name, not a regex


def test_openbox_keeps_the_systems_keys_and_binds_ctrl_alt_t_to_the_terminal(tmp_path):
    system = tmp_path / "rc.xml"
    system.write_text(
        '<?xml version="1.0"?><openbox_config xmlns="http://openbox.org/3.4/rc"><keyboard>'
        '<keybind key="A-F4"><action name="Close"/></keybind></keyboard></openbox_config>'
    )
    for config in (openbox_config(system), openbox_config(tmp_path / "absent.xml")):
        root = ET.fromstring(config)
        ns = {"o": "http://openbox.org/3.4/rc"}
        binds = {b.get("key"): b for b in root.findall("o:keyboard/o:keybind", ns)}
        command = binds[TERMINAL_KEY].find("o:action/o:command", ns)
        assert command is not None and "xterm -T Terminal" in (command.text or "")
    assert "A-F4" in {b.get("key") for b in ET.fromstring(openbox_config(system)).iter("{http://openbox.org/3.4/rc}keybind")}


def test_command_line_pages_are_the_chrome_urls_among_the_arguments():
    argv = [
        "google-chrome",
        "--remote-debugging-port=1337",
        "chrome://settings/appearance",
        "https://a.test/",
        "--new-window",
        "CHROME://history",
    ]
    assert command_line_pages(argv) == ["chrome://settings/appearance", "CHROME://history"]
    assert command_line_pages(["google-chrome", "--remote-debugging-port=1337"]) == []


def test_chromes_command_names_run_the_browser_under_a_process_named_chrome(tmp_path):
    """Every browser name's shim runs scripts/chrome (the `chrome` process pkill finds), which starts
    the real browser as its child and passes a TERM on to it."""
    chromium = program_for(list(programs()), "google-chrome")
    assert chromium is not None and chromium.launcher.endswith("/chrome")
    fake = chromium.__class__(**{**chromium.__dict__, "binary": "sleep", "args": (), "drop": (), "ports": ()})
    write_shims([fake], tmp_path / "bin", desktop_values([fake], tmp_path))
    proc = subprocess.Popen([str(tmp_path / "bin" / "google-chrome"), "30"])
    try:
        deadline = time.monotonic() + 10
        children: list[str] = []
        while not children and time.monotonic() < deadline:  # until the launcher has started its child
            children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert children and Path(f"/proc/{proc.pid}/comm").read_text().strip() == "chrome"
        assert subprocess.run(["pkill", "-x", "-P", str(os.getpid()), "chrome"]).returncode == 0
        assert proc.wait(timeout=10) != 0
        assert not Path(f"/proc/{children[0]}").exists()  # the browser ended with it
    finally:
        proc.kill()
