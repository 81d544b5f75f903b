"""Helpers several test modules share (fixtures live in the conftest.py files; fakes of outside
services in tests/fakes/). A test module imports from here, never from another test module."""
