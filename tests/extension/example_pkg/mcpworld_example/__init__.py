"""mcpworld parts from outside mcpworld: a scripted provider, a metric, and a desktop-less env backend."""
