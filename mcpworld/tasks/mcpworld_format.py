"""Loader for MCPWorld (PC-Canary) task folders: ``config.json`` + ``handler.py`` + hooks + context data.

PC-Canary runs a task from the root of its checkout on the authors' machine, so its configs name
paths there: relative ones (``apps/zotero/...``) and absolute ones into the checkout
(``/workspace/PC-Canary/...``, ``/home/agent/agent-demo/PC-Canary/...``) resolve against
``pccanary.root`` (default: the nearest ancestor of the task folder holding ``tests/tasks``); the
authors' home (``/home/agent/``) and ``/workspace/`` are the episode home. An app the authors
built themselves (``/usr/local/bin/gimp``) runs as Debian's build where this desktop has it.

Every key upstream reads is honoured or, where it cannot be, named in ``Task.notes``:
``preconditions`` (``<app>_running: true`` is the launch's own readiness check, before the agent
starts), ``evaluate_on_completion``, ``pre_process`` (started in the background before the app, as
upstream's evaluator does), ``sql_path`` and the rest of the config (given to the handler as
``evaluator.config``), ``success_conditions`` (kept; upstream's evaluator reads it but acts on it
nowhere), ``application_info.cwd``. MCP server entries without a ``name`` get one from their command.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import string
from pathlib import Path
from typing import Any

from mcpworld.core.errors import TaskFileError
from mcpworld.core.steps import parse_steps
from mcpworld.core.task import ContextEntry, Task, read_json
from mcpworld.core.task_parts import HandlerSetup, KeyStep
from mcpworld.probes.live import probe_for
from mcpworld.tasks.formats import task_format
from mcpworld.tasks.settings import LoaderSettings, PcCanarySettings


def is_mcpworld_task(data: Any) -> bool:
    return isinstance(data, dict) and ("instruction_template" in data or "application_info" in data) and "evaluator" not in data


def checkout_root(task_dir: Path, settings: PcCanarySettings) -> Path:
    """``pccanary.root``, else the task folder's nearest ancestor with ``tests/tasks``."""
    if settings.root:
        return settings.root
    for base in task_dir.parents:
        if (base / "tests" / "tasks").is_dir():
            return base
    return task_dir.parent.parent


CHECKOUT = re.compile(r"^(?:/.*)?/PC-Canary/|^PC-Canary/")  # the authors' checkout, wherever it lay
# the authors' folders the episode home stands in for (under /home/user/, see author_home_text); their FreeCAD
# image kept its documents in a top-level /FreeCAD/, which a desktop's account can neither find nor make here
AUTHOR_HOME_FOLDERS = {"/workspace/": "workspace/", "/home/agent/": "", "/FreeCAD/": "FreeCAD/"}
AUTHOR_HOME_TEXT = re.compile(r"(?<![\w./-])(?:/workspace/|/home/agent/|/FreeCAD/)(?!PC-Canary/)")


def author_path(value: str, root: Path) -> str:
    """A path of the authors' machine, as it is here: in the checkout → under ``root``; in their
    home or ``/workspace`` → ``/home/user/...`` (the episode home, mapped by the environment);
    relative → under ``root`` when it exists there (PC-Canary runs from its root); else unchanged."""
    if CHECKOUT.search(value):
        return str(root / CHECKOUT.sub("", value, count=1))
    if value.startswith("/workspace/"):
        return "/home/user/workspace/" + value[len("/workspace/") :]
    if value.startswith("/home/agent/"):
        return "/home/user/" + value[len("/home/agent/") :]
    if value and not value.startswith(("/", "-", "~")) and "://" not in value and (root / value).exists():
        return str(root / value)
    return value


def author_home_text(text: str) -> str:
    """Text that names the authors' home (a hook's source, a task parameter) naming this desktop's
    ``/home/user/…`` instead, which the episode maps onto its home (``Environment.map_paths``): their
    hooks read and their handlers compare ``/workspace/.mcpworld/…``, where the episode put it."""
    return AUTHOR_HOME_TEXT.sub(lambda m: "/home/user/" + AUTHOR_HOME_FOLDERS[m.group(0)], text)


def _author_home_values(value: Any) -> Any:
    if isinstance(value, str):
        return author_home_text(value)
    if isinstance(value, dict):
        return {key: _author_home_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_author_home_values(item) for item in value]
    return value


