"""The Docker engine and the desktop image (without app packages), made once for the docker tests."""

from __future__ import annotations

import pytest

from mcpworld.env.docker import image as docker_image


@pytest.fixture(scope="session")
def client():
    return docker_image.engine()


@pytest.fixture(scope="session")
def image(client):
    return docker_image.desktop_image()
