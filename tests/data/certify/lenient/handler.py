"""Says yes at completion, whatever was done."""


def message_handler(message, logger, task_parameter):
    if (message.get("payload") or {}).get("event") == "evaluate_on_completion":
        return [{"status": "success", "reason": "always"}]
    return None
