"""StateInspector hook: remembers the note at the start, reports it when the agent is done."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "common"))
from vault import vault  # noqa: E402

BEFORE = {}


def inspector_on_start():
    note = vault() / "Agenda.md"
    BEFORE["text"] = note.read_text() if note.exists() else None


def inspector_on_completion(eval_handler):
    note = vault() / "Agenda.md"
    eval_handler({"type": "send", "payload": {"event": "note_state", "exists": note.exists(),
                                              "text": note.read_text() if note.exists() else "",
                                              "before": BEFORE.get("text")}}, None)
