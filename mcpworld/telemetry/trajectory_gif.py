"""A small animated GIF of an episode's screenshots, to watch a trajectory in the MLflow UI
without opening dozens of files."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

MAX_WIDTH = 640
MAX_FRAMES = 120


def make_gif(screens: Path, out: Path, frame_ms: int = 700) -> Path | None:
    """``screens/*.jpg|png`` in order → ``out`` (None when there is no screenshot)."""
    paths = sorted(p for p in Path(screens).glob("*") if p.suffix in (".jpg", ".jpeg", ".png"))
    if not paths:
        return None
    if len(paths) > MAX_FRAMES:  # keep the first and last, thin the middle evenly
        step = len(paths) / MAX_FRAMES
        paths = [paths[int(i * step)] for i in range(MAX_FRAMES - 1)] + [paths[-1]]
    frames = []
    for path in paths:
        with Image.open(path) as image:
            frame = image.convert("RGB")
        if frame.width > MAX_WIDTH:
            frame = frame.resize((MAX_WIDTH, round(frame.height * MAX_WIDTH / frame.width)))
        frames.append(frame.convert("P", palette=Image.Palette.ADAPTIVE, colors=128))
    frames[0].save(out, save_all=True, append_images=frames[1:], duration=frame_ms, loop=0, optimize=True)
    return out
