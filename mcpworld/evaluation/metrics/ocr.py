"""Text read off an image by OCR, with the Tesseract engine (Debian package ``tesseract-ocr``).

OSWorld uses EasyOCR, whose models are downloaded at first use (impossible offline) and which
needs PyTorch; Tesseract is a small apt package that runs on the CPU. Both join what they read
with spaces; Tesseract is run on the image as given (page segmentation mode 3, English). The two
engines misread different glyphs: both read a terminal's ``ls`` as ``1s`` at times, which is why
OSWorld's task accepts either.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from typing import Any

from mcpworld.core.errors import InfraError, UserError
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.metrics.images import _flatten, _open
from mcpworld.evaluation.registry import metric

TESSERACT = "tesseract"
OCR_TIMEOUT_S = 120.0
INSTALL_HINT = "apt-get install tesseract-ocr (make apt does it)"
# one thread: Tesseract's OpenMP threads spin-wait for each other; on 2 busy cores a screen read
# took 2.5 s wall and 2.0 s CPU with them, 0.4–0.7 s and 0.4 s without (the same words)
SINGLE_THREAD = {"OMP_THREAD_LIMIT": "1"}


def image_text(image: Any) -> str:
    """The words Tesseract reads in a Pillow image, joined by single spaces."""
    binary = shutil.which(TESSERACT)
    if binary is None:
        raise InfraError(f"OCR needs the Tesseract engine, which is not installed: {INSTALL_HINT}")
    png = io.BytesIO()
    _flatten(image).save(png, format="PNG")
    try:
        done = subprocess.run(
            [binary, "stdin", "stdout", "-l", "eng"],
            input=png.getvalue(),
            capture_output=True,
            timeout=OCR_TIMEOUT_S,
            env={**os.environ, **SINGLE_THREAD},
        )
    except subprocess.TimeoutExpired:
        raise InfraError(f"Tesseract did not finish within {OCR_TIMEOUT_S:g} s") from None
    if done.returncode != 0:
        raise InfraError(f"Tesseract failed ({done.returncode}): {done.stderr.decode(errors='replace').strip()[-300:]}")
    return " ".join(done.stdout.decode("utf-8", errors="replace").split())


@metric("compare_image_text")
def compare_image_text(result: Any, rules: Any) -> float:
    """1 when the text OCR reads in the image contains ``rules["text"]`` (case-sensitive substring).

    result: image path. rules: ``{type: "text", text: "..."}`` (the only type OSWorld has). An
    image Pillow cannot decode scores 0, including an X11 ``xwd`` dump saved under an image name
    (OSWorld converted those); a missing OCR engine is an infrastructure error.
    """
    name = "compare_image_text"
    kind = rule_value(rules, "type", name)
    wanted = rule_value(rules, "text", name)
    if kind != "text":
        raise UserError(f"metric {name!r}: rules 'type' must be 'text', got {kind!r}")
    if not isinstance(wanted, str) or not wanted:
        raise UserError(f"metric {name!r}: rules 'text' must be a non-empty string, got {wanted!r}")
    image = _open(result)
    if image is None:
        return 0.0
    return float(wanted in image_text(image))
