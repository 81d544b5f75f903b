import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation import registry
from mcpworld.evaluation.registry import get_getter, get_metric, getter_names, metric_names


def test_builtins_are_registered():
    assert {"vm_file", "vm_command_line", "vm_command_error", "rule", "list_directory", "content_from_vm_file"} <= set(
        getter_names()
    )
    assert {
        "exact_match",
        "fuzzy_match",
        "check_include_exclude",
        "diff_text_file",
        "check_json",
        "literal_match",
        "match_in_list",
        "is_in_list",
        "file_contains",
        "check_line_number",
    } <= set(metric_names())
    assert get_metric("exact_match").__name__ == "exact_match"
    assert get_getter("rule").__name__ == "rule"


def test_unknown_metric_names_it_and_the_closest_known_ones():
    with pytest.raises(UserError) as err:
        get_metric("exact_matchh")
    message = str(err.value)
    assert "'exact_matchh'" in message and "did you mean exact_match" in message
    assert "check_pdf_pages" not in message  # not the whole list: the closest names
    assert "python -m mcpworld.evaluation --list" in message


def test_unknown_getter_suggests_the_closest():
    with pytest.raises(UserError, match=r"unknown getter 'vm_fil'; did you mean vm_file"):
        get_getter("vm_fil")


def test_describe_lists_every_name_with_what_it_expects():
    from mcpworld.evaluation.registry import describe

    rows = describe()
    names = {(kind, name) for kind, name, _ in rows}
    assert ("metric", "compare_table") in names and ("getter", "vm_file") in names
    assert len([r for r in rows if r[0] == "metric"]) >= 60
    assert all(doc for _, _, doc in rows), [name for _, name, doc in rows if not doc]


def test_decorator_registers_and_refuses_a_different_duplicate(monkeypatch):
    monkeypatch.setattr(registry, "METRICS", dict(registry.METRICS))

    @registry.metric("always_one")
    def always_one(result, expected=None):
        return 1

    assert registry.get_metric("always_one") is always_one
    with pytest.raises(ValueError, match="registered twice"):

        @registry.metric("exact_match")
        def other(result, expected=None):
            return 0
