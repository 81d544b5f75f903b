"""A PC-Canary task's hooks and handler name the authors' home (``/workspace/.mcpworld/…``): the episode
hands both this episode's home instead, so a hook reads the file the context data put there and a
handler's expected path equals the path VS Code reports (AguLeon fork, tests/tasks/vscode)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from mcpworld.env.base import Environment
from mcpworld.evaluation.handler import handler_params
from mcpworld.probes.live import LiveHooks
from mcpworld.tasks.mcpworld_format import author_home_text, load_mcpworld

HOOK = 'const p = "/workspace/.mcpworld/vscode/C-Plus-Plus/bubble_sort.cpp";\nrequire("/workspace/PC-Canary/x.js");\n'


def test_hook_text_names_this_desktops_home_but_not_the_checkout():
    mapped = author_home_text(HOOK + 'open("/home/agent/.config/x"); "a/workspace/b"')
    assert '"/home/user/workspace/.mcpworld/vscode/C-Plus-Plus/bubble_sort.cpp"' in mapped
    assert '"/workspace/PC-Canary/x.js"' in mapped  # the checkout is resolved elsewhere (author_path)
    assert 'open("/home/user/.config/x")' in mapped
    assert '"a/workspace/b"' in mapped  # not a path of their machine


def _task(tmp_path: Path):
    folder = tmp_path / "tests" / "tasks" / "vscode" / "task02_wordReplaceInFile"
    folder.mkdir(parents=True)
    (folder / "hooker.js").write_text(HOOK)
    (folder / "handler.py").write_text("def message_handler(message, logger, task_parameter):\n    return None\n")
    config = {
        "instruction_template": "Edit ${expected_path}.",
        "task_parameters": {
            "expected_path": "/workspace/.mcpworld/vscode/C-Plus-Plus/bubble_sort.cpp",
            "breakpoints": {"78": "i==2"},
            "hit_line": 98,
            "files": ["/workspace/.mcpworld/a", "b"],
        },
        "evaluation_setup": {
            "scripts": [{"role": "hook", "path": "hooker.js"}, {"role": "handler", "path": "handler.py"}],
            "evaluator_type": "IpcInjector",
            "evaluate_on_completion": True,
        },
    }
    (folder / "config.json").write_text(json.dumps(config))
    return load_mcpworld(folder / "config.json")


def test_the_handler_gets_its_parameters_in_this_episodes_home(tmp_path):
    task = _task(tmp_path)
    assert task.instruction == "Edit /workspace/.mcpworld/vscode/C-Plus-Plus/bubble_sort.cpp."  # as written
    home = tmp_path / "episode" / "home"
    env = SimpleNamespace(home=home, map_paths=lambda text: Environment.map_paths(env, text))
    params = handler_params(task, env)
    assert params == {
        "expected_path": f"{home}/workspace/.mcpworld/vscode/C-Plus-Plus/bubble_sort.cpp",
        "breakpoints": {"78": "i==2"},
        "hit_line": 98,
        "files": [f"{home}/workspace/.mcpworld/a", "b"],
    }


def test_the_hooks_source_names_this_episodes_home(tmp_path):
    task = _task(tmp_path)
    home = tmp_path / "episode" / "home"
    env = SimpleNamespace(home=home)
    live = LiveHooks(
        "vscode",
        list(task.handler_setup.js_hooks),
        lambda kind, **data: None,
        rewrite=lambda source: Environment.map_paths(env, author_home_text(source)),
    )
    try:
        assert f'"{home}/workspace/.mcpworld/vscode/C-Plus-Plus/bubble_sort.cpp"' in live.source
        assert "/home/user" not in live.source
    finally:
        live.close()


SOLUTIONS = Path(__file__).resolve().parents[2] / "mcpworld" / "data" / "solutions" / "pccanary"


def test_the_pccanary_solutions_load_under_their_task_ids():
    """Each VS Code one is attached by the id mcpworld gives the task (``vscode/<task folder>``); a suite's
    solution files are not rendered with the task's parameters, so they hold the values themselves."""
    from mcpworld.tasks.solutions import load_solutions

    vscode = {task_id: found for task_id, found in load_solutions(SOLUTIONS).items() if task_id.startswith("vscode/")}
    assert len(vscode) == 15  # docs/pccanary_certificate.md (task19 added)
    for task_id, (path, solution) in vscode.items():
        assert task_id == f"vscode/{path.stem}" and path.parent.name == "vscode"
        assert solution.get("gui") and "{{" not in path.read_text()


def test_the_instruction_names_the_suites_paths_unless_the_desktop_lacks_them():
    from mcpworld.tasks.instructions import shown

    text = "Open /workspace/.mcpworld/a.cpp, /home/agent/b, /FreeCAD/c and /home/user/d."
    assert shown(text, True) == text
    assert shown(text, False) == "Open ~/workspace/.mcpworld/a.cpp, ~/b, ~/FreeCAD/c and ~/d."


def test_an_app_event_naming_the_instructions_path_reaches_the_handler_as_the_homes(tmp_path):
    """The agent follows the instruction: it saves /FreeCAD/x.FCStd (the desktop's view of ~/FreeCAD);
    the hook reports that path; the handler compares it with its parameter, the home's path."""
    from mcpworld.evaluation.handler import start_handler

    folder = tmp_path / "tests" / "tasks" / "freecad" / "t1"
    folder.mkdir(parents=True)
    (folder / "handler.py").write_text(
        "def message_handler(message, logger, p):\n"
        "    if message.get('payload', {}).get('saved') == p['source_path'] + p['filename']:\n"
        "        return {'status': 'success', 'reason': 'saved where asked'}\n"
    )
    (folder / "config.json").write_text(
        json.dumps(
            {
                "instruction_template": "Save to ${source_path}${filename}",
                "task_parameters": {"source_path": "/FreeCAD/", "filename": "x.FCStd"},
                "evaluation_setup": {"scripts": [{"role": "handler", "path": "handler.py"}]},
            }
        )
    )
    task = load_mcpworld(folder / "config.json")
    assert task.instruction == "Save to /FreeCAD/x.FCStd"
    home = tmp_path / "home"
    env = SimpleNamespace(home=home, map_paths=lambda text: Environment.map_paths(env, text))
    proc = start_handler(task, env)  # type: ignore[arg-type]
    assert proc is not None
    proc.send({"type": "send", "payload": {"saved": "/FreeCAD/x.FCStd"}})
    assert proc.complete().score == 1.0
