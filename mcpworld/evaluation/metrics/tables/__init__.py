"""Spreadsheet metrics: ``compare_table`` (a list of checks over xlsx workbooks), ``compare_csv``, and
``compare_conference_city_in_order`` (one column of place names, OSWorld's conference-city task).
Importing this package registers them.

``compare_table`` scores every rule type as OSWorld's own metric does, reading what OSWorld reads:
``sheet_data`` the cached values (as pandas frames, built in ``frames`` from openpyxl's value view);
``check_cell`` values, ``sheet_fuzzy`` and conditional-format conditions the raw cell XML
(``raw``); ``sheet_print`` the CSV the task's postconfig exported next to the xlsx; everything
else openpyxl's formula view. Conditional-format formulas are evaluated by ``conditions``. Where
OSWorld's code raises on the files (an agent's file it cannot read that way) the score is 0.

A result that is ``None``, missing or not a readable workbook scores 0. A malformed rule list, an
unknown rule type, a missing rule key, a rule that needs the expected workbook when there is none,
and an expected workbook (a gold file) that is missing or unreadable raise UserError.

Modules: ``compare`` (the metric, its rule table and validation), ``books`` (the workbooks and
sheet selectors), one module per kind of rule (``frames``: sheet_data; ``cells``: sheet_print,
sheet_fuzzy, check_cell; ``styles``: style and conditional formats; ``parts``: freeze, zoom,
validation, rows and columns, filters, charts, pivot tables, sparklines), the readers ``raw`` and
``conditions``, and the other two metrics (``csv_files``, ``cities``).
"""

import mcpworld.evaluation.metrics.tables.cities
import mcpworld.evaluation.metrics.tables.compare
import mcpworld.evaluation.metrics.tables.csv_files  # noqa: F401
