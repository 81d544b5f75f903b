"""PDF metrics, read with pypdf: page counts and extracted text.

Every metric scores a missing or unreadable PDF (``None``, a path that is not a file, a file pypdf
cannot parse or decrypt) as 0 and never raises for it. A malformed ``rules`` object is the task
author's mistake and raises UserError naming the metric and the key.

OSWorld extracted text with PyMuPDF (compare_pdfs) and pdfplumber (is_gold_text_included_in_pdf),
which this project does not depend on; pypdf's text is shaped like theirs (pages and lines in the
same order, joined the same way), so scores agree exactly for most PDFs and closely for the rest
(PyMuPDF puts a line break between table cells where pypdf puts a space).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from pypdf import PdfReader
from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from mcpworld.core.errors import UserError
from mcpworld.evaluation.matchers import COMPARISONS
from mcpworld.evaluation.metrics.general import rule_value
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


def _page_texts(path: Any) -> list[str] | None:
    """pypdf's text of each page (lines joined by newlines); None when the PDF is unreadable."""
    reader = _open_pdf(path)
    if reader is None:
        return None
    try:
        return [page.extract_text() or "" for page in reader.pages]
    except Exception as exc:  # a broken content stream or font in a file that opened
        log.debug("cannot extract text from %s: %s", path, exc)
        return None


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


PDF_CHAR_LIMIT = 1_000_000  # longer texts are compared word by word (the char diff is quadratic)


def _text_similarity(result_path: Any, expected_path: Any) -> float:
    """rapidfuzz's ratio / 100 of the two PDFs' texts (as PyMuPDF lays them out: every page's lines
    one per line, the whole stripped); 0 when either is missing or unreadable."""
    result_pages, expected_pages = _page_texts(result_path), _page_texts(expected_path)
    if result_pages is None or expected_pages is None:
        return 0.0
    result, expected = "\n".join(result_pages).strip(), "\n".join(expected_pages).strip()
    if max(len(result), len(expected)) <= PDF_CHAR_LIMIT:
        return fuzz.ratio(result, expected) / 100  # two empty texts: 1, as in OSWorld
    return Indel.normalized_similarity(result.split(), expected.split())


@metric("compare_pdfs")
def compare_pdfs(result: Any, expected: Any) -> float:
    """Text similarity of two PDFs (rapidfuzz ratio / 100 of their extracted text), in [0, 1].

    result, expected: local PDF paths, or (when ``expected`` is a list) lists of paths paired in
    order: the sum of the pairs' scores over the length of ``expected``, so a gold without a
    result counts 0 and a result beyond the gold's count is ignored, as in OSWorld. Two PDFs
    without text score 1 (as in OSWorld). A missing PDF (None) scores 0: OSWorld opened None as
    an empty document, so a missing result passed against a textless gold. Texts over a million
    characters are compared word by word.
    """
    if not isinstance(expected, (list, tuple)):
        result, expected = [result], [expected]
    elif not isinstance(result, (list, tuple)):
        return 0.0  # OSWorld iterated over it (a path's characters): nothing pairs
    if not expected:
        return 0.0
    return sum(_text_similarity(r, e) for r, e in zip(result, expected, strict=False)) / len(expected)


def _plumber_text(path: Any) -> str | None:
    """The PDF's text laid out as pdfplumber does: each line's words one space apart, no empty
    lines, pages run together without a separator; None when unreadable."""
    pages = _page_texts(path)
    if pages is None:
        return None
    return "".join("\n".join(line for line in (" ".join(raw.split()) for raw in text.splitlines()) if line) for text in pages)


@metric("is_gold_text_included_in_pdf")
def is_gold_text_included_in_pdf(result: Any, expected: Any) -> float:
    """1 when every value of the gold JSON object appears in the PDF's text, as written (case and
    whitespace count: a value broken over two lines in the PDF is not found, as in OSWorld).

    result: local PDF path. expected: a local path to the gold JSON file (a file getter's copy),
    or the object itself. A missing PDF or gold file scores 0. A gold file that is not JSON, not
    an object, or has a value that is not a string is the task author's mistake (UserError;
    OSWorld crashed). An empty object passes any readable PDF, as in OSWorld.
    """
    name = "is_gold_text_included_in_pdf"
    if not result or not expected:
        return 0.0
    if isinstance(expected, (str, Path)):
        path = Path(expected)
        if not path.is_file():
            return 0.0
        try:
            expected = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise UserError(f"metric {name!r}: gold file {str(path)!r} is not JSON: {exc}") from None
    if not isinstance(expected, dict) or not all(isinstance(v, str) for v in expected.values()):
        raise UserError(f"metric {name!r}: the gold must be a JSON object of strings, got {expected!r}")
    text = _plumber_text(result)
    if text is None:
        return 0.0
    return float(all(needle in text for needle in expected.values()))


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

    same = sum(imagehash.phash(a) - imagehash.phash(b) <= PHASH_TOLERANCE for a, b in zip(got, want, strict=True))
    return same / len(want)
