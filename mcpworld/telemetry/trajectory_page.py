"""A small self-contained HTML page of an episode: each step's tool call, its result, and the
screenshot the model saw next — to read a trajectory in the MLflow UI in one place. Built from
files already on disk (trace.jsonl, screens/): no image is decoded or re-encoded, so it costs
milliseconds, where an animated GIF cost ≈ 0.4 s per episode."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

MIME = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp", ".gif": "image/gif"}
STYLE = (
    "body{font:14px sans-serif;margin:1em}div.step{border-top:1px solid #ccc;padding:.5em 0}"
    "code{background:#f4f4f4;padding:0 .3em}img{max-width:640px;display:block;margin:.3em 0}"
    ".bad{color:#b00}.meta{color:#555}"
)


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.name)}" src="data:{MIME.get(path.suffix, "image/jpeg")};base64,{data}">'


def make_page(events: list[dict[str, Any]], episode_dir: Path, out: Path) -> Path:
    """``trajectory.html`` for the episode in ``episode_dir`` (its trace events already read)."""
    start: dict[str, Any] = next((e for e in events if e.get("type") == "episode_start"), {})
    end: dict[str, Any] = next((e for e in reversed(events) if e.get("type") == "episode_end"), {})
    parts = [
        f"<!doctype html><meta charset=utf-8><title>{html.escape(str(start.get('task')))}</title>",
        f"<style>{STYLE}</style><h1>{html.escape(str(start.get('task')))}</h1>",
        f"<p>{html.escape(str(start.get('instruction') or ''))}</p>",
        f"<p class=meta>status {html.escape(str(end.get('status')))}, score {end.get('score')}, {end.get('duration_s')} s</p>",
    ]
    for event in events:
        kind = event.get("type")
        if kind == "observation" and event.get("screenshot"):
            shot = episode_dir / str(event["screenshot"])
            if shot.is_file():
                parts.append(_img(shot))
        elif kind == "llm_call" and event.get("text"):
            parts.append(f"<p class=meta>model: {html.escape(str(event['text'])[:500])}</p>")
        elif kind == "tool_call":
            said = event.get("error") or event.get("output") or ""
            parts.append(
                f"<div class=step><b>step {event.get('step')}</b> <code>{html.escape(str(event.get('tool')))}"
                f"({html.escape(str(event.get('args') or ''))})</code> "
                f"<span class={'ok' if event.get('ok') else 'bad'}>{html.escape(str(said)[:300])}</span></div>"
            )
    out.write_text("\n".join(parts), encoding="utf-8")
    return out
