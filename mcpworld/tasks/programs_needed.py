"""The programs a task's own commands run besides its app — its setup and postconfig commands and
its evaluator's command getters (OSWorld's ``vm_command_line``: ``pactl list sinks``, ``wmctrl -lx``)
— and the first one this machine lacks, with the Debian package that has it.

A grader whose program is missing reads nothing, and the task would score 0 whatever the agent
did; a setup command whose program is missing fails the episode before the agent starts. Either way
the task is skipped before the run, naming the program and its install command, as a missing app is.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mcpworld.apps.programs import Program, is_port_forwarder, program_for
from mcpworld.core.pyautogui_script import script_of
from mcpworld.core.shell_words import programs
from mcpworld.core.steps import as_bool, command_text, fill_screen, normalize_step
from mcpworld.core.sudo import sudo_items, without_satisfied
from mcpworld.core.task import Task

# the Debian package of each program the suites' commands run that a desktop may lack
PACKAGES = {
    "pactl": "pulseaudio-utils",
    "pacmd": "pulseaudio-utils",
    "paplay": "pulseaudio-utils",
    "pulseaudio": "pulseaudio",
    "wmctrl": "wmctrl",
    "sar": "sysstat",
    "iostat": "sysstat",
    "mpstat": "sysstat",
    "expect": "expect",
    "jq": "jq",
    "unzip": "unzip",
    "zip": "zip",
    "xsel": "xsel",
    "xclip": "xclip",
    "xdotool": "xdotool",
    "xprop": "x11-utils",
    "xwininfo": "x11-utils",
    "gsettings": "libglib2.0-bin",
    "dconf": "dconf-cli",
    "git": "git",
    "sqlite3": "sqlite3",
    "convert": "imagemagick",
    "identify": "imagemagick",
    "ffmpeg": "ffmpeg",
    "ffprobe": "ffmpeg",
    "bc": "bc",
    "curl": "curl",
    "wget": "wget",
    "file": "file",
    "pdftotext": "poppler-utils",
    "pdfinfo": "poppler-utils",
    "tree": "tree",
    "ssh": "openssh-client",
    "sshpass": "sshpass",
    "xdg-open": "xdg-utils",
    "exiftool": "libimage-exiftool-perl",
    "rsync": "rsync",
    "python3": "python3",
    "node": "nodejs",
    "npm": "npm",
    "java": "default-jre",
    "tesseract": "tesseract-ocr",
    "ps": "procps",
    "pkill": "procps",
    "pgrep": "procps",
    "killall": "psmisc",
    "lsof": "lsof",
    "netstat": "net-tools",
    "nmcli": "network-manager",
    "xrandr": "x11-xserver-utils",
    "xset": "x11-xserver-utils",
    "flatpak": "flatpak",
    "snap": "snapd",
    "gedit": "gedit",
    "nautilus": "nautilus",
    "gnome-terminal": "gnome-terminal",
    "update-desktop-database": "desktop-file-utils",
    "gio": "libglib2.0-bin",
}
# where OSWorld's VMs keep what a task's own steps put there (a script it downloaded): not a program to install
TASK_MADE = ("/home/user/", "/root/", "~/", "/tmp/")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def task_commands(task: Task) -> Iterator[tuple[str, Any, bool]]:
    """(where, command, shell) of each command the task runs outside the agent's hands."""
    for part, steps in (("setup", task.setup), ("postconfig", task.evaluator.postconfig if task.evaluator else [])):
        for step in steps:
            kind, params = normalize_step(step)
            command = params.get("command")
            if kind not in ("execute", "command", "launch") or not command or script_of(fill_screen(command, 1, 1)):
                continue
            if kind == "launch" and is_port_forwarder(command_text(command).split()):
                continue  # OSWorld's socat for Chromium's port: a desktop here serves it itself
            yield part, command, as_bool(params.get("shell", False))
    for getter in task.evaluator.getters() if task.evaluator else []:
        if getter.get("command"):
            command = getter["command"]  # the command getters run a string through bash, a list as argv
            yield f"grader ({getter.get('type', 'getter')})", command, isinstance(command, str)


def needed_commands(task: Task) -> list[tuple[str, str]]:
    """(where, program) of every program those commands start; sudo items are left to the sudo
    check (core/sudo.py), the pyautogui one-liners are replayed as input."""
    found = []
    for where, command, shell in task_commands(task):
        text = fill_screen(command_text(command), 1, 1)
        if sudo_items(text):  # what is left once every sudo item is set aside
            command, shell = without_satisfied(text, lambda _: True), True
        found += [(where, name) for name in programs(command, shell)]
    return found


def desktop_path() -> str:
    """The PATH a desktop's commands search (this process's folders any account can enter, then the
    system's), as env/local/processes.py gives it."""
    usable = [p for p in os.environ.get("PATH", "").split(":") if _open_to_all(p)]
    return ":".join(dict.fromkeys(usable + SYSTEM_PATH.split(":")))


def _open_to_all(folder: str) -> bool:
    path = Path(folder)
    try:
        return path.is_absolute() and path.is_dir() and all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])
    except OSError:
        return False


def why_missing(name: str, catalog: Sequence[Program], search: str) -> str | None:
    """Why the program ``name`` cannot run on a desktop here (with the fix), or None when it can."""
    if name.startswith(TASK_MADE) or ("/" in name and not name.startswith("/")):
        return None  # a file the task itself puts there
    program = program_for(catalog, name)
    if program is not None:  # a catalog app's command: its shim, when the app is installed
        why = program.missing_reason()
        return f"{name} ({why})" if why else None
    if name.startswith("/"):
        return None if Path(name).exists() else f"{name}, which is not on this machine"
    if name == "python" and shutil.which("python3", path=search):
        return None  # every desktop gives `python` as Debian's python3 (apps/programs.py)
    if shutil.which(name, path=search):
        return None
    package = PACKAGES.get(name)
    fix = f"`apt-get install -y {package}`" if package else f"install the package that has it (`apt-file search bin/{name}`)"
    return f"{name}, which is not installed here: {fix}"


def missing_command(task: Task, catalog: Sequence[Program], backend: str = "local") -> str | None:
    """Why the task's setup or grader commands cannot run here (the program and its install), or
    None. Checked for env=local, whose desktop is this machine (an image or VM has its own programs)."""
    if backend != "local":
        return None
    search = desktop_path()
    for where, name in needed_commands(task):
        why = why_missing(name, catalog, search)
        if why:
            return f"its {where} command runs {why}; without it the task cannot be set up or judged"
    return None
