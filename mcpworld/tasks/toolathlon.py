"""Loader for Toolathlon task folders (``task_config.json`` + ``docs/`` + ``initial_workspace/`` +
``preprocess/main.py`` + ``evaluation/main.py``), mapped onto the one task model, run as upstream
runs them.

The agent works in ``~/workspace``: ``initial_workspace/`` is copied there (top-level ``*.tar.gz``
unpacked safely unless a preprocess script owns them), then the preprocess script runs. Inside a
Toolathlon checkout (``toolathlon.root``, default: the nearest ancestor of the task folder holding
``utils/``) preprocess and grader run as upstream's ``uv run -m tasks.finalpool.<task>.….main``:
as modules, from the root, so their relative imports and ``utils.*`` resolve. A task folder outside
a checkout runs the same way from its parent folder. The grader judges (exit 0 = pass) with
``--res_log_file`` (the episode's ``traj_log.json``), ``--agent_workspace``,
``--groundtruth_workspace`` and ``--launch_time``, on ``toolathlon.python`` (see
:func:`grader_python`). Graders, ground truth and preprocess scripts stay in the task folder:
nothing of them is copied where the agent works.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mcpworld.core.errors import TaskFileError
from mcpworld.core.paths import HOME
from mcpworld.core.steps import parse_steps
from mcpworld.core.task import ContextEntry, Task, read_json
from mcpworld.core.task_parts import ScriptGrader, Solution
from mcpworld.tasks.formats import task_format
from mcpworld.tasks.native import normalize_call
from mcpworld.tasks.settings import LoaderSettings, ToolathlonSettings

log = logging.getLogger(__name__)

WORKSPACE = "~/workspace"
WORKSPACE_TOKENS = ("!!<<<<||||workspace_dir||||>>>>!!", "!!<<<<||||current_working_dir||||>>>>!!")
# local tools we provide; ones we accept without offering (the harness manages the context itself)
LOCAL_TOOLS = {"claim_done", "python_execute", "sleep", "handle_overlong_tool_outputs"}
IGNORED_LOCAL_TOOLS = {"manage_context", "history"}
UNAVAILABLE_LOCAL_TOOLS = {"web_search": "a Serper web-search key", "ai_webpage_summary": "a web summary service"}


# made by `make toolathlon` (python -m mcpworld.tasks.toolathlon --prepare): a Python 3.12 when the
# machine has one, with what upstream's graders and preprocess scripts import
PREPARED = HOME / ".toolathlon-python"
GRADER_REQUIREMENTS = [
    "pandas==3.1.1",
    "numpy==2.5.5",
    "openpyxl==3.1.5",
    "python-docx==1.2.0",
    "python-pptx==1.0.2",
    "tqdm==4.70.1",
    "sympy==1.14.0",
    "termcolor==3.3.0",
    "openai==3.57.0",
    "openai-agents==0.0.15",
    "aiohttp==3.14.5",
    "tenacity==9.2.1",
    "addict==2.4.0",
    "pydantic==2.14.4",
    "PyYAML==6.0.4",
]


_warned: set[str] = set()


def _runs(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def grader_python(settings: ToolathlonSettings) -> str:
    """The interpreter graders and preprocess scripts run on: ``toolathlon.python``, else the
    environment ``make toolathlon`` prepared, else a ``python3.12`` on PATH (upstream pins 3.12:
    some graders use 3.12-only f-strings), else ours, with one warning (those graders then end in
    eval_error naming the fix)."""
    if settings.python:
        found = shutil.which(settings.python) or settings.python
        if not Path(found).is_file():
            raise TaskFileError(f"toolathlon.python={settings.python}: no such interpreter")
        return found
    prepared = PREPARED / "bin" / "python"
    if prepared.is_file() and others_can_run(prepared):
        return str(prepared)
    python312 = shutil.which("python3.12")
    if python312 and _runs(python312) and others_can_run(Path(python312)):
        return python312
    if "python" not in _warned:
        _warned.add("python")
        log.warning(
            "Toolathlon graders run on %s (Python %d.%d): no Python 3.12 found (upstream's version; "
            "`make toolathlon` prepares one with the graders' requirements, or set toolathlon.python=PATH)",
            sys.executable,
            *sys.version_info[:2],
        )
    return sys.executable


def others_can_run(program: Path) -> bool:
    """Whether the desktop account (not root) can run it: preprocess steps run as that account, and
    an interpreter under /root (pyenv's) is closed to it."""
    target = program.resolve()
    dirs_open = all(d.stat().st_mode & stat.S_IXOTH for d in target.parents)
    return target.is_file() and dirs_open and bool(target.stat().st_mode & stat.S_IXOTH)


def find_root(folder: Path, settings: ToolathlonSettings) -> Path | None:
    """``toolathlon.root``, else the nearest ancestor of the task folder that holds ``utils/``."""
    if settings.root:
        root = Path(settings.root).expanduser().resolve()
        if not (root / "utils").is_dir():
            raise TaskFileError(f"toolathlon.root={settings.root}: not a Toolathlon checkout (no utils/ folder)")
        return root
    for parent in folder.resolve().parents:
        if (parent / "utils").is_dir():
            return parent
    return None


def module_of(script: Path, base: Path) -> str:
    """``tasks/finalpool/x/evaluation/main.py`` → ``tasks.finalpool.x.evaluation.main`` (upstream's
    path_to_module; hyphens are fine for ``python -m``)."""
    return ".".join(script.resolve().relative_to(base).with_suffix("").parts)


def _variant(folder: Path, name: str, cn: bool) -> Path:
    """``name`` or, in cn mode, its ``_cn`` variant where the task has one (as upstream picks them)."""
    path = folder / name
    if cn:
        other = path.with_name(f"{path.stem}_cn{path.suffix}")
        if other.exists():
            return other
    return path


def is_toolathlon_config(data: Any) -> bool:
    return isinstance(data, dict) and "needed_mcp_servers" in data


def launch_time() -> str:
    """Toolathlon's format: ``2026-11-22 14:03:00 Sunday``."""
    return time.strftime("%Y-%m-%d %H:%M:%S %A")


def _read(path: Path, where: str, required: bool = True) -> str:
    if not path.is_file():
        if required:
            raise TaskFileError(f"{where}: missing {path.relative_to(path.parents[1])} (the task's instruction)")
        return ""
    return path.read_text(encoding="utf-8").strip()


@task_format(
    "toolathlon",
    pattern="task_config.json",
    needs="a Toolathlon task_config.json with 'needed_mcp_servers'",
    detect=lambda path, data: path.name == "task_config.json" and is_toolathlon_config(data),
)
def _load_file(path: Path, data: Any, settings: LoaderSettings, root: Path | None) -> Task:
    return load_toolathlon(path, data, settings.toolathlon)


DEFAULT_SETTINGS = ToolathlonSettings()  # frozen, so one shared default (as the call in the signature made)


def load_toolathlon(path: Path, data: dict[str, Any] | None = None, settings: ToolathlonSettings = DEFAULT_SETTINGS) -> Task:
    path = Path(path)
    where = str(path)
    data = read_json(path) if data is None else data
    folder = path.parent
    servers = data.get("needed_mcp_servers") or []
    local = data.get("needed_local_tools") or []
    if not isinstance(servers, list) or not isinstance(local, list):
        raise TaskFileError(f"{where}: 'needed_mcp_servers' and 'needed_local_tools' must be lists of names")
    cn = settings.lang == "cn"
    instruction = _read(_variant(folder / "docs", "task.md", cn), where)
    when = launch_time()
    prompt = _read(_variant(folder / "docs", "agent_system_prompt.md", cn), where, required=False)
    for token in WORKSPACE_TOKENS:
        prompt = prompt.replace(token, "{workspace}")
    prompt = (
        prompt.replace("!!<<<<||||workspace_dir_rela||||>>>>!!", "workspace")
        .replace("!!<<<<||||time||||>>>>!!", when)
        .replace("!!<<<<||||task_description||||>>>>!!", instruction)
    )

    skip = None
    for name in local:
        if name in UNAVAILABLE_LOCAL_TOOLS:
            skip = f"it needs the local tool {name} ({UNAVAILABLE_LOCAL_TOOLS[name]}), which mcpworld does not provide"
        elif name not in LOCAL_TOOLS | IGNORED_LOCAL_TOOLS:
            skip = skip or f"it needs the unknown local tool {name!r}"

    root = find_root(folder, settings)
    base = root if root is not None and folder.resolve().is_relative_to(root) else folder.resolve().parent
    python = grader_python(settings)
    preprocess = _variant(folder / "preprocess", "main.py", cn)
    initial = _variant(folder, "initial_workspace", cn)
    context = [ContextEntry(initial, WORKSPACE, extract_archives=not preprocess.is_file())] if initial.is_dir() else []
    setup: list[dict[str, Any]] = [{"execute": {"command": ["mkdir", "-p", WORKSPACE]}}]
    if preprocess.is_file():  # upstream: uv run -m <module> --agent_workspace W --launch_time "T", from the root
        command = (
            f"cd {shlex.quote(str(base))} && exec {shlex.quote(python)} -m "
            f"{shlex.quote(module_of(preprocess, base))} --agent_workspace {WORKSPACE} "
            f"--launch_time {shlex.quote(when)}"
        )
        # ("preprocess": where an episode's Klavis sandboxes hand their credentials: this command only)
        setup.append({"execute": {"command": command, "shell": True, "timeout": 300, "preprocess": True}})
    grader = _variant(folder / "evaluation", "main.py", cn)
    if not grader.is_file():
        raise TaskFileError(f"{where}: missing evaluation/main.py (the task's grader)")

    solution = Solution()
    if (folder / "solution.json").is_file():
        data_solution = read_json(folder / "solution.json")
        if not isinstance(data_solution, dict):
            raise TaskFileError(f'{folder / "solution.json"}: must be an object like {{"mcp": [tool calls]}}')
        calls = data_solution.get("mcp") or []
        steps = tuple(normalize_call(c, str(folder / "solution.json")) for c in calls)
        solution = Solution({"mcp": steps, "hybrid": steps})

    max_turns = data.get("max_turns")
    return Task(
        id=f"toolathlon/{folder.name}" + ("_cn" if cn else ""),
        app="toolathlon",
        instruction=instruction,
        dir=folder,
        source=path,
        params={"launch_time": when},
        max_steps=int(max_turns) if max_turns else None,
        tags=["toolathlon"] + (["cn"] if cn else []),
        context=context,
        setup=parse_steps(setup, where),
        mcp_servers=[str(s) for s in servers],
        workspace=WORKSPACE,
        local_tools=[str(t) for t in local if t in LOCAL_TOOLS],
        system_prompt=prompt,
        grader=ScriptGrader(
            script=grader,
            module=module_of(grader, base),
            root=base,
            python=python,
            groundtruth=str(_variant(folder, "groundtruth_workspace", cn)),
            launch_time=when,
            claim_done=settings.claim_done,
        ),
        solution=solution,
        format="toolathlon",
        skip_reason=skip,
    )


def prepare(target: Path = PREPARED) -> str:
    """``make toolathlon``: a venv for upstream's graders and preprocess scripts, on Python 3.12
    when the machine has one (python3.12 on PATH, pyenv's), else Debian's; idempotent."""
    from mcpworld.core.interpreters import find_python

    base = find_python("3.12") or "/usr/bin/python3"
    closed = not others_can_run(Path(base))  # e.g. pyenv's under /root: a copy the desktop account can run
    runtime = target.with_name(target.name + "-runtime")
    stamp = target / ".pins"
    made = f"{base}{f' copied to {runtime}' if closed else ''}\n" + "\n".join(GRADER_REQUIREMENTS)
    if stamp.is_file() and stamp.read_text() == made:
        return f"{target}: up to date ({base})"
    shutil.rmtree(target, ignore_errors=True)
    if closed:
        base = _open_copy(base, runtime)
    subprocess.run([base, "-m", "venv", str(target)], check=True)
    subprocess.run(
        [str(target / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *GRADER_REQUIREMENTS], check=True
    )
    stamp.write_text(made)
    return f"{target}: made on {base}"


def _open_copy(python: str, runtime: Path) -> str:
    """A copy of ``python``'s installation (without its test suite and packages) at ``runtime``."""
    prefix = subprocess.run(
        [python, "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True, check=True
    ).stdout.strip()
    version = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, check=True
    ).stdout.strip()
    shutil.rmtree(runtime, ignore_errors=True)
    shutil.copytree(
        prefix,
        runtime,
        symlinks=True,
        ignore=lambda folder, names: [
            n for n in names if n in ("test", "site-packages") and Path(folder).name == f"python{version}"
        ],
    )
    binary = runtime / "bin" / f"python{version}"
    # a shared build finds libpython by its absolute RUNPATH (the closed original): point it at the copy
    if "RUNPATH" in subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True).stdout:
        subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/../lib", str(binary)], check=True)
    return str(binary)


if __name__ == "__main__":
    if sys.argv[1:] != ["--prepare"]:
        raise SystemExit("usage: python -m mcpworld.tasks.toolathlon --prepare")
    print(prepare())
