"""Desktop applications as the suites name them, started with each desktop's own settings.

Task files launch ``google-chrome``, ``libreoffice --calc``, ``vlc`` or ``code`` — the commands of
the machines their authors used. Each desktop gets a folder of small shell scripts (the *shims*),
first on its PATH, that start the real program under that name with this desktop's settings: its
own remote-debugging or HTTP-interface port, its profile folder, flags that keep first-run and
recovery dialogs away. Nothing on the system changes, and concurrent desktops never share a port.
A program this machine lacks gets a shim that prints the command that installs it.
"""

from __future__ import annotations

import re
import secrets
import shlex
import shutil
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcpworld.core.steps import normalize_step
from mcpworld.core.task import Task


@dataclass(frozen=True)
class Program:
    """One application's start-up, from its ``mcpworld/conf/app/<name>.yaml`` (``program:`` section)."""

    app: str  # the app config's name
    binary: str  # the real executable (a name on PATH or an absolute path)
    names: tuple[str, ...]  # the commands tasks use for it: google-chrome, chrome, chromium …
    args: tuple[str, ...] = ()  # put before the caller's arguments; {home} {port_<name>} {password}
    drop: tuple[str, ...] = ()  # caller arguments starting with these are replaced by ours
    ports: tuple[str, ...] = ()  # per-desktop ports the args use, e.g. cdp → {port_cdp}
    # of those, the ones it serves on a unix socket, $XDG_RUNTIME_DIR/<name>.sock (0600, the desktop
    # account's), not on TCP: the desktop relays the port to it for the harness and the app's own
    # window, letting no one else in (code-server, whose terminal is a shell; docs/isolation.md)
    sockets: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # set for the program (same placeholders)
    profile: Path | None = None  # golden settings folder laid into every home (first-run dialogs off)
    install: str = ""  # the shell command that installs it
    ready: dict[str, Any] = field(default_factory=dict)  # {http: url} checked after its window answers
    packages: dict[str, list[str]] = field(default_factory=dict)  # {apt: [...], npm: [...]}
    launcher: str = ""  # a script the shim runs instead of the binary (given it as $MCPWORLD_PROGRAM)
    warm: tuple[str, ...] = ()  # home paths it writes at first start that make later starts fast
    window: str = ""  # its main window's title (regex), waited for when a launch names no window
    maximized: bool = False  # maximize its window once ready (GIMP restores a window larger than small screens)

    def installed(self) -> bool:
        return shutil.which(self.binary) is not None

    def missing_reason(self) -> str | None:
        if self.installed():
            return None
        return f"{self.app} needs '{self.binary}', which is not installed: run `{self.install}`"


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now (the program binds it moments later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def desktop_values(programs: list[Program], home: Path) -> dict[str, Any]:
    """What this desktop's shims fill in: its home, one port per named port, a password."""
    values: dict[str, Any] = {"home": str(home), "password": secrets.token_hex(8)}
    for program in programs:
        for port in program.ports:
            values.setdefault(f"port_{port}", free_port())
    return values


def write_shims(programs: list[Program], bin_dir: Path, values: dict[str, Any]) -> None:
    """One executable script per command name in ``bin_dir`` (made afresh)."""
    shutil.rmtree(bin_dir, ignore_errors=True)
    bin_dir.mkdir(parents=True, mode=0o755)
    for program in programs:
        script = _shim(program, values)
        for name in program.names:
            path = bin_dir / name
            path.write_text(script.replace("{name}", name))
            path.chmod(0o755)
    # Suites' steps run `python -c …` as on their Ubuntu images, where python is python3; Debian has
    # no `python` unless python-is-python3 is installed
    python3 = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if python3 and not (bin_dir / "python").exists() and not shutil.which("python", path="/usr/local/bin:/usr/bin:/bin"):
        (bin_dir / "python").symlink_to(python3)


def _shim(program: Program, values: dict[str, Any]) -> str:
    head = "#!/bin/bash\n# {name} on this desktop (written by mcpworld for one desktop; see env/programs.py)\n"
    real = shutil.which(program.binary)
    if real is None:
        return head + f"echo {shlex.quote(f'{{name}}: {program.missing_reason()}')} >&2\nexit 127\n"
    lines = [head]
    if program.launcher:  # a script that starts it (VS Code: a server, then a window onto it)
        lines.append(f"export MCPWORLD_PROGRAM={shlex.quote(real)}\n")
        real = program.launcher
    for key, value in program.env.items():
        lines.append(f"export {key}={shlex.quote(value.format(**values))}\n")
    ours = " ".join(shlex.quote(a.format(**values)) for a in program.args)
    if program.drop:
        cases = "|".join(f"{shlex.quote(d)}*" for d in program.drop)
        lines.append(f'args=()\nfor a in "$@"; do\n  case "$a" in {cases}) ;; *) args+=("$a") ;; esac\ndone\n')
        lines.append(f'exec {shlex.quote(real)} {ours} "${{args[@]}}"\n')
    else:
        lines.append(f'exec {shlex.quote(real)} {ours} "$@"\n')
    return "".join(lines)


def command_name(shell_command: str) -> str:
    """The program a shell command line starts: its first word after ``NAME=value`` assignments
    (OSWorld's ``VLC_VERBOSE=-1 vlc --no-audio`` starts vlc)."""
    try:
        words = shlex.split(shell_command)
    except ValueError:
        words = shell_command.split()
    for word in words:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            return word
    return shell_command


FORWARDER = re.compile(r"^tcp(4)?-listen:\d+", re.I)


def is_port_forwarder(argv: list[str]) -> bool:
    """OSWorld's ``socat tcp-listen:9222,fork tcp:localhost:1337``: it exposes Chromium's DevTools
    port to the VM's host. A desktop here serves each control port on 127.0.0.1 already (and the
    getters know it), so the forwarder is not needed and would bind a fixed port on every interface."""
    return Path(argv[0]).name == "socat" and any(FORWARDER.match(a) for a in argv[1:])


def program_for(programs: Sequence[Program], command: str) -> Program | None:
    """The program a launch command starts (by the command's name), if it is one of ours."""
    name = Path(command).name
    for program in programs:
        if name in program.names:
            return program
    return None


def programs_started_by(task: Task, programs: Sequence[Program]) -> list[Program]:
    """The programs a task starts: its app's, and those its launch steps name (what a run must have
    installed, and what an env=docker image must hold for it)."""
    needed = [p for p in programs if p.app == task.app]
    for step in task.setup:
        kind, params = normalize_step(step)
        command = params.get("command") if kind == "launch" else None
        if command:
            argv = shlex.split(command) if isinstance(command, str) else [str(c) for c in command]
            needed += [p for p in [program_for(programs, argv[0])] if p]
    return list({p.app: p for p in needed}.values())


def wait_http(url: str, deadline: float) -> bool:
    """True once ``url`` answers any HTTP status before ``deadline`` (time.monotonic)."""
    import httpx

    while True:
        try:
            httpx.get(url, timeout=1.0)
            return True
        except httpx.HTTPError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
