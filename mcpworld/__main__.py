"""``python -m mcpworld [overrides] [-m]``: see mcpworld.cli.main."""

from mcpworld.cli.main import cli

cli()
