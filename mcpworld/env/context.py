"""Context restore: the episode home is made identical to the task's golden copy before each attempt.

The golden copy is assembled once per task; restore is ``rsync -a --delete`` onto the previous
attempt's home, so only what changed is copied (tens of ms for thousands of files).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from mcpworld.core.archives import safe_extract
from mcpworld.core.errors import InfraError, TaskFileError, UserError
from mcpworld.core.task import ContextEntry, Task


def require_binary(name: str, package: str | None = None, search: str | None = None) -> str:
    """The executable ``name`` on PATH (or on ``search``, a PATH string), else one error saying how
    to install it."""
    path = shutil.which(name, path=search)
    if not path:
        raise UserError(f"'{name}' is not installed: run `apt-get install -y {package or name}` (or `make setup`)")
    return path


def home_relative(dest: str) -> str:
    for prefix in ("~/", "/home/user/", "/root/"):
        if dest.startswith(prefix):
            return dest[len(prefix) :]
    if dest.startswith("/"):
        raise TaskFileError(f"context destination {dest!r} must be inside the home (~/... or /home/user/...)")
    return dest


def copy_into_home(src: Path, target: Path) -> None:
    """Copy a local file or folder to ``target`` (a path already resolved into the home)."""
    if not src.exists():
        raise InfraError(f"cannot copy {src} into the home: it does not exist")
    target.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, target, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copy2(src, target)


def build_golden(entries: list[ContextEntry], golden: Path, under: Sequence[Path] = ()) -> Path:
    """Lay the task's context files out as a home directory, over the folders ``under`` (the apps'
    golden profiles, so a task's own files win)."""
    if golden.exists():
        shutil.rmtree(golden)
    try:
        golden.mkdir(parents=True)
        for folder in under:
            shutil.copytree(folder, golden, symlinks=True, dirs_exist_ok=True)
        for entry in entries:
            target = golden / home_relative(entry.dest)
            copy_into_home(entry.src, target)
            if entry.extract_archives and target.is_dir():
                for archive in sorted(target.glob("*.tar.gz")) + sorted(target.glob("*.tgz")):
                    safe_extract(archive, target, label=f"{entry.src / archive.name}")
                    archive.unlink()
    except OSError as exc:  # a full or failing disk under the work folder: the machine's, not a harness bug
        raise InfraError(f"cannot lay out the golden home {golden}: {copy_failure(exc)}") from exc
    return golden


def copy_failure(exc: OSError) -> str:
    """One line for a failed copy: shutil.Error carries one (src, dst, why) per file that failed."""
    failures = exc.args[0] if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) else []
    if not failures:
        return str(exc)
    more = f" (and {len(failures) - 1} more file(s))" if len(failures) > 1 else ""
    return f"{failures[0][2]}{more}"


def restore(golden: Path, home: Path, owner: tuple[int, int] | None = None) -> None:
    """Make ``home`` identical to ``golden``, every file owned by ``owner`` (uid, gid) when given and
    writable by its owner: a task folder on a read-only mount (or a read-only copy of a suite) must
    not leave the agent unable to save the documents it was given."""
    require_binary("rsync")
    home.mkdir(parents=True, exist_ok=True)
    chown = [f"--chown={owner[0]}:{owner[1]}"] if owner else []
    proc = subprocess.run(
        ["rsync", "-a", "--delete", "--chmod=u+w", *chown, f"{golden}/", f"{home}/"],
        capture_output=True,
        text=True,
        start_new_session=True,
    )  # (a terminal's Ctrl-C is the job's to act on)
    if proc.returncode != 0:
        raise InfraError(f"context restore failed: rsync exited {proc.returncode}: {proc.stderr.strip()[-300:]}")


# the folders of the suites' own VM homes (Ubuntu's XDG user folders on OSWorld's /home/user), which
# their tasks' steps take as given (`sudo mkdir ~/Desktop/todo_list_Jan_1`)
VM_HOME_FOLDERS = ("Desktop", "Documents", "Downloads", "Music", "Pictures", "Public", "Templates", "Videos")
# the VM's sound output is not at full volume (os/28cc3b7e: "the volume of my system is too small");
# a desktop without a sound card gets PulseAudio's null sink, at 100 % unless told: 40 % here
VM_HOME_FILES = {".config/pulse/default.pa": ".include /etc/pulse/default.pa\nset-sink-volume auto_null 26214\n"}


def vm_home(golden: Path) -> None:
    """The suite VM's home conventions laid over a golden home (what the task gives stays)."""
    for folder in VM_HOME_FOLDERS:
        (golden / folder).mkdir(exist_ok=True)
    for name, text in VM_HOME_FILES.items():
        target = golden / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)


class Goldens:
    """One desktop's golden homes: each task's built once (over the app layers ``layers()`` gives,
    asked for at the first build) and restored onto the home at every reset."""

    def __init__(self, root: Path, layers: Callable[[], list[Path]]):
        self.root = root
        self._layers_of = layers
        self._layers: list[Path] | None = None
        self._built: dict[str, Path] = {}

    def restore(self, task: Task, home: Path, owner: tuple[int, int] | None) -> None:
        golden = self._built.get(task.id)
        if golden is None:
            if self._layers is None:
                self._layers = self._layers_of()
            golden = build_golden(task.context, self.root / task.id.replace("/", "__"), under=self._layers)
            if task.format == "osworld":
                vm_home(golden)
            self._built[task.id] = golden
        restore(golden, home, owner=owner)
        home.chmod(0o700)  # no other desktop's account can read it
