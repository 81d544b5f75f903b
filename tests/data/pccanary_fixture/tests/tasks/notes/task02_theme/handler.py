"""Reacts to the hook's theme_changed event only (never to the completion message)."""


def message_handler(message, logger, task_parameter):
    payload = message.get("payload") or {}
    if payload.get("event") == "theme_changed" and payload.get("theme") == task_parameter["theme"]:
        return [{"status": "key_step", "index": 1}, {"status": "success", "reason": "theme applied"}]
    if payload.get("event") == "theme_changed":
        return [{"status": "error", "type": "wrong_theme", "message": payload.get("theme")}]
    return None