def author_arg(value: str, root: Path) -> str:
    """An argument, with a path in ``--flag=PATH`` form mapped too."""
    if value.startswith("--") and "=" in value:
        flag, _, path = value.partition("=")
        return f"{flag}={author_path(path, root)}"
    return author_path(value, root)


# The app folders' programs as Debian (or this desktop: ``code`` is code-server) ships them, used when
# the authors' own build is not here; the install hint names the package.
DEBIAN_PROGRAMS = {
    "gimp": ("gimp", "gimp"),
    "freecad": ("freecad", "freecad"),
    "qbittorrent": ("qbittorrent", "qbittorrent"),
    "obsstudio": ("obs", "obs-studio"),
    "qgis": ("qgis", "qgis"),
    "shotcut": ("shotcut", "shotcut"),
    "telegram": ("telegram-desktop", "telegram-desktop"),
    "vscode": ("code", "code-server"),
}
# where Debian keeps an app's Python modules, which its handlers import as on the authors' machine
# (FreeCAD's run `import FreeCAD` to open the saved document the hook names)
DEBIAN_PYTHON_MODULES = {"freecad": ["/usr/lib/freecad-python3/lib", "/usr/share/freecad/Ext", "/usr/share/freecad/Mod"]}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _program(app_dir: str, executable: str, root: Path) -> tuple[str | None, str | None]:
    """(the command that starts the app here, why it cannot) from the config's executable_path."""
    from mcpworld.apps.catalog import programs
    from mcpworld.apps.programs import program_for

    mapped = author_path(executable, root)
    if Path(mapped).is_file() or (not mapped.startswith("/home/user/") and shutil.which(mapped)):
        return mapped, None
    command, package = DEBIAN_PROGRAMS.get(_key(app_dir), (None, None))
    if command and (program_for(list(programs()), command) or shutil.which(command)):
        return command, None
    hint = f"; Debian has it: apt-get install {package}" if package else ""
    return None, f"its application {app_dir} is not installed here (the task starts {executable}{hint})"


def _our_program(command: str) -> str | None:
    """The app config whose program the command starts (``gimp`` → gimp, ``code`` → vscode), or None."""
    from mcpworld.apps.catalog import programs
    from mcpworld.apps.programs import program_for

    program = program_for(list(programs()), command)
    return program.app if program else None


GENERIC = {"main", "index", "run_server", "server", "build", "dist", "src", "bin", "mcp", "run", "__main__"}
LAUNCHERS = {"python", "python3", "node", "npx", "uv", "uvx", "bash", "sh", "deno", "bun"}


def server_name(entry: dict[str, Any]) -> str:
    """A name for an unnamed server entry: the first telling word of its command line
    (``uvx mcp-obsidian`` → mcp-obsidian, ``node /x/obs-mcp/build/index.js`` → obs-mcp)."""
    command = str(entry.get("command") or "server")
    words = [command] if Path(command).name not in LAUNCHERS and not command.endswith("/python") else []
    words += [str(a) for a in entry.get("args") or [] if not str(a).startswith("-")]
    for word in words:
        parts = [p for p in re.split(r"[/\\]", word.split("://")[-1]) if p]
        for part in reversed(parts):
            stem = re.sub(r"\.(py|js|ts|mjs)$", "", part)
            if stem and stem not in GENERIC and not re.fullmatch(r"[\d.:]+|sse|http.*|127.*|localhost.*", stem):
                return stem
    return Path(command).name


def _servers(data: dict[str, Any], root: Path) -> list[str | dict[str, Any]]:
    servers: list[str | dict[str, Any]] = []
    taken = set()
    for entry in data.get("mcp_servers") or []:
        if not isinstance(entry, dict):
            servers.append(entry)
            continue
        entry = dict(entry)
        name = str(entry.get("name") or server_name(entry))
        unique, n = name, 2
        while unique in taken:
            unique, n = f"{name}-{n}", n + 1
        taken.add(unique)
        entry["name"] = unique
        entry["command"] = author_path(str(entry.get("command", "")), root)
        entry["args"] = [author_arg(str(a), root) for a in entry.get("args") or []]
        if entry.get("cwd"):
            entry["cwd"] = author_path(str(entry["cwd"]), root)
        servers.append(entry)
    return servers


def _find_source(relative: str, task_dir: Path, root: Path) -> Path | None:
    """Context paths are relative to the PC-Canary root (else found from the task folder up)."""
    for base in (root, task_dir, *task_dir.parents):
        candidate = base / relative
        if candidate.exists():
            return candidate
    return None


