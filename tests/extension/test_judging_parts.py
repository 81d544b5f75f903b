"""Metrics, getters and task formats from outside the package: a ``module:function`` named in a task's
evaluator, and other installed packages' entry points (``mcpworld.metrics``, ``mcpworld.getters``,
``mcpworld.task_formats``), found by name and listed with the built-ins."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation import registry
from mcpworld.tasks import formats

METRIC = """
def halves(result, expected=None):
    '''Half a point per character, at most one.'''
    return min(1.0, len(result or "") / 2)

def constant(env, cfg):
    return cfg["value"]
"""


@pytest.fixture(autouse=True)
def own_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    registry._load_builtins()
    monkeypatch.setattr(registry, "METRICS", dict(registry.METRICS))
    monkeypatch.setattr(registry, "GETTERS", dict(registry.GETTERS))


def test_a_metric_and_a_getter_of_another_package_are_found_by_name_and_listed(installed) -> None:
    installed(
        "outside_metrics",
        METRIC,
        {"mcpworld.metrics": {"halves": "outside_metrics:halves"}, "mcpworld.getters": {"constant": "outside_metrics:constant"}},
    )
    assert "halves" in registry.metric_names() and "exact_match" in registry.metric_names()
    assert "constant" in registry.getter_names()
    assert ("metric", "halves", "Half a point per character, at most one.") in registry.describe()  # --list shows it
    assert registry.get_metric("halves")("a") == 0.5
    assert registry.get_getter("constant")(None, {"value": 7}) == 7


def test_a_task_evaluator_may_name_a_metric_as_module_function(installed) -> None:
    from mcpworld.evaluation.spec import validate_spec

    installed("outside_ref_metric", METRIC, {})
    spec = {"func": "outside_ref_metric:halves", "result": {"type": "rule", "rules": "ab"}, "expected": None}
    validate_spec(spec, "task.yaml")  # resolved at load, as a built-in's name is
    assert registry.get_metric("outside_ref_metric:halves")("ab") == 1.0


def test_a_metric_reference_that_cannot_be_imported_names_the_task_key_and_the_cause() -> None:
    with pytest.raises(UserError) as caught:
        registry.get_metric("outside_nowhere:halves")
    assert str(caught.value).startswith("func='outside_nowhere:halves': cannot import 'outside_nowhere'")


def test_a_task_format_of_another_package_loads_its_files(installed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcpworld.tasks.load import find_task_files, load_task_file

    installed(
        "outside_format",
        "from mcpworld.core.task import Task\n"
        "from mcpworld.tasks.formats import task_format\n"
        "@task_format('outside_ini', detect=lambda path, data: path.suffix == '.ini', pattern='*.ini', needs='an .ini file')\n"
        "def load(path, data, settings, root):\n"
        "    return Task(id=path.stem, app='xterm', instruction=path.read_text(), dir=path.parent, source=path)\n",
        {"mcpworld.task_formats": {"outside_ini": "outside_format"}},
    )
    monkeypatch.setattr(formats, "FORMATS", dict(formats.FORMATS))
    monkeypatch.setattr(formats, "_outside_loaded", False)
    (tmp_path / "hello.ini").write_text("say hello")
    assert find_task_files(tmp_path) == [tmp_path / "hello.ini"]
    task = load_task_file(tmp_path / "hello.ini")
    assert (task.id, task.instruction) == ("hello", "say hello")
