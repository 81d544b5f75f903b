"""Chrome steps with no browser to talk to: the environment's failure, said plainly."""

from __future__ import annotations

import socket

import pytest

from mcpworld.core.errors import InfraError
from mcpworld.env import chrome_steps
from mcpworld.env.steps import run_steps


class Host:
    def __init__(self, ports):
        self.ports = ports


def test_no_chromium_answering_is_an_infra_error(monkeypatch):
    monkeypatch.setattr(chrome_steps, "CONNECT_TRIES", 2)
    monkeypatch.setattr(chrome_steps, "CONNECT_PAUSE_S", 0.01)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InfraError, match=r"chrome_open_tabs: no Chromium answers at http://127\.0\.0\.1:.*google-chrome"):
        run_steps(Host({"cdp": port}), [{"type": "chrome_open_tabs", "parameters": {"urls_to_open": ["http://a"]}}])
    with pytest.raises(InfraError, match="chrome_close_tabs: this desktop starts no Chromium"):
        run_steps(Host({}), [{"type": "chrome_close_tabs", "parameters": {"urls_to_close": ["http://a"]}}])
