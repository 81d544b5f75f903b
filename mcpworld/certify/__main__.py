"""``python -m mcpworld.certify``: see mcpworld.certify.main."""

import sys

from mcpworld.certify.main import main

sys.exit(main())
