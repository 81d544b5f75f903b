"""Writer metrics over a document's text: paragraph text against the gold's (``compare_docx_files``
and its variants), the reference list, sentences split at a gap, and records of one line each
(train timetables, place names).
"""

from __future__ import annotations

from typing import Any

from docx.document import Document

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.documents.reading import (
    _check_int,
    _check_threshold,
    _collapse,
    _document,
    _ends,
    _open_odt,
    _ratio,
    _zero_on_failure,
)
from mcpworld.evaluation.metrics.general import rule_value
from mcpworld.evaluation.registry import metric


def _paragraph_texts(result: Any, expected: Any) -> tuple[list[str], list[str]] | None:
    """Both documents' paragraph texts: two .docx (top-level body) or two .odt; None otherwise."""
    if _ends(result, ".docx") and _ends(expected, ".docx"):
        docs = _document(result), _document(expected)
        if docs[0] is None or docs[1] is None:
            return None
        return [p.text for p in docs[0].paragraphs], [p.text for p in docs[1].paragraphs]
    if _ends(result, ".odt") and _ends(expected, ".odt"):
        odts = _open_odt(result), _open_odt(expected)
        if odts[0] is None or odts[1] is None:
            return None
        return odts[0].paragraph_texts(), odts[1].paragraph_texts()
    return None


@metric("compare_docx_files")
def compare_docx_files(
    result: Any,
    expected: Any,
    ignore_blanks: bool = True,
    ignore_case: bool = False,
    ignore_order: bool = False,
    content_only: bool = False,
    fuzzy_match: bool = False,
    delete_empty_lines: bool = False,
    threshold: float | None = None,
) -> float:
    """Paragraph text of the result equals the gold's (two .docx, or two .odt), as OSWorld compares.

    .docx: top-level body paragraphs (tables: compare_docx_tables); .odt: every ``text:p`` as
    odfpy shows it (headings are not included). The file names must end in .docx/.odt.

    - ``ignore_order``: the raw paragraphs are sorted first; ``delete_empty_lines`` then drops
      whitespace-only paragraphs.
    - ``content_only``: partial credit, the rapidfuzz similarity of the whole texts with
      whitespace collapsed (lower-cased with ``ignore_case``); with our ``threshold`` option
      (not OSWorld's), 1 when it reaches the threshold, else 0.
    - ``ignore_blanks`` (default on): the whole texts with whitespace collapsed must be equal
      (``fuzzy_match``: their similarity is the score).
    - otherwise the paragraph counts must be equal and the paragraphs equal one by one
      (``fuzzy_match``: the mean similarity of paired paragraphs).
    """
    if threshold is not None:
        threshold = _check_threshold(threshold, "threshold", "compare_docx_files")
    texts = _paragraph_texts(result, expected)
    if texts is None:
        return 0.0
    return _compare_texts(
        *texts, ignore_blanks, ignore_case, ignore_order, content_only, fuzzy_match, delete_empty_lines, threshold
    )


def _compare_texts(
    got: list[str],
    want: list[str],
    ignore_blanks: bool = True,
    ignore_case: bool = False,
    ignore_order: bool = False,
    content_only: bool = False,
    fuzzy_match: bool = False,
    delete_empty_lines: bool = False,
    threshold: float | None = None,
) -> float:
    """compare_docx_files on two lists of paragraph texts."""
    if ignore_order:
        got, want = sorted(got), sorted(want)
    if delete_empty_lines:
        got, want = [t for t in got if t.strip()], [t for t in want if t.strip()]
    fold = (lambda t: t.lower()) if ignore_case else (lambda t: t)
    if content_only or ignore_blanks:
        a, b = fold(_collapse(got)), fold(_collapse(want))
        if content_only:
            similarity = _ratio(a, b)
            return similarity if threshold is None else float(similarity >= threshold)
        return _ratio(a, b) if fuzzy_match else float(a == b)
    if len(got) != len(want):
        return 0.0
    if fuzzy_match:
        if not got:
            return 1.0
        return sum(_ratio(fold(a), fold(b)) for a, b in zip(got, want, strict=True)) / len(got)
    return float(all(fold(a) == fold(b) for a, b in zip(got, want, strict=True)))


