"""What PC-Canary's FreeCAD tasks need from this desktop: their documents in ``/FreeCAD/`` (a top-level
folder of the authors' image, which a desktop account can neither find nor make) live in the episode
home's ``~/FreeCAD/``, made before the app starts; their handlers ``import FreeCAD`` to open the saved
document the hook names, which works with Debian's FreeCAD modules; and a Frida hook's report of the
agent's last action reaches the handler before the verdict."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from mcpworld.env.base import Environment
from mcpworld.evaluation.handler import HandlerProcess, handler_params
from mcpworld.probes.live import LiveHooks
from mcpworld.tasks.mcpworld_format import DEBIAN_PYTHON_MODULES, author_home_text, load_mcpworld

HOOK = "const code = `doc = FreeCAD.open('/FreeCAD/task07.FCStd')`; const lib = '/usr/share/FreeCAD/Mod';\n"


def _task(tmp_path: Path):
    folder = tmp_path / "tests" / "tasks" / "FreeCAD" / "task07_create_line"
    folder.mkdir(parents=True)
    (folder / "hooker.js").write_text(HOOK)
    (folder / "handler.py").write_text("def message_handler(message, logger, task_parameter):\n    return None\n")
    config = {
        "instruction_template": "Save the file to ${source_path}${filename}",
        "application_info": {"name": "FreeCAD", "executable_path": "/usr/local/bin/FreeCAD"},
        "task_parameters": {"source_path": "/FreeCAD/", "filename": "task07.FCStd"},
        "evaluation_setup": {"scripts": [{"role": "hook", "path": "hooker.js"}, {"role": "handler", "path": "handler.py"}]},
    }
    (folder / "config.json").write_text(json.dumps(config))
    return load_mcpworld(folder / "config.json")


def test_the_authors_freecad_folder_is_one_in_this_episodes_home(tmp_path):
    task = _task(tmp_path)
    assert task.instruction == "Save the file to /FreeCAD/task07.FCStd"  # as written: the desktop has /FreeCAD
    assert task.setup[0].raw == {"execute": {"command": "mkdir -p ~/FreeCAD/", "shell": True}}  # before the app
    home = tmp_path / "episode" / "home"
    env = SimpleNamespace(home=home, map_paths=lambda text: Environment.map_paths(env, text))
    assert handler_params(task, env) == {"source_path": f"{home}/FreeCAD/", "filename": "task07.FCStd"}
    source = Environment.map_paths(env, author_home_text(HOOK))  # as the episode runs the hook
    assert f"FreeCAD.open('{home}/FreeCAD/task07.FCStd')" in source
    assert "'/usr/share/FreeCAD/Mod'" in source  # a path of this machine stays
    assert list(task.handler_setup.python_path) == DEBIAN_PYTHON_MODULES["freecad"]


def test_a_task_naming_no_such_folder_gets_no_setup_step(tmp_path):
    folder = tmp_path / "tests" / "tasks" / "vscode" / "task01"
    folder.mkdir(parents=True)
    (folder / "handler.py").write_text("def message_handler(message, logger, task_parameter):\n    return None\n")
    (folder / "config.json").write_text(
        json.dumps(
            {
                "instruction_template": "Open /workspace/a.txt",
                "evaluation_setup": {"scripts": [{"role": "handler", "path": "handler.py"}]},
            }
        )
    )
    task = load_mcpworld(folder / "config.json")
    assert task.instruction == "Open /workspace/a.txt"
    assert task.setup == [] and task.handler_setup.python_path == ()


@pytest.mark.skipif(
    not Path(DEBIAN_PYTHON_MODULES["freecad"][0], "FreeCAD.so").is_file(),
    reason="Debian's FreeCAD is not installed (apt-get install freecad)",
)
def test_a_freecad_handler_imports_freecad(tmp_path):
    handler = tmp_path / "handler.py"
    handler.write_text(
        "def message_handler(message, logger, task_parameter):\n"
        "    import freecad, FreeCAD\n"
        "    doc = FreeCAD.newDocument('probe')\n"
        "    box = doc.addObject('PartDesign::AdditiveBox', 'Box')\n"
        "    return [{'status': 'success', 'reason': box.TypeId}]\n"
    )
    proc = HandlerProcess(handler, {}, tmp_path, setup={"python_path": DEBIAN_PYTHON_MODULES["freecad"]})
    try:
        proc.send({"type": "send", "payload": {"event": "function_key_word_detected"}})
    finally:
        proc.close()
    assert proc.problem is None
    assert (proc.verdict.score, proc.verdict.reason) == (1.0, "handler: success: PartDesign::AdditiveBox")


class _AttachedFrida:
    def close(self) -> None:
        pass


def test_the_verdict_waits_for_a_hook_report_still_on_its_way(tmp_path):
    hook = tmp_path / "hooker.js"
    hook.write_text("send({event: 'script_initialized'});\n")
    events: list[str] = []
    live = LiveHooks("frida", [str(hook)], lambda kind, **data: events.append(data["message"]["event"]))
    live._frida = _AttachedFrida()  # type: ignore[assignment]  # as after start(): the hook runs in the app
    late = threading.Timer(0.4, lambda: live.relay({"event": "function_key_word_detected"}))
    started = time.monotonic()
    late.start()
    try:
        live.settle(quiet_s=0.6, limit_s=5.0)
    finally:
        late.cancel()
        live.close()
    waited = time.monotonic() - started
    assert events == ["function_key_word_detected"]
    assert 1.0 <= waited < 2.0  # the report at 0.4 s, then 0.6 s without another


def test_without_a_frida_hook_nothing_waits(tmp_path):
    hook = tmp_path / "hooker.js"
    hook.write_text("send({event: 'script_initialized'});\n")
    live = LiveHooks("frida", [str(hook)], lambda kind, **data: None)
    started = time.monotonic()
    live.settle()
    assert time.monotonic() - started < 0.1
    live.close()
