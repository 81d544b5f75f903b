"""The tab size as asked, and the rest of the file as it was at the start."""

start = None


def message_handler(message, logger, task_parameter):
    global start
    kind = message.get("event_type")
    if kind == "read_origin_content":
        start = dict(message.get("data") or {})
        return None
    if kind != "evaluate_on_completion":
        return None
    end = dict(message.get("data") or {})
    size = end.pop("editor.tabSize", None)
    before = {k: v for k, v in (start or {}).items() if k != "editor.tabSize"}
    if size == task_parameter.get("tab_size") and end == before:
        return [{"status": "key_step", "index": 1}, {"status": "success", "reason": f"tab size {size}, nothing else changed"}]
    return [{"status": "error", "type": "evaluate_on_completion",
             "message": f"tab size {size}, other settings {end} (were {before})"}]
