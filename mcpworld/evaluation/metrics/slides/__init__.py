"""Presentation (pptx) metrics with OSWorld's Impress ``slides.py`` scoring.

Presentations are read with python-pptx through the same accessors OSWorld uses, so its
inheritance rules (and its quirks) give the same answers; a task written for OSWorld scores the
same here. A missing or unreadable presentation, or anything in the file that makes OSWorld's
function raise, scores 0. Only a malformed ``rules`` object (the task author's mistake) raises
UserError naming the metric and the key.
"""

from mcpworld.evaluation.metrics.slides import checks, compare  # noqa: F401 (registers them)
