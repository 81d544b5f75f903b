"""Built-in metrics. Importing this package registers them (``registry.get_metric`` does so).

A metric is ``(result, expected=None, **options) -> float | bool | int`` in [0, 1]. It must score
a ``None`` result (a missing file, no output) as 0 rather than raise.
"""

from mcpworld.evaluation.metrics import (  # noqa: F401
    accessibility,
    appstate,
    archives,
    browser,
    chrome_settings,
    documents,
    general,
    images,
    markup,
    media,
    ocr,
    pdf,
    slides,
    system,
    tables,
    text,
)