def _key_step_names(data: dict[str, Any]) -> dict[int, str]:
    names = {}
    for event_name, event in (data.get("events") or {}).items():
        if isinstance(event, dict) and event.get("is_key_step") and isinstance(event.get("key_step_index"), int):
            names[event["key_step_index"]] = str(event.get("key_step_name") or event_name)
    return names


def _preconditions(data: dict[str, Any], app_dir: str, launched: bool) -> list[str]:
    """The preconditions this harness cannot check, by name (``<app>_running: true`` it checks: the
    app's launch waits until its window takes input, before the agent starts)."""
    unchecked = []
    for key, value in (data.get("preconditions") or {}).items():
        running = re.fullmatch(r"(.+)_running", key)
        if (
            running
            and value is True
            and launched
            and _key(running.group(1)) in (_key(app_dir), _key(str((data.get("application_info") or {}).get("name", ""))))
        ):
            continue
        unchecked.append(f"precondition {key}={json.dumps(value)} is not checked here (PC-Canary does not check it either)")
    return unchecked


def _scripts(setup_cfg: dict[str, Any], task_dir: Path, where: str) -> tuple[Path, list[Path], list[Path]]:
    """(handler, python hooks with their dependencies, other hooks) named by evaluation_setup.scripts."""
    handler: Path | None = None
    py_hooks: list[Path] = []
    other_hooks: list[Path] = []
    for script in setup_cfg.get("scripts") or []:
        if not isinstance(script, dict) or not script.get("path"):
            raise TaskFileError(f"{where}: evaluation_setup.scripts entries need 'role' and 'path'")
        path = task_dir / str(script["path"])
        if script.get("role") == "handler":
            handler = handler or path
        elif script.get("role") == "hook":
            deps = [task_dir / str(d) for d in script.get("dependency") or []]
            if path.suffix == ".py":
                py_hooks += [*deps, path]  # PC-Canary's StateInspector imports the dependencies first
            else:
                other_hooks += [path, *deps]  # its IPC injector sends the hook, then its dependencies
    return handler or task_dir / "handler.py", py_hooks, other_hooks


@task_format(
    "mcpworld",
    pattern="config.json",
    needs="an MCPWorld/PC-Canary config.json with 'instruction_template'",
    detect=lambda path, data: is_mcpworld_task(data),
)
def _load_file(path: Path, data: Any, settings: LoaderSettings, root: Path | None) -> Task:
    return load_mcpworld(path, data, settings.pccanary)


DEFAULT_SETTINGS = PcCanarySettings()  # frozen, so one shared default (as the call in the signature made)


