"""The decoration on at completion decides."""


def message_handler(message, logger, task_parameter):
    if message.get("event_type") != "evaluate_on_completion":
        return None
    if message.get("blameon"):
        return [{"status": "key_step", "index": 1}, {"status": "success", "reason": "git blame decoration on"}]
    return [{"status": "error", "type": "evaluate_on_completion", "message": "git blame decoration off"}]
