"""Reading a presentation as OSWorld's slides.py does: its namespaces, fill and shape constants, and
the accessors both the comparison and the single-property checks use."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pptx import Presentation

log = logging.getLogger(__name__)

A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"
NS = {"a": A_NS, "p": P_NS}
SOLID, INHERITED = 1, 5  # MSO_FILL.SOLID, MSO_FILL.BACKGROUND (no own fill: the master's shows)
PICTURE, FREEFORM, TABLE = 13, 5, 19  # MSO_SHAPE_TYPE values OSWorld compares against


def open_presentation(path: Any) -> Any | None:
    """The presentation at a local path, or None when there is no such readable pptx file."""
    if not isinstance(path, (str, Path)) or not str(path) or not Path(path).is_file():
        return None
    try:
        return Presentation(str(path))
    except Exception as exc:  # not a zip, not a pptx package, broken XML …
        log.debug("cannot open presentation %s: %s", path, exc)
        return None


def background_rgb(slide: Any) -> Any:
    """The slide's solid background RGB, else the master's when the slide has no fill, else None."""
    fill = slide.background.fill
    if fill.type == SOLID:
        return fill.fore_color.rgb
    if fill.type == INHERITED:
        master_fill = slide.slide_layout.slide_master.background.fill
        return master_fill.fore_color.rgb if master_fill.type == SOLID else None
    return None


# ---------------------------------------------------------------------------------------------
# compare_pptx_files