def load_mcpworld(path: Path, data: dict[str, Any] | None = None, settings: PcCanarySettings = DEFAULT_SETTINGS) -> Task:
    path = Path(path)
    where = str(path)
    if data is None:
        data = read_json(path)
    task_dir = path.parent
    root = checkout_root(task_dir.resolve(), settings)
    template = data.get("instruction_template") or data.get("instruction")
    if not template:
        raise TaskFileError(f"{where}: missing required key 'instruction_template'")
    params = data.get("task_parameters") or {}
    if not isinstance(params, dict):
        raise TaskFileError(f"{where}: 'task_parameters' must be an object")
    instruction = string.Template(str(template)).safe_substitute({k: str(v) for k, v in params.items()})
    # as the authors wrote it: /workspace, /home/agent and /FreeCAD exist on the desktops, as views of the
    # episode's home (env/local/mountns.py); a desktop without them shows ~/… in their place (tasks/instructions.py)
    folders = sorted(
        {AUTHOR_HOME_FOLDERS[m.group(0)] for m in AUTHOR_HOME_TEXT.finditer(instruction)} - {"", "workspace/"}
    )  # the home is there, context data makes the workspace

    setup_cfg = data.get("evaluation_setup") or {}
    handler, py_hooks, other_hooks = _scripts(setup_cfg, task_dir, where)
    app_info = data.get("application_info") or {}
    app_dir = task_dir.parent.name
    app = str(app_info.get("name") or app_dir)
    skip = None
    missing = [p for p in (handler, *py_hooks, *other_hooks) if not p.is_file()]
    if missing:
        skip = (
            f"its {', '.join(p.name for p in missing)} is not in {task_dir} (PC-Canary keeps task code in "
            f"git beside config.json: point tasks.root at a PC-Canary checkout)"
        )
    notes: list[str] = []
    # the folders the task names were there on the authors' machine: make them before anything runs
    setup: list[dict[str, Any]] = (
        [{"execute": {"command": "mkdir -p " + " ".join(f"~/{f}" for f in folders), "shell": True}}] if folders else []
    )
    pre = data.get("pre_process") or {}
    if pre.get("command"):
        argv = [author_path(str(pre["command"]), root), *(author_arg(str(a), root) for a in pre.get("args") or [])]
        missing_script = next((a for a in argv[1:] if a.endswith(".py") and not Path(a).is_file()), None)
        if missing_script:
            skip = skip or f"its pre_process script {missing_script} is not here"
        # upstream starts it and goes on (it may serve for the whole episode): in the background
        setup.append({"execute": {"command": f"setsid -f {shlex.join(argv)} >/dev/null 2>&1 </dev/null", "shell": True}})
    executable = app_info.get("executable_path")
    launched = False
    if executable:
        command, why = _program(app_dir, str(executable), root)
        skip = skip or why
        if command:
            argv = [command, *(author_arg(str(a), root) for a in app_info.get("args") or [])]
            if command != str(executable) and not command.startswith("/"):
                notes.append(f"runs this desktop's {command} for the authors' own build {executable}")
            cwd = app_info.get("cwd")
            ours = _our_program(command)
            launch: dict[str, Any] = {"command": argv, "timeout": 60}
            if ours is None:  # one of our programs is ready when its own main window takes input
                launch["window"] = app_info.get("window") or "."
            else:
                app = ours  # its app config (mcpworld/conf/app/<app>.yaml) holds the task's app settings
            if cwd:
                launch.update(command=f"cd {shlex.quote(author_path(str(cwd), root))} && exec {shlex.join(argv)}", shell=True)
            setup.append({"launch": launch})
            launched = True
    notes += _preconditions(data, app_dir, launched)
    if data.get("success_conditions"):
        notes.append(
            f"success_conditions {data['success_conditions']} kept: PC-Canary's evaluator reads it and acts "
            "on it nowhere, the handler's success update decides"
        )
    kind = str(setup_cfg.get("evaluator_type") or "HookManager")
    if other_hooks and not probe_for(app_dir, HandlerSetup(js_hooks=tuple(map(str, other_hooks)), evaluator_type=kind)):
        notes.append(
            f"its hooks {', '.join(p.name for p in other_hooks)} ({kind}) do not run here: no probe of "
            f"this harness runs them in {app_dir} yet, so a handler judging from their events gives no "
            "verdict (eval_error)"
        )

    context = []
    for entry in data.get("context_data") or []:
        source = _find_source(str(entry.get("from", "")), task_dir, root)
        if source is None:
            skip = skip or f"its context data {entry.get('from')!r} is not on this machine"
            continue
        dest = author_path(str(entry.get("to", "")), root)
        context.append(
            ContextEntry(
                source,
                "~" + dest[len("/home/user") :]
                if dest.startswith("/home/user/")
                else "~" + dest
                if dest.startswith("/")
                else dest,
            )
        )

    total = int(data.get("total_key_steps") or 0)
    names = _key_step_names(data)
    key_steps = [KeyStep(names.get(i, f"key step {i}"), handler_index=i) for i in range(1, total + 1)]
    config = dict(data)
    if config.get("sql_path"):
        config["sql_path"] = author_path(str(config["sql_path"]), root)
    handler_setup = HandlerSetup(
        config=config,
        hooks=tuple(str(p) for p in py_hooks),
        js_hooks=tuple(str(p) for p in other_hooks),
        evaluator_type=str(setup_cfg.get("evaluator_type") or "HookManager"),
        evaluate_on_completion=bool(setup_cfg.get("evaluate_on_completion", False)),
        root=str(root),
        python_path=tuple(DEBIAN_PYTHON_MODULES.get(_key(app_dir), [])),
    )
    task_id = f"{app_dir}/{task_dir.name}"
    return Task(
        id=task_id,
        app=app,
        instruction=instruction,
        dir=task_dir,
        source=path,
        params=_author_home_values(params),  # the handler's: paths in this home (see author_home_text)
        timeout_s=float(setup_cfg["timeout"]) if setup_cfg.get("timeout") else None,
        context=context,
        setup=parse_steps(setup, where),
        mcp_servers=_servers(data, root),
        key_steps=key_steps,
        handler=handler,
        handler_setup=handler_setup,
        format="mcpworld",
        skip_reason=skip,
        notes=notes,
    )
