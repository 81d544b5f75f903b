"""Writer document metrics over .docx (and .odt) files, scoring as OSWorld's docs.py does.
Importing this package registers them.

``result`` is a local path to the agent's document (a getter's cached copy); ``expected`` is a
gold document path or a rules object, depending on the metric. A missing file, or one
python-docx cannot open, scores 0, as does a document on which OSWorld's metric would fail
(an empty document where a paragraph is needed, a run without a colour...). A malformed rules
object or option is the task author's mistake and raises UserError.

Formatting is read as OSWorld reads it, through python-docx: direct formatting of the runs and
paragraphs of the top-level body (``Document.paragraphs``, ``Paragraph.runs``), so formatting that
comes only from a style does not count. The one exception is compare_font_names, which grades
the effective font (see its docstring). Where OSWorld crashed on valid input, we score what
the input shows instead; each such case is named in the metric's docstring.

Modules: ``reading`` (opening documents, shared checks), ``text`` (paragraph text),
``formatting`` (direct formatting), ``structure`` (tables, images, footers, page breaks).
"""

import mcpworld.evaluation.metrics.documents.formatting
import mcpworld.evaluation.metrics.documents.structure
import mcpworld.evaluation.metrics.documents.text  # noqa: F401
