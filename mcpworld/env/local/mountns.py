"""A mount namespace per local desktop (``env.files=hidden``): what the desktop's processes see.

Measured before: the desktop account (the agent's shell, the apps, the MCP servers) read a built-in
task's ``task.yaml`` (its evaluator's expected value and its oracle solution) from the package's
``data/tasks``, Toolathlon's ground truth, and ``outputs/`` with earlier episodes' results. So each
desktop gets a mount namespace of its own, set up once by root and entered by each of its processes
(``nsenter --mount``, beside ``--net``), in which:

- the root is a prepared one (``pivot_root``): a small tmpfs holding a recursive bind of each of the
  host's top-level folders (the programs, libraries, /proc, /dev …), so that mount points the host
  lacks (``/workspace``, ``/FreeCAD``) can be made without touching the host's own ``/``;
- ``hide``: folders covered by an empty tmpfs (root's, 0755): the checkout, the package's task data
  and oracle solutions, ``tasks.root``, ``tasks.solutions``, the run's outputs, ``/home`` (other
  users' homes), and, as fresh writable ones (1777), ``/tmp`` and the work base (``/dev/shm``), where
  the harness's temp files and the other desktops' work folders are;
- ``keep``: what the desktop needs from under those, bound back at its own path: its own work
  folder(s), the venv, ``.apps/``, ``.mcp-servers/``, the package's code, app profiles and scripts,
  X's socket folder ``/tmp/.X11-unix``, and the files a task's setup runs from its folder (a
  PC-Canary ``pre_process`` script): ``DesktopSettings.handed``;
- ``binds`` and ``links``: the paths the suites' instructions name, as views of the episode's home:
  ``/home/user`` and ``/home/agent`` are the home (bind mounts), ``/workspace`` and ``/FreeCAD`` links
  to ``/home/user/workspace`` and ``/home/user/FreeCAD`` (links, because the home's folders come and
  go with each task's restore while the home itself stays).

The operations are applied shallowest path first, so a ``keep`` under a ``hide`` (the venv in the
checkout) and a ``hide`` under a ``keep`` (the package's ``data/tasks`` under its code) both hold.
The harness's own processes (root) never enter it: they keep the host's view, and everything that
knows the answer (evaluators, getters, handlers, graders, the oracle's replay) runs there.

The namespace is pinned by a file in ``/run/mcpworld-mnt`` (a private, unbindable mount, so the
pins of other desktops are not in any namespace's copy of ``/run``), named by the owning process's
pid and start time as the network namespaces are, so a later run removes a killed one's (``sweep``).
"""

from __future__ import annotations

import fcntl
import logging
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from mcpworld.core.errors import InfraError, UserError
from mcpworld.env.local.owner import maker_alive

logger = logging.getLogger(__name__)

PIN_DIR = Path("/run/mcpworld-mnt")
PREFIX = "mcpworld-"
FILES = ("hidden", "open")  # env.files
X_SOCKETS = Path("/tmp/.X11-unix")
_sequence = iter(range(1, 1 << 62))
_lock = threading.Lock()


def refusal(problem: str) -> str:
    """The one line an ``env.files=hidden`` desktop fails with when it cannot be given its own view."""
    return (
        f"env.files=hidden: {problem}, so the desktop's processes (the agent's shell, its apps, MCP "
        "servers) would see the benchmark's task files, oracle solutions and earlier results "
        "(docs/isolation.md): run as root, or set env.files=open to run with them in reach"
    )


def problem() -> str | None:
    """Why no mount namespace can be made for a desktop here (None: it can)."""
    if os.geteuid() != 0:
        return "the harness is not root"
    missing = [tool for tool in ("unshare", "nsenter", "mount", "umount", "pivot_root") if not shutil.which(tool)]
    if missing:
        return f"{', '.join(missing)} (util-linux) is not installed"
    return None


def require() -> None:
    why = problem()
    if why:
        raise UserError(refusal(why))


