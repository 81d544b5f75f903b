"""PDF metrics, read with pypdf: page counts and extracted text.

Every metric scores a missing or unreadable PDF (``None``, a path that is not a file, a file pypdf
cannot parse or decrypt) as 0 and never raises for it. A malformed ``rules`` object is the task
author's mistake and raises UserError naming the metric and the key.

Extracted text is compared with runs of whitespace collapsed to one space: where a PDF breaks its
lines depends on the producer and on the extractor, not on the content (OSWorld used PyMuPDF and
pdfplumber, which break lines differently from pypdf).
"""

from __future__ import annotations

import json
import logging
from itertools import zip_longest
from pathlib import Path
from typing import Any

from pypdf import PdfReader
from rapidfuzz.distance import Indel

from mcpworld.errors import UserError
from mcpworld.evaluation.matchers import COMPARISONS
from mcpworld.evaluation.metrics.general import CHAR_DIFF_LIMIT, rule_value
from mcpworld.evaluation.registry import metric

log = logging.getLogger(__name__)


def _open_pdf(path: Any) -> PdfReader | None:
    """A reader over the PDF at a local path whose pages can be listed, or None."""
    if not isinstance(path, (str, Path)) or not str(path) or not Path(path).is_file():
        return None
    try:
        reader = PdfReader(str(path))
        len(reader.pages)  # pypdf parses lazily; a broken page tree or encryption fails here
        return reader
    except Exception as exc:  # PdfReadError, a wrong/absent password, malformed objects …
        log.debug("cannot read PDF %s: %s", path, exc)
        return None


def _pdf_text(path: Any) -> str | None:
    """The PDF's text, all pages, whitespace runs collapsed to one space; None when unreadable."""
    reader = _open_pdf(path)
    if reader is None:
        return None
    try:
        pages = [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # a broken content stream or font in a file that opened
        log.debug("cannot extract text from %s: %s", path, exc)
        return None
    return " ".join(" ".join(pages).split())


@metric("check_pdf_pages")
def check_pdf_pages(result: Any, rules: Any) -> float:
    """1 when the PDF's page count satisfies ``rules``: ``{relation: eq|ne|lt|le|gt|ge, ref_value: int}``.

    result: local PDF path. E.g. ``{relation: ge, ref_value: 2}`` means at least two pages.
    """
    name = "check_pdf_pages"
    relation = rule_value(rules, "relation", name)
    ref_value = rule_value(rules, "ref_value", name)
    if relation not in COMPARISONS:
        raise UserError(f"metric {name!r}: rules 'relation' must be one of {', '.join(COMPARISONS)}, got {relation!r}")
    if isinstance(ref_value, bool) or not isinstance(ref_value, int):
        raise UserError(f"metric {name!r}: rules 'ref_value' must be an integer page count, got {ref_value!r}")
    reader = _open_pdf(result)
    if reader is None:
        return 0.0
    return float(COMPARISONS[relation](len(reader.pages), ref_value))


def _text_similarity(result_path: Any, expected_path: Any) -> float:
    result, expected = _pdf_text(result_path), _pdf_text(expected_path)
    if not result or expected is None:
        return 0.0
    if max(len(result), len(expected)) <= CHAR_DIFF_LIMIT:
        return Indel.normalized_similarity(result, expected)  # == rapidfuzz fuzz.ratio / 100
    return Indel.normalized_similarity(result.split(" "), expected.split(" "))  # quadratic → words


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


@metric("compare_pdfs")
def compare_pdfs(result: Any, expected: Any) -> float:
    """Text similarity of two PDFs (rapidfuzz ratio / 100 of their extracted text), in [0, 1].

    result, expected: local PDF paths, or parallel lists of paths (the mean over the pairs; a
    list longer than the other counts its unpaired files as 0). A result without extractable
    text scores 0, so a PDF of scanned images cannot be graded this way (the anchor scored two
    empty texts as identical). Texts over 200,000 characters are compared word by word.
    """
    pairs = list(zip_longest(_as_list(result), _as_list(expected)))
    if not pairs:
        return 0.0
    return sum(_text_similarity(r, e) for r, e in pairs) / len(pairs)


def _needles(gold: Any) -> list[str]:
    """The strings to look for: the values of a JSON object, the items of a list, recursively."""
    if isinstance(gold, dict):
        return [n for value in gold.values() for n in _needles(value)]
    if isinstance(gold, (list, tuple)):
        return [n for item in gold for n in _needles(item)]
    return [str(gold)] if gold is not None else []


@metric("is_gold_text_included_in_pdf")
def is_gold_text_included_in_pdf(result: Any, expected: Any) -> float:
    """1 when every gold string appears in the PDF's text (case-sensitive, whitespace-insensitive).

    result: local PDF path. expected: a local path to a gold JSON file (as a file getter returns
    it) whose object values, or list items, are the strings; or that object / list itself (a
    ``rule`` getter). A missing gold file scores 0; a gold file that is not JSON, or that holds
    no strings, is the task author's mistake (UserError).
    """
    name = "is_gold_text_included_in_pdf"
    if isinstance(expected, (str, Path)):
        path = Path(expected)
        if not str(expected) or not path.is_file():
            return 0.0
        try:
            expected = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise UserError(f"metric {name!r}: gold file {str(path)!r} is not JSON: {exc}") from None
    elif expected is None:
        return 0.0
    needles = [" ".join(n.split()) for n in _needles(expected)]
    needles = [n for n in needles if n]
    if not needles:
        raise UserError(f"metric {name!r}: the gold holds no text to look for, got {expected!r}")
    text = _pdf_text(result)
    if text is None:
        return 0.0
    return float(all(needle in text for needle in needles))


PHASH_TOLERANCE = 5  # differing bits of 64 for two images to count as the same picture


def _pdf_images(path: Any) -> list[Any] | None:
    """The images drawn on each page, in page order, decoded with Pillow; None when the PDF is unreadable.

    An image used on two pages counts twice; one pypdf cannot decode is left out (as OSWorld
    left out those Pillow could not open).
    """
    reader = _open_pdf(path)
    if reader is None:
        return None
    images = []
    for number, page in enumerate(reader.pages):
        try:
            files = list(page.images)
        except Exception as exc:  # a broken resource dictionary: no usable images on this page
            log.debug("cannot list images on page %d of %s: %s", number, path, exc)
            continue
        for file in files:
            try:
                images.append(file.image)
            except Exception as exc:  # an unsupported filter or a corrupt stream
                log.debug("cannot decode image %s on page %d of %s: %s", file.name, number, path, exc)
    return images


@metric("compare_pdf_images")
def compare_pdf_images(result: Any, expected: Any) -> float:
    """Share of the gold PDF's images that the result PDF has at the same position, by perceptual hash.

    Images are paired in page order; a pair matches when their 64-bit perceptual hashes
    (ImageHash's ``phash``) differ in at most 5 bits, so re-encoding or mild scaling still
    matches. Different image counts score 0; two PDFs without images score 1 (as in OSWorld,
    which listed images with PyMuPDF; pypdf finds the same drawn images).
    """
    got, want = _pdf_images(result), _pdf_images(expected)
    if got is None or want is None or len(got) != len(want):
        return 0.0
    if not want:
        return 1.0
    import imagehash  # pulls scipy and PyWavelets: only when needed

    same = sum(imagehash.phash(a) - imagehash.phash(b) <= PHASH_TOLERANCE for a, b in zip(got, want))
    return same / len(want)
