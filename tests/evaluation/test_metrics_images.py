from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageEnhance, ImageOps

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.images import (
    check_brightness_decrease_and_structure_sim,
    check_contrast_increase_and_structure_sim,
    check_green_background,
    check_image_file_size,
    check_image_mirror,
    check_image_size,
    check_palette_and_structure_sim,
    check_saturation_increase_and_structure_sim,
    check_structure_sim,
    check_structure_sim_resized,
    check_structure_sim_with_threshold,
    check_textbox_on_leftside,
    check_triangle_position,
    compare_image_list,
    compare_images,
    decrease_brightness,
    increase_saturation,
)
from mcpworld.evaluation.registry import METRICS

W, H = 96, 64


def scene(seed: int = 0, size: tuple[int, int] = (W, H)) -> Image.Image:
    """A colourful, asymmetric test picture: a gradient with a few shapes."""
    w, h = size
    x = np.linspace(0, 1, w)[None, :]
    y = np.linspace(0, 1, h)[:, None]
    rgb = np.stack([60 + 150 * x + 0 * y, 50 + 120 * y + 0 * x, 180 - 100 * x * y], axis=-1)
    img = Image.fromarray(rgb.astype(np.uint8))
    draw = ImageDraw.Draw(img)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        x0, y0 = int(rng.integers(0, w - 20)), int(rng.integers(0, h - 20))
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        draw.ellipse([x0, y0, x0 + int(rng.integers(8, 20)), y0 + int(rng.integers(8, 20))], fill=colour)
    draw.rectangle([4, 4, 30, 14], fill=(250, 240, 20))
    return img


@pytest.fixture
def save(tmp_path: Path):
    def write(name: str, img: Image.Image, **params) -> str:
        path = tmp_path / name
        img.save(path, **params)
        return str(path)

    return write


@pytest.fixture
def base(save) -> str:
    return save("base.png", scene())


@pytest.fixture
def other(save) -> str:
    return save("other.png", scene(seed=7).transpose(Image.Transpose.ROTATE_180))


@pytest.fixture
def not_image(tmp_path: Path) -> str:
    path = tmp_path / "fake.png"
    path.write_text("not an image")
    return str(path)


def test_all_registered():
    names = {
        "check_structure_sim",
        "check_structure_sim_resized",
        "check_structure_sim_with_threshold",
        "check_image_size",
        "check_image_file_size",
        "check_image_mirror",
        "check_brightness_decrease_and_structure_sim",
        "check_saturation_increase_and_structure_sim",
        "check_contrast_increase_and_structure_sim",
        "check_palette_and_structure_sim",
        "check_green_background",
        "check_triangle_position",
        "check_textbox_on_leftside",
        "compare_images",
        "compare_image_list",
        "increase_saturation",
        "decrease_brightness",
    }
    assert names <= set(METRICS)
    assert all(METRICS[n].__doc__ for n in names)


