"""The vm backend: a suite's own VM (OSWorld's Ubuntu, WAA's Windows) driven through its own server."""
