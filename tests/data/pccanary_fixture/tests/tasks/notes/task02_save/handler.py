"""Judges the Frida hook's save events; at completion (HookManager sends it to the handler itself) a
note never saved with the line is a no."""

SAVED = {"note": False, "text": False}


def message_handler(message, logger, task_parameter):
    if message.get("type") != "send":
        return None
    payload = message.get("payload") or {}
    event = payload.get("event")
    if event == "file_saved" and str(payload.get("path", "")).endswith("/" + task_parameter["note"]):
        updates = [] if SAVED["note"] else [{"status": "key_step", "index": 1}]
        SAVED["note"] = True
        if task_parameter["text"] in payload.get("text", "") and not SAVED["text"]:
            SAVED["text"] = True
            updates += [{"status": "key_step", "index": 2}, {"status": "success", "reason": "the line was saved"}]
        return updates or None
    if event == "evaluate_on_completion" and not SAVED["text"]:
        why = "saved without the line" if SAVED["note"] else "never saved"
        return [{"status": "error", "type": "not_saved", "message": f"{task_parameter['note']} {why}"}]
    return None
