"""Auto save's mode and delay in force at completion decide."""


def message_handler(message, logger, task_parameter):
    if message.get("event_type") != "evaluate_on_completion":
        return None
    config = message.get("config") or {}
    got = (config.get("autoSave"), config.get("autoSaveDelay"))
    if got == (task_parameter.get("mode"), task_parameter.get("delay")):
        return [{"status": "key_step", "index": 1}, {"status": "success", "reason": f"auto save {got}"}]
    return [{"status": "error", "type": "evaluate_on_completion", "message": f"auto save {got}"}]