def _same_text(result: Any, expected: Any) -> bool:
    """compare_docx_files with its defaults gives 1 (the check OSWorld's formatting metrics start with)."""
    return compare_docx_files(result, expected) == 1.0


@metric("compare_docx_files_and_ignore_new_lines")
def compare_docx_files_and_ignore_new_lines(result: Any, expected: Any, ignore_blanks: bool = True) -> float:
    """compare_docx_files on two .docx with empty paragraphs (no text at all) dropped first.

    ``ignore_blanks`` (default on) compares the whole texts with whitespace collapsed; off, the
    remaining paragraphs must be equal one by one (a whitespace-only paragraph still counts).
    """
    if not (_ends(result, ".docx") and _ends(expected, ".docx")):
        return 0.0
    texts = _paragraph_texts(result, expected)
    if texts is None:
        return 0.0
    got, want = ([t for t in side if t != ""] for side in texts)
    return _compare_texts(got, want, ignore_blanks=bool(ignore_blanks))


@metric("evaluate_alignment")
@_zero_on_failure
def evaluate_alignment(result: Any, expected: Any = None, words: int = 3) -> float:
    """In every '.'-separated sentence of more than ``words`` words (default 3), the first ``words``
    words and the rest each appear single-space-joined, in that order.

    This is OSWorld's test: it passes when the gap between the two parts is anything (a tab,
    spaces) and fails when the words inside a part are separated by more than one space.
    ``expected`` is unused.
    """
    words = _check_int(words, "words", "evaluate_alignment", minimum=1)
    document = _document(result)
    if document is None:
        return 0.0
    for paragraph in document.paragraphs:
        for sentence in paragraph.text.split("."):
            tokens = sentence.strip().split()
            if len(tokens) < words:
                continue
            first, second = " ".join(tokens[:words]), " ".join(tokens[words:])
            if not (first in sentence and second in sentence and sentence.find(first) < sentence.find(second)):
                return 0.0
    return 1.0


def _train_ids(document: Document, separator: str, field_count: int, key_index: int) -> list[str]:
    """The key field of each top-level paragraph that splits into ``field_count`` fields."""
    ids = []
    for p in document.paragraphs:
        fields = p.text.split(separator)
        if len(fields) == field_count:
            ids.append(fields[key_index].strip())
    return ids


@metric("check_no_duplicates")
@_zero_on_failure
def check_no_duplicates(
    result: Any, expected: Any = None, separator: str = ",", field_count: int = 4, key_index: int = 1
) -> float:
    """OSWorld's check with its argument order: ``result`` is read as the original timetable and
    ``expected`` as the deduplicated one.

    A record is a paragraph that splits on ``separator`` into ``field_count`` fields
    (``time, train_id, station, platform``), keyed by field ``key_index`` (the options are ours,
    their defaults OSWorld's). ``expected`` must have no repeated key, the same set of keys as
    ``result``, and one record per distinct key of ``result``. Either file missing scores 0.
    """
    if not isinstance(separator, str) or not separator:
        raise UserError(f"metric 'check_no_duplicates': separator must be a non-empty string, got {separator!r}")
    _check_int(field_count, "field_count", "check_no_duplicates", minimum=1)
    _check_int(key_index, "key_index", "check_no_duplicates")
    if key_index >= field_count:
        raise UserError(f"metric 'check_no_duplicates': key_index {key_index} must be below field_count {field_count}")
    original, processed = _document(result), _document(expected)
    if original is None or processed is None:
        return 0.0
    keys_original = set(_train_ids(original, separator, field_count, key_index))
    keys = _train_ids(processed, separator, field_count, key_index)
    return float(len(keys) == len(set(keys)) and set(keys) == keys_original and len(keys) == len(keys_original))


