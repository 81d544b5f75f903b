"""Entry points: ``python -m mcpworld`` (main.py), ``mcpworld-prefetch`` and the console scripts."""
