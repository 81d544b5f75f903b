"""Says yes on the 1st, 3rd, 5th … completion it sees (counted in a file beside it), no otherwise."""

from pathlib import Path

COUNTER = Path(__file__).with_name("completions")


def message_handler(message, logger, task_parameter):
    if (message.get("payload") or {}).get("event") != "evaluate_on_completion":
        return None
    seen = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(seen))
    if seen % 2:
        return [{"status": "success", "reason": f"completion {seen} is odd"}]
    return [{"status": "error", "type": "even", "message": f"completion {seen} is even"}]
