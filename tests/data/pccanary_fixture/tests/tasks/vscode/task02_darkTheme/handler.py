"""Judges the IPC hook's messages: a theme change is key step 1 when it happens, the theme at
completion decides (key step 2 and success)."""


def message_handler(message, logger, task_parameter):
    expected = task_parameter.get("theme")
    kind = message.get("event_type")
    if kind == "theme_changed":
        return [{"status": "key_step", "index": 1}]
    if kind == "evaluate_on_completion":
        if message.get("data") == expected:
            return [{"status": "key_step", "index": 2}, {"status": "success", "reason": f"theme is {expected}"}]
        return [{"status": "error", "type": "evaluate_on_completion",
                 "message": f"theme is {message.get('data')}, not {expected}"}]
    return None