@dataclass(frozen=True)
class FileView:
    """What a desktop's processes see besides the host's programs (see the module's docstring)."""

    hide: tuple[Path, ...] = ()
    fresh: tuple[Path, ...] = ()  # writable empty tmpfs (1777): /tmp, the work base
    keep: tuple[Path, ...] = ()
    binds: tuple[tuple[str, Path], ...] = ()  # (path inside, the host's folder shown there)
    links: tuple[tuple[str, str], ...] = field(default=())  # (path inside, what the link names)

    def operations(self) -> list[tuple[str, str, str]]:
        """(kind, path inside, source), shallowest path first (a kind's order breaks ties: hide
        before keep, so a kept folder shows through a hidden one of the same depth)."""
        order = {"fresh": 0, "hide": 1, "keep": 2, "bind": 3, "link": 4}
        ops: dict[str, tuple[str, str, str]] = {}
        for kind, paths in (("fresh", self.fresh), ("hide", self.hide)):
            for path in paths:
                real = _real(path)
                if os.path.isdir(real) or os.path.isfile(real):
                    ops.setdefault(real, (kind, real, ""))
        for path in self.keep:
            real = _real(path)
            if os.path.exists(real):
                ops[real] = ("keep", real, real)
        for inside, source in self.binds:
            ops[inside] = ("bind", inside, str(source))
        for inside, text in self.links:
            ops[inside] = ("link", inside, text)
        return sorted(ops.values(), key=lambda op: (op[1].rstrip("/").count("/"), order[op[0]], op[1]))


def _real(path: Path | str) -> str:
    return os.path.realpath(os.fspath(path))


def setup_script(view: FileView, root: str, top: Iterable[str]) -> str:
    """The shell script that builds the prepared root at ``root`` and pivots into it (run by root in
    the new namespace); ``top``: the host's top-level entries."""
    q = shlex.quote
    ops = view.operations()
    replaced = {op[1].strip("/") for op in ops if op[0] in ("bind", "link") and op[1].count("/") == 1}
    lines = ["set -e", f"R={q(root)}", 'mount -t tmpfs -o mode=0755,size=1m mcpworld-root "$R"']
    for name in sorted(top):
        if name in replaced or name in (".", ".."):
            continue
        e = "/" + name
        if os.path.islink(e):
            lines.append(f'ln -s {q(os.readlink(e))} "$R"/{q(name)}')
        elif os.path.isdir(e):
            lines.append(f'mkdir "$R"/{q(name)} && mount --rbind {q(e)} "$R"/{q(name)}')
        elif os.path.isfile(e):
            lines.append(f'touch "$R"/{q(name)} && mount --bind {q(e)} "$R"/{q(name)}')
    for kind, inside, source in ops:
        target = f'"$R"{q(inside)}'
        if kind in ("hide", "fresh"):  # (not there at all: under a folder hidden already)
            if os.path.isdir(inside):
                mode = "1777" if kind == "fresh" else "0755"
                size = "50%" if kind == "fresh" else "64k"
                lines.append(
                    f"if [ -d {target} ]; then mount -t tmpfs -o mode={mode},size={size},nosuid,nodev "
                    f"mcpworld-hidden {target}; fi"
                )
            else:  # a file: an empty one in its place
                lines.append(f"if [ -f {target} ]; then mount --bind /dev/null {target}; fi")
        elif kind in ("keep", "bind"):
            if os.path.isdir(source):
                lines.append(f"mkdir -p {target} && mount --rbind {q(source)} {target}")
            else:
                lines.append(f'mkdir -p "$(dirname {target})" && touch {target} && mount --bind {q(source)} {target}')
        else:
            lines.append(f'mkdir -p "$(dirname {target})" && ln -sfn {q(source)} {target}')
    lines += [
        'cd "$R"',
        "mkdir .old",
        "pivot_root . .old",
        "umount -l /.old",
        "rmdir /.old",
        "mount -o remount,ro,bind /",
    ]  # nothing new at the top (root's tmpfs; the account cannot anyway)
    return "\n".join(lines) + "\n"


def desktop_view(home: Path, own: Sequence[Path], hidden: Sequence[Path] = (), handed: Sequence[Path] = ()) -> FileView:
    """The view of a desktop whose home is ``home`` and whose work folders are ``own``: the
    benchmark's files hidden (the built-in ones, and ``hidden``: the run's task roots, solutions
    and outputs), what its programs need kept, and the suites' home paths (see the module's docstring).
    ``handed``: files a task's setup runs from its task folder, kept."""
    from mcpworld.core import paths
    from mcpworld.env.local import leftovers

    hide = [
        paths.BUILTIN_TASKS,
        paths.DATA / "solutions",
        Path("/home"),
        PIN_DIR,
        Path.cwd() / "outputs",
        Path.cwd() / "multirun",
        *hidden,
    ]
    if not paths.INSTALLED:  # the checkout: its tests, outputs, leases … (its code and venv are kept below)
        hide.append(paths.PROJECT)
    fresh = [Path("/tmp"), Path(tempfile.gettempdir()), *leftovers.work_bases()]
    keep = [
        *own,
        X_SOCKETS,
        Path(sys.prefix),
        paths.PACKAGE,
        paths.APPS,
        paths.HOME / ".mcp-servers",
        paths.HOME / ".toolathlon-python",
        *handed,
    ]
    return FileView(
        hide=tuple(hide),
        fresh=tuple(fresh),
        keep=tuple(keep),
        binds=(("/home/user", home), ("/home/agent", home)),
        links=(("/workspace", "/home/user/workspace"), ("/FreeCAD", "/home/user/FreeCAD")),
    )


