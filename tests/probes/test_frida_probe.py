"""The Frida probe: a hook in another process, its messages in Frida's shape, and a hook that cannot
watch this build reported as such (infra), never as the agent's failure."""

from __future__ import annotations

import subprocess
import time

import pytest

from mcpworld.core.errors import InfraError, Unwatchable
from mcpworld.probes.live import LiveHooks, hook_error


@pytest.fixture
def app():
    proc = subprocess.Popen(["sleep", "60"])
    time.sleep(0.2)
    yield proc.pid
    proc.kill()
    proc.wait()


def live(tmp_path, source: str, traced: list) -> LiveHooks:
    hook = tmp_path / "hooker.js"
    hook.write_text(source)
    return LiveHooks("frida", [str(hook)], lambda kind, **data: traced.append((kind, data)))


def test_a_hook_runs_in_the_apps_process_and_its_sends_arrive_as_frida_messages(tmp_path, app):
    traced = []
    hooks = live(
        tmp_path,
        "send({event: 'script_initialized', pid: Process.id, has_libc: Module.findExportByName(null, 'open') !== null});",
        traced,
    )
    try:
        hooks.start(app, 5)
        assert hooks.env() == {} and hooks.evaluate() is True  # Frida: the completion goes to the handler
    finally:
        hooks.close()
    assert traced == [
        ("app_event", {"message": {"type": "send", "payload": {"event": "script_initialized", "pid": app, "has_libc": True}}})
    ]


@pytest.mark.parametrize(
    "source, why",
    [
        (
            "send({event_type: 'error', error_type: 'symbol_not_found', message: 'gimp_image_new'});",
            "symbol_not_found: gimp_image_new",
        ),  # PC-Canary's GIMP hooks on a build without its symbols
        ("throw new Error('no such module');", "no such module"),
    ],
)
def test_a_hook_that_cannot_watch_this_build_is_an_infra_error(tmp_path, app, source, why):
    hooks = live(tmp_path, source, [])
    try:
        with pytest.raises(Unwatchable, match=f"cannot watch this build of the app: .*{why}"):
            hooks.start(app, 5)
    finally:
        hooks.close()


def test_no_process_to_attach_to_is_an_infra_error(tmp_path):
    hooks = live(tmp_path, "send({event: 'x'});", [])
    with pytest.raises(InfraError, match="no app process"):
        hooks.start(None, 5)
    with pytest.raises(InfraError, match="frida could not attach"):
        hooks.start(2**22 + 7, 5)  # no such pid
    hooks.close()


def test_hook_error_reads_frida_and_pc_canary_error_shapes():
    assert hook_error({"type": "send", "payload": {"event": "file_saved"}}) is None
    assert hook_error({"type": "send", "payload": {"event": "error", "message": "m"}}) == "error: m"
    assert hook_error({"type": "error", "description": "ReferenceError: x"}) == "ReferenceError: x"
