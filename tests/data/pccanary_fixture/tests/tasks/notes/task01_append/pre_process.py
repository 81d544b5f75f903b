"""Started in the background before the app (as PC-Canary's evaluator starts pre_process): writes the
index the handler's sql_path names, then keeps serving as upstream's pre_process scripts do."""
import os
import time
from pathlib import Path

index = Path(os.environ["HOME"]) / ".local" / "share" / "notes" / "index.txt"
index.parent.mkdir(parents=True, exist_ok=True)
index.write_text("Agenda.md\n")
time.sleep(3600)
