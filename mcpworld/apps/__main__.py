"""``python -m mcpworld.apps [NAME …]``: install the apt packages the chosen apps lack."""

from mcpworld.apps.catalog import main

main()
