"""Getters for media placed on a slide: the audio clip and the background picture of one slide.

The presentation is read from the environment with python-pptx; the media file the slide uses
is copied into ``env.cache_dir/dest``, whether it is embedded in the package or linked (a
``file://`` URL or a path relative to the presentation, read from the environment). As in
``base``: a missing presentation, slide or media gives None (the agent did not produce it),
and a config mistake raises UserError.

Slides are counted in presentation order; OSWorld opened ``ppt/slides/slide<N+1>.xml``, whose
number need not be the slide's position once slides were added, moved or deleted.
"""

from __future__ import annotations

import logging
import posixpath
from io import BytesIO
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from pptx import Presentation
from pptx.oxml.ns import qn

from mcpworld.core.errors import UserError
from mcpworld.evaluation.getters.base import cache_target, read_or_none, require, store
from mcpworld.evaluation.registry import getter

if TYPE_CHECKING:
    from mcpworld.env.base import Environment

log = logging.getLogger(__name__)


def _slide(env: Environment, cfg: dict[str, Any]) -> Any | None:
    """The ``slide_index``-th (0-based) slide of the presentation ``ppt_file_path``, or None."""
    path = require(cfg, "ppt_file_path")
    index = require(cfg, "slide_index")
    try:
        index = int(index)
    except (TypeError, ValueError):
        raise UserError(f"getter {cfg.get('type')!r}: slide_index must be an integer, got {index!r}") from None
    data = read_or_none(env, path)
    if data is None:
        log.info("%s: %s does not exist in the environment", cfg.get("type"), path)
        return None
    try:
        slides = list(Presentation(BytesIO(data)).slides)
    except Exception as exc:  # not a zip, not a presentation, broken XML: the agent's file is unusable
        log.info("%s: %s is not a readable presentation: %s", cfg.get("type"), path, exc)
        return None
    return slides[index] if 0 <= index < len(slides) else None


def _linked_path(target: str, ppt_file_path: str) -> str:
    """The environment path of a linked media target (``file://`` URL, absolute or relative path)."""
    if target.startswith("file:"):
        return unquote(urlparse(target).path)
    if target.startswith("/"):
        return unquote(target)
    return posixpath.normpath(posixpath.join(posixpath.dirname(ppt_file_path), unquote(target)))


def _save_media(env: Environment, cfg: dict[str, Any], rel: Any) -> str | None:
    """Copy the media a slide relationship points to into the cache; its local path, or None."""
    name = str(cfg.get("type"))
    target = cache_target(env, require(cfg, "dest"), name)
    if rel.is_external:
        path = _linked_path(rel.target_ref, cfg["ppt_file_path"])
        data = read_or_none(env, path)
        if data is None:
            log.info("%s: linked media %s does not exist in the environment", name, path)
            target.unlink(missing_ok=True)
            return None
    else:
        data = rel.target_part.blob
    return store(target, data)


@getter("audio_in_slide")
def audio_in_slide(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Local copy of the first audio clip of slide ``slide_index`` of ``ppt_file_path``, or None.

    The clip is the slide's first audio relationship, as OSWorld takes it (a slide with several
    clips is not told apart). Config: ``ppt_file_path``, ``slide_index`` (0-based), ``dest``.
    """
    slide = _slide(env, cfg)
    if slide is None:
        return None
    for rel in slide.part.rels.values():
        if "audio" in rel.reltype:
            return _save_media(env, cfg, rel)
    return None


@getter("background_image_in_slide")
def background_image_in_slide(env: Environment, cfg: dict[str, Any]) -> str | None:
    """Local copy of the picture filling the background of slide ``slide_index``, or None.

    Only the slide's own background counts (a picture inherited from its layout or master was
    not set on this slide). Config: ``ppt_file_path``, ``slide_index`` (0-based), ``dest``.
    """
    slide = _slide(env, cfg)
    if slide is None:
        return None
    background = slide.element.find(f"{qn('p:cSld')}/{qn('p:bg')}/{qn('p:bgPr')}")
    blip = background.find(f".//{qn('a:blip')}") if background is not None else None
    rid = None if blip is None else blip.get(qn("r:embed")) or blip.get(qn("r:link"))
    rel = slide.part.rels.get(rid) if rid else None
    return None if rel is None else _save_media(env, cfg, rel)
