"""``compare_csv``: a CSV file against one or more expected CSV files, line by line as OSWorld compares them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcpworld.core.errors import UserError
from mcpworld.evaluation.registry import metric


def _csv_lines(path: str, strict: bool, ignore_case: bool) -> list[str] | None:
    """The file's lines as OSWorld compares them: UTF-8 (a BOM kept as a character), else Latin-1."""
    file = Path(path)
    if not file.is_file():
        return None
    data = file.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    lines = text.splitlines()
    if not strict:
        lines = [line.strip() for line in lines]
    if ignore_case:
        lines = [line.lower() for line in lines]
    return lines


@metric("compare_csv")
def compare_csv(
    result_path: str | None, expected_path: Any = None, strict: bool = True, ignore_case: bool = False, **unknown: Any
) -> float:
    """1 when the result CSV has the same lines as the expected CSV (or any one of a list of them).

    ``result_path``: local CSV path; ``expected_path``: a path or a list of acceptable paths.
    The files are compared line by line as text, as OSWorld does, so quoting matters
    (``"a",b`` is not ``a,b``) and so does a trailing empty line; only the line-ending style and a
    final newline do not. ``strict=False`` strips each whole line; ``ignore_case`` lower-cases
    both sides. Expected files that do not exist are skipped; none existing is a UserError
    (OSWorld scores 0: the gold file is the task's, not the agent's).
    """
    if unknown:
        raise UserError(f"metric 'compare_csv': unknown options {sorted(unknown)}; it takes 'strict', 'ignore_case'")
    paths = expected_path if isinstance(expected_path, list) else [expected_path]
    if not paths or not all(isinstance(p, str) for p in paths):
        raise UserError(f"metric 'compare_csv': expected must be a CSV path or a list of them, got {expected_path!r}")
    golds = [lines for lines in (_csv_lines(p, strict, ignore_case) for p in paths) if lines is not None]
    if not golds:
        raise UserError(f"metric 'compare_csv': no expected CSV file could be read among {paths}")
    result = _csv_lines(result_path, strict, ignore_case) if result_path else None
    if result is None:
        return 0.0
    return float(any(result == gold for gold in golds))
