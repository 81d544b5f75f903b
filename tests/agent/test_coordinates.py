"""A click at a known target lands on it for every (model file × resolution file) pair.

The desktop draws a small target; the "model" finds it in the screenshot it was actually sent
(downscaled or not) and answers in its own convention; the click must hit the target's pixels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from PIL import Image, ImageDraw

from mcpworld.agent.tools import build_toolset
from mcpworld.agent.tools.computer import image_size
from tests.helpers.environments import FakeDesktop

CONF = Path(__file__).resolve().parents[2] / "mcpworld" / "conf"
MODELS = {
    p.stem: yaml.safe_load(p.read_text()).get("model", yaml.safe_load(p.read_text()))
    for p in sorted((CONF / "model").glob("*.yaml"))
}
RESOLUTIONS = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((CONF / "resolution").glob("*.yaml"))}
TARGET = 9  # px, odd so it has a centre pixel


class TargetDesktop(FakeDesktop):
    def __init__(self, root: Path, width: int, height: int, target: tuple[int, int]):
        super().__init__(root, width, height)
        self.target = target

    def screenshot(self) -> Image.Image:
        image = Image.new("RGB", (self.width, self.height), "white")
        x, y = self.target
        ImageDraw.Draw(image).rectangle([x, y, x + TARGET - 1, y + TARGET - 1], fill="red")
        return image


def seen_centre(image: Image.Image) -> tuple[float, float]:
    """Where the model sees the target: the centroid of the reddish pixels of the image it got."""
    a = np.asarray(image.convert("RGB")).astype(int)
    ys, xs = np.nonzero((a[:, :, 0] > 150) & (a[:, :, 1] < 120))
    return float(xs.mean()), float(ys.mean())


def answer(model: dict[str, Any], image: Image.Image) -> list[float]:
    x, y = seen_centre(image)
    if model.get("coordinates") == "normalized_1000":
        return [round(x / image.width * 1000), round(y / image.height * 1000)]
    return [round(x), round(y)]


@pytest.mark.parametrize("resolution", sorted(RESOLUTIONS))
@pytest.mark.parametrize("model_name", sorted(MODELS))
async def test_click_hits_the_target(tmp_path: Path, model_name: str, resolution: str) -> None:
    model, res = MODELS[model_name], RESOLUTIONS[resolution]
    width, height = res["width"], res["height"]
    for n, target in enumerate([(0, 0), (width // 3, height // 2), (width - TARGET, height - TARGET)]):
        desk = TargetDesktop(tmp_path / str(n), width, height, target)
        tools = build_toolset(["computer", "done"], desk, model.get("coordinates", "pixels"), None, model.get("image_max"))
        computer = tools["computer"]
        shot = (await computer.call({"action": "screenshot"})).image
        assert shot.size == image_size((width, height), model.get("image_max"))
        await computer.call({"action": "left_click", "coordinate": answer(model, shot)})
        click = desk.actions[-1]
        hit_x = target[0] <= click["x"] < target[0] + TARGET
        hit_y = target[1] <= click["y"] < target[1] + TARGET
        assert hit_x and hit_y, (model_name, resolution, target, shot.size, click)


def test_large_screens_are_downscaled_for_models_that_need_it() -> None:
    assert image_size((1920, 1080), MODELS["claude_3_7_sonnet"]["image_max"]) == (1366, 768)
    assert image_size((1000, 1000), MODELS["claude_3_7_sonnet"]["image_max"]) == (1000, 1000)
    assert image_size((1920, 1080), None) == (1920, 1080)
