"""The theme in force at completion decides."""


def message_handler(message, logger, task_parameter):
    if message.get("event_type") != "evaluate_on_completion":
        return None
    expected = task_parameter.get("theme")
    if message.get("data") == expected:
        return [{"status": "key_step", "index": 1}, {"status": "success", "reason": f"theme is {expected}"}]
    return [{"status": "error", "type": "evaluate_on_completion", "message": f"theme is {message.get('data')}, not {expected}"}]
