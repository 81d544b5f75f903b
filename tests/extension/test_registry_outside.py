"""A registry's entries from outside the package: a ``package.module:Name`` value is imported when
asked for, and another installed package's entry points are found by name; each failure is one
line naming the key, the value and what went wrong."""

from __future__ import annotations

import pytest

from mcpworld.core.errors import UserError
from mcpworld.core.registry import Registry


def fresh() -> Registry[object]:
    registry: Registry[object] = Registry("thing.kind", group="outside.things")
    registry.register("builtin")("the built-in")
    return registry


def test_a_module_reference_is_imported_and_used(installed) -> None:
    installed("outside_ref", "class Mine:\n    class Inner:\n        pass\n", {})
    registry = fresh()
    import outside_ref

    assert registry.get("outside_ref:Mine") is outside_ref.Mine
    assert registry.get("outside_ref:Mine.Inner") is outside_ref.Mine.Inner  # a dotted name inside the module
    assert registry.names() == ["builtin"]  # a reference is not listed as a name


@pytest.mark.parametrize(
    "source, value, said",
    [
        (None, "outside_absent:Thing", "cannot import 'outside_absent' (ModuleNotFoundError"),
        ("raise RuntimeError('no GPU here')\n", "outside_boom:Thing", "cannot import 'outside_boom' (RuntimeError: no GPU here)"),
        ("x = 1\n", "outside_plain:Thing", "'outside_plain' has no 'Thing'"),
    ],
)
def test_a_reference_that_fails_is_one_error_naming_key_value_and_cause(installed, source, value, said) -> None:
    if source is not None:
        installed(value.split(":")[0], source, {})
    with pytest.raises(UserError) as caught:
        fresh().get(value)
    assert str(caught.value).startswith(f"thing.kind={value!r}: ") and said in str(caught.value)


def test_an_entry_point_of_another_package_is_found_by_name_and_listed(installed) -> None:
    installed("outside_ep", "def build():\n    return 'built outside'\n", {"outside.things": {"mine": "outside_ep:build"}})
    registry = fresh()
    assert registry.names() == ["builtin", "mine"] and "mine" in registry
    assert registry.get("mine")() == "built outside"
    assert registry.get("builtin") == "the built-in"


def test_an_entry_point_that_fails_to_load_names_its_package(installed) -> None:
    installed("outside_bad", "x = 1\n", {"outside.things": {"broken": "outside_bad:missing"}})
    with pytest.raises(UserError) as caught:
        fresh().get("broken")
    message = str(caught.value)
    assert "thing.kind='broken'" in message and "outside.things:broken = 'outside_bad:missing'" in message
    assert "(from outside_bad)" in message and "AttributeError" in message


def test_an_unknown_name_lists_every_known_one_and_how_to_add_one(installed) -> None:
    installed("outside_list", "", {"outside.things": {"mine": "outside_list:x"}})
    with pytest.raises(UserError) as caught:
        fresh().get("nope")
    assert str(caught.value) == (
        "thing.kind='nope' is unknown; known: builtin, mine; "
        "or name your own as package.module:Name, or install a package with an entry point in outside.things"
    )


def test_check_accepts_names_and_references_without_importing() -> None:
    registry = fresh()
    registry.check("builtin")
    registry.check("not_installed_anywhere:Thing")  # imported only when the run builds it
    with pytest.raises(UserError, match=r"thing\.kind='nope' is unknown"):
        registry.check("nope")