@metric("compare_unique_train_records")
def compare_unique_train_records(result: Any, expected: Any) -> float:
    """1 when the result keeps one record per train id, as the gold does, using only original lines.

    expected: ``[gold, original, ...]`` .docx paths (anything else scores 0). A record is a
    non-empty line of four comma-separated fields (``time, train_id, station, platform``). The
    result's non-empty lines must all be lines of the original, its train ids unique and the same
    set as the gold's, and it must have as many non-empty lines as the gold.
    """
    if not result or not isinstance(expected, list) or len(expected) < 2 or not expected[0] or not expected[1]:
        return 0.0
    mine, gold, original = (_document(path) for path in (result, expected[0], expected[1]))
    if mine is None or gold is None or original is None:
        return 0.0

    def lines(d: Document) -> list[str]:
        return [p.text.strip() for p in d.paragraphs if p.text.strip()]

    def ids(d: Document) -> list[str]:
        return [line.split(",")[1].strip() for line in lines(d) if len(line.split(",")) == 4]

    mine_ids = ids(mine)
    return float(
        set(lines(mine)) <= set(lines(original))
        and len(mine_ids) == len(set(mine_ids))
        and set(mine_ids) == set(ids(gold))
        and len(lines(mine)) == len(lines(gold))
    )


REFERENCE_EPSILON = 0.01


@metric("compare_references")
def compare_references(
    result: Any,
    expected: Any,
    reference_indicator: str = "References",
    reference_base_result: float = 0.5,
    content_only: bool = False,
) -> float:
    """Similarity of the reference list after the ``reference_indicator`` paragraph, rescaled above a base.

    Two .docx files; the list is every non-empty top-level paragraph after the first paragraph
    whose text is exactly the indicator. Neither document with that paragraph scores 1, one
    without it 0, different reference counts 0. Otherwise the mean rapidfuzz ratio of paired
    references ``s`` scores ``(s - base) / (1 - base)`` when ``s >= base + 0.01``, else 0, with
    base ``reference_base_result`` (default 0.5). ``content_only`` is accepted and ignored, as
    OSWorld does (its task passes it).
    """
    name = "compare_references"
    if not isinstance(reference_indicator, str) or not reference_indicator:
        raise UserError(f"metric {name!r}: reference_indicator must be a heading text, got {reference_indicator!r}")
    base = _check_threshold(reference_base_result, "reference_base_result", name)
    if base >= 1:
        raise UserError(f"metric {name!r}: reference_base_result must be below 1, got {reference_base_result!r}")
    if not (_ends(result, ".docx") and _ends(expected, ".docx")):
        return 0.0
    texts = _paragraph_texts(result, expected)
    if texts is None:
        return 0.0

    def references(paragraphs: list[str]) -> list[str] | None:
        if reference_indicator not in paragraphs:
            return None
        return [t for t in paragraphs[paragraphs.index(reference_indicator) + 1 :] if t.strip()]

    got, want = (references(side) for side in texts)
    if got is None and want is None:
        return 1.0
    if got is None or want is None or len(got) != len(want) or not got:
        return 0.0
    similarity = sum(_ratio(a, b) for a, b in zip(got, want, strict=True)) / len(got)
    return (similarity - base) / (1 - base) if similarity >= base + REFERENCE_EPSILON else 0.0


@metric("fuzzy_place_math")
@_zero_on_failure
def fuzzy_place_math(result: Any, rules: Any) -> float:
    """Mean, over the words of the result .docx, of each word's best rapidfuzz ratio to an accepted answer.

    rules: ``{expected: [answers…], count?: n}``. Words are the whitespace-separated tokens of
    the top-level paragraphs (an address written without spaces, as Chinese ones are, is one
    word). The document must have exactly ``count`` words, 3 unless the rules say otherwise, as
    OSWorld requires (its only task, 7ff48d5b, asks for 5 addresses: a task overlay can pass
    ``count: 5``).
    """
    name = "fuzzy_place_math"
    answers = rule_value(rules, "expected", name)
    count = _check_int(rule_value(rules, "count", name, default=3), "count", name, minimum=1)
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise UserError(f"metric {name!r}: rules 'expected' must be a non-empty list of strings, got {answers!r}")
    document = _document(result)
    if document is None:
        return 0.0
    words = [word for p in document.paragraphs for word in p.text.split()]
    if len(words) != count:
        return 0.0
    return sum(max(_ratio(word, answer) for answer in answers) for word in words) / count