def test_check_structure_sim(save, base, other, not_image, tmp_path):
    img = scene()
    assert check_structure_sim(base, base) == 1.0
    assert check_structure_sim(save("q.jpg", img, quality=95), base) == 1.0
    assert check_structure_sim(other, base) == 0.0
    # mode differences: an opaque RGBA copy and a palette copy of the same picture
    assert check_structure_sim(save("rgba.png", img.convert("RGBA")), base) == 1.0
    grey = img.convert("L")
    assert check_structure_sim(save("grey.png", grey), save("grey_rgb.png", grey.convert("RGB"))) == 1.0
    # as OSWorld (Pillow's convert): alpha is dropped, so the colour under transparent pixels counts
    holes = np.array(img.convert("RGBA"))
    holes[:, : W // 2, 3] = 0
    holes[:, : W // 2, :3] = 0
    assert check_structure_sim(save("holes.png", Image.fromarray(holes)), base) == 0.0
    # size mismatch: this metric does not resize
    assert check_structure_sim(save("big.png", img.resize((W * 2, H * 2))), base) == 0.0
    # nothing produced / not an image
    assert check_structure_sim(None, base) == 0.0
    assert check_structure_sim(base, None) == 0.0
    assert check_structure_sim(str(tmp_path / "missing.png"), base) == 0.0
    assert check_structure_sim(not_image, base) == 0.0
    # OSWorld's function takes no options: an unknown option is an error, not a silent threshold
    with pytest.raises(TypeError):
        check_structure_sim(base, base, ssim_threshold=0.5)


def test_tiny_images(save):
    # as OSWorld: under 7 px on a side is never "the same structure", even for identical images
    dot = Image.new("RGB", (2, 2), (10, 20, 30))
    assert check_structure_sim(save("a.png", dot), save("b.png", dot)) == 0.0
    small = scene().resize((5, 5))
    assert check_structure_sim(save("e.png", small), save("f.png", small)) == 0.0
    # ... except check_structure_sim_with_threshold, which shrinks its window to fit
    assert check_structure_sim_with_threshold(save("g.png", small), save("h.png", small)) == 1.0


def test_check_structure_sim_with_threshold(save, base, other):
    blurred = save("blur.png", scene().resize((W // 2, H // 2)).resize((W, H)))
    assert check_structure_sim_with_threshold(base, base) == 1.0
    assert check_structure_sim_with_threshold(blurred, base) == 1.0
    assert check_structure_sim_with_threshold(blurred, base, ssim_threshold=0.999) == 0.0
    assert check_structure_sim_with_threshold(other, base) == 0.0
    assert check_structure_sim_with_threshold(None, base) == 0.0
    # a result of another size is resized to the gold's first (OSWorld), not rejected
    half = save("half.png", scene().resize((W // 2, H // 2), Image.Resampling.LANCZOS))
    assert check_structure_sim_with_threshold(half, base) == 1.0


def test_check_structure_sim_resized(save, base, other):
    img = scene()
    half = save("half.png", img.resize((W // 2, H // 2), Image.Resampling.LANCZOS))
    assert check_structure_sim_resized(half, base) == 1.0
    assert check_structure_sim(half, base) == 0.0
    # the resized layer on a larger transparent canvas: only the opaque content is compared
    canvas = Image.new("RGBA", (W * 2, H * 2), (0, 0, 0, 0))
    canvas.paste(img.resize((W // 2, H // 2)).convert("RGBA"), (30, 40))
    assert check_structure_sim_resized(save("canvas.png", canvas), base) == 1.0
    assert check_structure_sim_resized(save("empty.png", Image.new("RGBA", (W, H), (0, 0, 0, 0))), base) == 0.0
    assert check_structure_sim_resized(save("other_half.png", Image.open(other).resize((W // 2, H // 2))), base) == 0.0
    assert check_structure_sim_resized(None, base) == 0.0


def test_check_image_size(save, not_image):
    plain = save("plain.png", scene())
    assert check_image_size(plain, {"width": W, "height": H}) == 1.0
    assert check_image_size(plain, {"height": H}) == 1.0
    assert check_image_size(plain, {"height": H + 1}) == 0.0
    assert check_image_size(plain, {"width": W, "height": H, "ignore_transparent": True}) == 1.0
    canvas = Image.new("RGBA", (200, 100), (0, 0, 0, 0))
    canvas.paste(Image.new("RGBA", (30, 20), (255, 0, 0, 255)), (50, 10))
    layer = save("layer.png", canvas)
    assert check_image_size(layer, {"width": 30, "height": 20, "ignore_transparent": True}) == 1.0
    assert check_image_size(layer, {"width": 30, "height": 20}) == 0.0  # the flag is needed
    assert check_image_size(layer, {"width": 200, "height": 100}) == 1.0
    # OSWorld's precedence slip: an image with a transparency key is measured by its content
    # even without ignore_transparent
    keyed = Image.new("P", (200, 100), 0)
    keyed.paste(1, (50, 10, 80, 30))
    keyed_path = save("keyed.png", keyed, transparency=0)
    assert check_image_size(keyed_path, {"width": 30, "height": 20}) == 1.0
    assert check_image_size(keyed_path, {"width": 200, "height": 100}) == 0.0
    assert check_image_size(None, {"height": H}) == 0.0
    assert check_image_size(not_image, {"height": H}) == 0.0
    # no width/height constraint: OSWorld scores any readable image 1.0 (we used to raise)
    assert check_image_size(plain, {"ignore_transparent": True}) == 1.0
    assert check_image_size(plain, {}) == 1.0
    assert check_image_size(not_image, {}) == 0.0
    with pytest.raises(UserError):
        check_image_size(plain, None)


def test_check_image_file_size(save, base, not_image):
    size = Path(base).stat().st_size
    assert check_image_file_size(base, {"max_size": size + 1}) == 1.0
    assert check_image_file_size(base, {"max_size": 500_000}) == 1.0
    assert check_image_file_size(base, {"max_size": size}) == 0.0  # strictly smaller, as OSWorld
    assert check_image_file_size(not_image, {"max_size": 500_000}) == 1.0  # OSWorld only looks at the size
    assert check_image_file_size(None, {"max_size": 500_000}) == 0.0
    with pytest.raises(UserError, match="max_size"):
        check_image_file_size(base, {})
    with pytest.raises(UserError, match="max_size"):
        check_image_file_size(base, {"max_size": "500KB"})


def test_check_image_mirror(save, base, other):
    img = scene()
    assert check_image_mirror(save("mirror.png", ImageOps.mirror(img)), base) == 1.0
    assert check_image_mirror(base, base) == 0.0
    assert check_image_mirror(save("flip.png", ImageOps.flip(img)), base) == 0.0
    assert check_image_mirror(save("mirror_other.png", ImageOps.mirror(Image.open(other))), base) == 0.0
    assert check_image_mirror(None, base) == 0.0


def test_check_brightness_decrease_and_structure_sim(save, base, other):
    img = scene()
    darker = save("dark.png", ImageEnhance.Brightness(img).enhance(0.7))
    assert check_brightness_decrease_and_structure_sim(darker, base) == 1.0
    assert check_brightness_decrease_and_structure_sim(save("bright.png", ImageEnhance.Brightness(img).enhance(1.3)), base) == 0.0
    assert check_brightness_decrease_and_structure_sim(base, base) == 0.0
    dark_other = save("dark_other.png", ImageEnhance.Brightness(Image.open(other)).enhance(0.5))
    assert check_brightness_decrease_and_structure_sim(dark_other, base) == 0.0
    assert check_brightness_decrease_and_structure_sim(darker, base, threshold=0.0) == 0.0
    assert check_brightness_decrease_and_structure_sim(None, base) == 0.0
    assert check_brightness_decrease_and_structure_sim(darker, None) == 0.0
    # a darker result of another size is resized to the original's (OSWorld), not rejected
    small_dark = save("small_dark.png", ImageEnhance.Brightness(img).enhance(0.7).resize((W // 2, H // 2)))
    assert check_brightness_decrease_and_structure_sim(small_dark, base) == 1.0
    # an all-black original: OSWorld divides by zero, which scores 0
    black = save("black.png", Image.new("RGB", (W, H)))
    assert check_brightness_decrease_and_structure_sim(black, base) == 0.0
    with pytest.raises(UserError, match="threshold"):
        check_brightness_decrease_and_structure_sim(darker, base, threshold="low")


def test_check_saturation_increase_and_structure_sim(save, base, other):
    img = scene()
    vivid = save("vivid.png", ImageEnhance.Color(img).enhance(1.5))
    assert check_saturation_increase_and_structure_sim(vivid, base) == 1.0
    assert check_saturation_increase_and_structure_sim(save("dull.png", ImageEnhance.Color(img).enhance(0.5)), base) == 0.0
    assert check_saturation_increase_and_structure_sim(base, base) == 0.0
    vivid_other = save("vivid_other.png", ImageEnhance.Color(Image.open(other)).enhance(1.5))
    assert check_saturation_increase_and_structure_sim(vivid_other, base) == 0.0
    # an RGBA result works (the reference's direct RGBA→HSV conversion raised)
    vivid_rgba = save("vivid_rgba.png", ImageEnhance.Color(img).enhance(1.5).convert("RGBA"))
    assert check_saturation_increase_and_structure_sim(vivid_rgba, base) == 1.0
    assert check_saturation_increase_and_structure_sim(None, base) == 0.0


def test_check_contrast_increase_and_structure_sim(save, base, other):
    img = scene()
    assert check_contrast_increase_and_structure_sim(save("hi.png", ImageEnhance.Contrast(img).enhance(1.5)), base) == 1.0
    assert check_contrast_increase_and_structure_sim(save("lo.png", ImageEnhance.Contrast(img).enhance(0.6)), base) == 0.0
    hi_other = save("hi_other.png", ImageEnhance.Contrast(Image.open(other)).enhance(2.0))
    assert check_contrast_increase_and_structure_sim(hi_other, base) == 0.0
    assert check_contrast_increase_and_structure_sim(None, base) == 0.0


def test_check_palette_and_structure_sim(save, base, other):
    palette = save("palette.png", scene().quantize(256))
    assert Image.open(palette).mode == "P"
    assert check_palette_and_structure_sim(palette, base) == 1.0
    assert check_palette_and_structure_sim(base, base) == 0.0  # not indexed
    assert check_palette_and_structure_sim(save("pal_other.png", Image.open(other).quantize(256)), base) == 0.0
    assert check_palette_and_structure_sim(None, base) == 0.0


def _figure(background, size=(60, 60)) -> Image.Image:
    img = Image.new("RGB", size, background)
    ImageDraw.Draw(img).ellipse([20, 10, 40, 50], fill=(0, 0, 0))
    return img


def test_check_green_background(save):
    original = save("orig.png", _figure("white"))
    assert check_green_background(save("green.png", _figure((30, 200, 40))), original) == 1.0
    assert check_green_background(save("blue.png", _figure((30, 40, 200))), original) == 0.0
    half = _figure("white")
    half.paste((30, 200, 40), (0, 0, 30, 60))
    assert check_green_background(save("half.png", half), original) == 0.0
    assert check_green_background(save("small.png", _figure((30, 200, 40)).resize((30, 30))), original) == 0.0
    # as OSWorld: an all-black original has no background, so anything passes
    assert check_green_background(save("g.png", _figure((30, 200, 40))), save("black.png", Image.new("RGB", (60, 60)))) == 1.0
    # OSWorld indexes pixels [x, y]: a non-square original always fails (it raises there)
    wide_original = save("wide_orig.png", _figure("white", (120, 60)))
    assert check_green_background(save("wide_green.png", _figure((30, 200, 40), (120, 60))), wide_original) == 0.0
    # a larger result is fine: only the original's area is looked at
    assert check_green_background(save("big_green.png", Image.new("RGB", (90, 90), (30, 200, 40))), original) == 1.0
    assert check_green_background(None, original) == 0.0


def test_compare_images(save, base, other, not_image):
    assert compare_images(base, base) == 1.0
    lower = compare_images(other, base)
    assert 0.0 <= lower < 0.5
    half = save("half.png", scene().resize((W // 2, H // 2), Image.Resampling.LANCZOS))
    assert compare_images(half, base) > 0.8  # resized to the common (smaller) size
    # sizes where the tuple-min of the reference would upscale one side
    tall = save("tall.png", scene(size=(40, 200)))
    wide = save("wide.png", scene(size=(80, 30)))
    assert 0.0 <= compare_images(tall, wide) <= 1.0
    noisy = np.asarray(scene()).astype(np.int16) + np.random.default_rng(1).integers(-40, 40, (H, W, 3))
    noisy_path = save("noisy.png", Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)))
    raw = compare_images(noisy_path, base)
    assert 0.2 < raw < 0.99
    assert compare_images(noisy_path, base, reference_base_result=raw + 0.005) == 0.0
    assert compare_images(noisy_path, base, reference_base_result=0.1) == pytest.approx((raw - 0.1) / 0.9)
    assert compare_images(None, base) == 0.0
    assert compare_images(not_image, base) == 0.0
    with pytest.raises(UserError, match="reference_base_result"):
        compare_images(base, base, reference_base_result=1.0)


def test_compare_image_list(save, base, other, tmp_path):
    copy = save("copy.png", scene())
    assert compare_image_list([base, other], [copy, other]) == 1.0
    assert compare_image_list(base, copy) == 1.0
    assert compare_image_list([base, base], [copy, other]) == 0.0
    # pairs are taken up to the shorter list, as OSWorld (so empty lists pass)
    assert compare_image_list([base], [copy, other]) == 1.0
    assert compare_image_list([], []) == 1.0
    assert compare_image_list([base, None], [copy, other]) == 0.0
    assert compare_image_list(None, copy) == 0.0
    assert compare_image_list(str(tmp_path / "missing.png"), copy) == 0.0
    # JPEG is lossy: not pixel-equal
    assert compare_image_list(save("lossy.jpg", scene(), quality=80), base) == 0.0
    # the result is converted to the gold's mode; as OSWorld, Pillow's getbbox of an RGBA
    # difference looks at alpha only, so two fully transparent images always match
    assert compare_image_list(save("rgba.png", scene().convert("RGBA")), base) == 1.0
    clear_red = save("clear_red.png", Image.new("RGBA", (8, 8), (255, 0, 0, 0)))
    clear_blue = save("clear_blue.png", Image.new("RGBA", (8, 8), (0, 0, 255, 0)))
    assert compare_image_list(clear_red, clear_blue) == 1.0
    assert compare_image_list(save("big.png", scene(size=(W + 1, H))), base) == 0.0
    # a flat image resized to the gold's size stays identical (OSWorld resizes, not rejects)
    flat = save("flat.png", Image.new("RGB", (16, 16), (10, 20, 30)))
    assert compare_image_list(save("flat_big.png", Image.new("RGB", (32, 32), (10, 20, 30))), flat) == 1.0


def _triangle(offset: tuple[int, int]) -> Image.Image:
    img = Image.new("RGB", (200, 100), "white")
    cx, cy = offset
    ImageDraw.Draw(img).polygon([(cx - 15, cy + 14), (cx + 15, cy + 14), (cx, cy - 16)], fill=(240, 200, 0))
    return img


def test_check_triangle_position(save, not_image):
    # OSWorld takes index 1 of the colours sorted by ascending count: with two colours that is
    # the background, whose centroid is near the centre unless the triangle is large and off-centre
    assert check_triangle_position(save("centre.png", _triangle((100, 50)))) == 1.0
    assert check_triangle_position(save("corner.png", _triangle((30, 25)))) == 1.0
    big = Image.new("RGB", (100, 100), "white")
    ImageDraw.Draw(big).polygon([(0, 0), (60, 0), (0, 60)], fill=(240, 200, 0))
    assert check_triangle_position(save("big_corner.png", big)) == 0.0
    # with a third, rarer colour the triangle is the one that counts
    marked = _triangle((30, 25))
    ImageDraw.Draw(marked).rectangle([0, 0, 1, 1], fill=(1, 2, 3))
    assert check_triangle_position(save("marked_corner.png", marked)) == 0.0
    marked = _triangle((100, 50))
    ImageDraw.Draw(marked).rectangle([0, 0, 1, 1], fill=(1, 2, 3))
    assert check_triangle_position(save("marked_centre.png", marked)) == 1.0
    assert check_triangle_position(save("grey.png", _triangle((100, 50)).convert("L"))) == 0.0
    assert check_triangle_position(save("blank.png", Image.new("RGB", (50, 50), "white"))) == 0.0
    assert check_triangle_position(None) == 0.0
    assert check_triangle_position(not_image) == 0.0


def _text(x: int) -> Image.Image:
    img = Image.new("RGBA", (200, 80), (255, 255, 255, 0))
    ImageDraw.Draw(img).text((x, 30), "Hello", fill=(0, 0, 0, 255))
    return img


def test_check_textbox_on_leftside(save):
    assert check_textbox_on_leftside(save("left.png", _text(2))) == 1.0
    assert check_textbox_on_leftside(save("middle.png", _text(90))) == 0.0
    assert check_textbox_on_leftside(save("blank.png", Image.new("RGB", (200, 80), "white"))) == 0.0
    assert check_textbox_on_leftside(None) == 0.0
    # as OSWorld, alpha is dropped: transparent black pixels count as dark
    assert check_textbox_on_leftside(save("clear_black.png", Image.new("RGBA", (200, 80), (0, 0, 0, 0)))) == 1.0


def test_increase_saturation_and_decrease_brightness(save, base):
    img = scene()
    vivid = save("vivid.png", ImageEnhance.Color(img).enhance(1.4))
    dark = save("dark.png", ImageEnhance.Brightness(img).enhance(0.8))
    # OSWorld's helpers compare (image1, image2) = (result, expected): 1 when the *expected*
    # image is the more saturated / the darker one; kept so a task scores as in OSWorld
    assert increase_saturation(base, vivid) == 1.0
    assert increase_saturation(vivid, base) == 0.0
    assert increase_saturation(None, base) == 0.0
    assert decrease_brightness(base, dark) == 1.0
    assert decrease_brightness(dark, base) == 0.0
    assert decrease_brightness(dark, None) == 0.0


def test_check_file_exists_and_structure_sim(save, base, other, tmp_path):
    from mcpworld.evaluation.metrics.images import check_file_exists_and_structure_sim

    assert check_file_exists_and_structure_sim(save("export.jpg", scene(), quality=90), base) == 1.0
    assert check_file_exists_and_structure_sim(other, base) == 0.0
    assert check_file_exists_and_structure_sim(str(tmp_path / "not_exported.jpg"), base) == 0.0
    assert check_file_exists_and_structure_sim(None, base) == 0.0
