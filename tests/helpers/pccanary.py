"""A PC-Canary (MCPWorld format) task of our own: its config.json and the handler.py that judges it,
for the loader's and the handler runtime's tests and the CLI's end-to-end test."""

HANDLER = """
import os
from pathlib import Path

def message_handler(message, logger, task_parameter):
    if message.get("event") != "check_note":
        return None
    note = Path(os.environ["HOME"]) / "workspace/.mcpworld/notes/vault" / task_parameter["note"]
    if not note.exists():
        return [{"status": "error", "type": "missing", "message": f"{note.name} not found"}]
    updates = [{"status": "key_step", "index": 1}]
    if task_parameter["text"] in note.read_text():
        updates += [{"status": "key_step", "index": 2}, {"status": "success", "reason": "text appended"}]
    return updates

def inspector_on_completion(eval_handler):
    eval_handler({"event": "check_note"}, None)
"""

CONFIG = {
    "task_id": 7,
    "task_name": "append",
    "description": "append text to a note",
    "application_info": {"name": "notes", "executable_path": "/bin/true", "args": []},
    "instruction_template": "Append '${text}' to ${note} in the vault.",
    "task_parameters": {"note": "Agenda.md", "text": "- review budget"},
    "evaluation_setup": {
        "scripts": [{"role": "hook", "path": "handler.py"}, {"role": "handler", "path": "handler.py"}],
        "timeout": 300,
        "evaluator_type": "StateInspector",
        "evaluate_on_completion": True,
    },
    "total_key_steps": 2,
    "events": {
        "note_found": {"description": "", "is_key_step": True, "key_step_index": 1, "key_step_name": "found the note"},
        "text_appended": {"is_key_step": True, "key_step_index": 2, "key_step_name": "appended the text"},
    },
    "mcp_servers": [{"command": "uvx", "args": ["mcp-obsidian"]}],
    "context_data": [{"from": "tests/context_data/notes/vault", "to": "/workspace/.mcpworld/notes/vault"}],
}