def _pin_dir() -> Path:
    """``/run/mcpworld-mnt``, a private and unbindable mount of itself (made once per machine boot):
    a pin may only sit on a private mount, and unbindable keeps the pins out of every namespace's
    recursive copy of ``/run``."""
    PIN_DIR.mkdir(mode=0o700, exist_ok=True)
    with open(PIN_DIR.parent / "mcpworld-mnt.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        mounted = any(line.split()[4] == str(PIN_DIR) for line in Path("/proc/self/mountinfo").read_text().splitlines())
        if not mounted:
            for args in (
                ["--bind", str(PIN_DIR), str(PIN_DIR)],
                ["--make-private", str(PIN_DIR)],
                ["--make-unbindable", str(PIN_DIR)],
            ):
                done = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=10, start_new_session=True)
                if done.returncode != 0:
                    raise InfraError(
                        f"could not prepare {PIN_DIR} for the desktops' mount namespaces: "
                        f"mount {' '.join(args)}: {done.stderr.strip()[-200:]}"
                    )
    return PIN_DIR


class MountNamespace:
    """One desktop's view of the files: ``enter`` is the nsenter flag its processes start with."""

    def __init__(self, name: str, view: FileView):
        self.name = name
        self.view = view
        self.pin = PIN_DIR / name
        self.root = PIN_DIR / f"{name}.root"

    @classmethod
    def create(cls, view: FileView) -> MountNamespace:
        require()
        me = psutil.Process()
        with _lock:
            n = next(_sequence)
        ns = cls(f"{PREFIX}{me.pid}-{int(me.create_time() * 1000)}-{n}", view)
        _pin_dir()
        ns.pin.touch(mode=0o600)
        ns.root.mkdir(mode=0o700)
        script = setup_script(view, str(ns.root), os.listdir("/"))
        done = subprocess.run(
            ["unshare", f"--mount={ns.pin}", "--propagation", "private", "--", "/bin/sh", "-c", script],
            capture_output=True,
            text=True,
            timeout=60,
            start_new_session=True,
        )
        if done.returncode != 0:
            ns.close()
            raise InfraError(f"the desktop's mount namespace could not be set up: {done.stderr.strip()[-400:]}")
        return ns

    def enter(self) -> str:
        return f"--mount={self.pin}"

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the namespace (the wrapper must run as root)."""
        return [shutil.which("nsenter") or "nsenter", self.enter(), "--", *argv]

    def close(self) -> None:
        """Drop the pin (the namespace goes with its last process: the cgroup's job) and its files."""
        _unpin(self.pin)


def _unpin(pin: Path) -> None:
    if pin.exists():
        subprocess.run(["umount", "-l", str(pin)], capture_output=True, timeout=10, start_new_session=True)
        try:
            pin.unlink()
        except OSError as exc:
            logger.warning("could not remove the mount namespace pin %s: %s", pin, exc)
    root = pin.with_name(pin.name + ".root")
    try:
        root.rmdir()
    except FileNotFoundError:
        pass
    except OSError as exc:
        logger.warning("could not remove %s: %s", root, exc)


def owner_alive(name: str) -> bool:
    """The process named in a namespace's name (``<prefix><pid>-<start ms>-<n>``) still runs."""
    return maker_alive(name.removeprefix(PREFIX).split("-"))


def sweep() -> list[str]:
    """Drop the namespaces of desktops whose owning process is gone; their names."""
    if not PIN_DIR.is_dir() or os.geteuid() != 0:
        return []
    removed = []
    for pin in sorted(PIN_DIR.glob(PREFIX + "*")):
        if pin.name.endswith(".root") or owner_alive(pin.name):
            continue
        _unpin(pin)
        removed.append(pin.name)
    return removed
