"""What each env backend declares, so that run/ asks instead of naming it (env/__init__.py: Backend)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from mcpworld.apps.programs import Program
from mcpworld.core.errors import UserError
from mcpworld.env import Backend, DesktopSettings, backend_of, backend_stages

DEBIAN = Program(app="debian", binary="x", names=("x",), packages={"apt": ["x"]})
SCRIPTED = Program(app="scripted", binary="y", names=("y",), packages={"script": ["scripts/y.sh"]})


def test_each_backend_says_which_programs_this_machine_must_have():
    assert backend_of("local").programs_for([DEBIAN, SCRIPTED]) == [DEBIAN, SCRIPTED]
    assert backend_of("docker").programs_for([DEBIAN, SCRIPTED]) == [SCRIPTED]  # the image holds Debian's
    assert backend_of("vm").programs_for([DEBIAN, SCRIPTED]) == []  # the suite's VM has its own


def test_only_the_hosts_own_desktops_are_on_host_and_only_a_vm_cannot_stage():
    assert [backend_of(n).on_host for n in ("local", "docker", "vm")] == [True, False, False]
    assert [backend_stages(n) for n in ("local", "docker", "vm")] == [True, True, False]


def test_the_vm_backend_refuses_more_concurrent_episodes_than_vms():
    def settings(**vm: Any) -> DesktopSettings:
        keys = {"url": None, "urls": None, "reset_command": None, "reset_commands": None} | vm
        return cast(DesktopSettings, SimpleNamespace(env=SimpleNamespace(vm=SimpleNamespace(**keys))))

    with pytest.raises(UserError, match="concurrency=2 but env=vm has 1 VM"):
        backend_of("vm").check(settings(url="http://a:5000", reset_command="r"), 2)
    backend_of("vm").check(settings(urls=["http://a:5000", "http://b:5000"]), 2)
    backend_of("local").check(settings(), 8)  # nothing to count


def test_a_plain_build_function_from_outside_is_a_backend_with_the_defaults(monkeypatch):
    import mcpworld.env as env

    made: list[Any] = []
    monkeypatch.setitem(env.BACKENDS._entries, "mine", lambda s, programs, apps: made.append(s) or "desktop")
    mine = backend_of("mine")
    assert isinstance(mine, Backend) and mine.stages and not mine.on_host
    assert mine.programs_for([DEBIAN]) == [DEBIAN]
    assert mine(cast(DesktopSettings, "settings"), (), ()) == "desktop" and made == ["settings"]
