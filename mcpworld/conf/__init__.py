"""The Hydra config tree, shipped inside the package (searched as pkg://mcpworld.conf)."""
