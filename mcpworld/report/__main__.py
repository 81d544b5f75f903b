"""``python -m mcpworld.report``: see mcpworld.report.tables."""

import sys

from mcpworld.report.tables import main

sys.exit(main())
