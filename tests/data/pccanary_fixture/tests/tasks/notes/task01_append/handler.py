"""Judges the note state the hook reports; the index file named by sql_path must be there too."""
import os

CONFIG = {}


def register_handlers(evaluator):
    CONFIG.update(evaluator.config)
    if not os.path.exists(evaluator.config["sql_path"]):
        raise RuntimeError(f"index not found at {evaluator.config['sql_path']}")
    return message_handler


def message_handler(message, logger, task_parameter):
    payload = message.get("payload") or {}
    if payload.get("event") != "note_state":
        return None
    if not payload["exists"]:
        return [{"status": "error", "type": "missing", "message": f"{task_parameter['note']} not found"}]
    updates = [{"status": "key_step", "index": 1}]
    if task_parameter["text"] in payload["text"] and task_parameter["text"] not in (payload["before"] or ""):
        updates += [{"status": "key_step", "index": 2}, {"status": "success", "reason": "line appended"}]
    return updates
