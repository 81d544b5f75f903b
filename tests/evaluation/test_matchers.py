import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation.matchers import match_value


@pytest.mark.parametrize(
    "value, method, ref, expected",
    [
        (3, "eq", 3, True),
        ("a", "eq", "b", False),
        (3, "ne", 4, True),
        (3, "lt", 4, True),
        (4, "lt", 4, False),
        (4, "le", 4, True),
        (5, "gt", 4, True),
        (4, "ge", 5, False),
        (None, "lt", 4, False),  # incomparable → no match, not a crash
        ("Hello World", "re", r"^Hello", True),
        ("hello world", "re", r"^Hello", False),
        ("hello world", "re.I", r"^Hello", True),
        ("a\nb", "re", r"a.b", False),
        ("a\nb", "re.S", r"a.b", True),
        ("A\nb", "re.I.S", r"a.B", True),
        ("A\nb", "re.IS", r"a.B", True),
        (42, "re", r"4", False),
        (1.05, "approx:0.1", 1.0, True),
        (1.2, "approx:0.1", 1.0, False),
        ("1.0004", "approx:0.001", 1, True),
        ("abc", "approx:0.1", 1, False),
        (5, "range.[]", [5, 10], True),
        (5, "range.(]", [5, 10], False),
        (10, "range.[)", [5, 10], False),
        (10, "range.[]", [5, 10], True),
        (7, "range.()", [5, 10], True),
        (5, "range.et", [5, 10], True),  # OSWorld spelling: e = or-equal, t = strict
        (10, "range.et", [5, 10], False),
        (None, "range.[]", [5, 10], False),
        # OSWorld keeps the items' spaces: " b" is not "b" → False (we used to strip, True)
        ("a, b,c", "str_list_eq", ["a", "b", "c"], False),
        ("a,b,c", "str_list_eq", ["a", "b", "c"], True),
        # a list validation's formula1 as openpyxl reads it: OSWorld drops the outer quotes → True (was False)
        ('"Pass,Fail,Held"', "str_set_eq", ["Pass", "Fail", "Held"], True),
        ("b,a,c", "str_list_eq", ["a", "b", "c"], False),
        ("b,a,c,a", "str_set_eq", "a,b,c", True),
        ("a,b", "str_set_eq", ["a", "b", "c"], False),
        (None, "str_set_eq", ["a"], False),
        ("", "str_list_eq", [], False),  # OSWorld: "".split(",") is [""], not [] (was True)
        ("", "str_list_eq", [""], True),
        # OSWorld's flag names (getattr(re, name)) and any re-prefixed method (we raised UserError)
        ("hello world", "re.IGNORECASE", r"^Hello", True),
        ("A\nb", "re.IGNORECASE.DOTALL", r"a.B", True),
        ("A\nb", "re.MULTILINE", r"^b", True),
        ("Hello", "regex", r"^Hel", True),
        ("hello", "regex", r"^Hel", False),
    ],
)
def test_match_value(value, method, ref, expected):
    assert match_value(value, {"method": method, "ref": ref}) is expected


@pytest.mark.parametrize(
    "method, ref, message",
    [
        ("equals", 1, "unknown match method 'equals'"),
        ("re.Q", "x", "unknown regex flag 'Q'"),
        ("re", "(", "bad regular expression"),
        ("approx:abc", 1, "tolerance"),
        ("range.[", [1, 2], r"range\.\[\]"),
        ("range.[]", 3, r"\[low, high\]"),
    ],
)
def test_bad_rules_are_user_errors(method, ref, message):
    with pytest.raises(UserError, match=message):
        match_value("x", {"method": method, "ref": ref})


def test_rule_without_method():
    with pytest.raises(UserError, match="method"):
        match_value(1, {"ref": 1})


def test_osworld_match_value_raises_where_osworld_does():
    from mcpworld.evaluation.matchers import RuleError, osworld_match_value

    assert osworld_match_value("Dark", {"method": "re.IGNORECASE", "ref": "^dark"})
    assert osworld_match_value(5, {"method": "range.te", "ref": [4, 5]})
    assert not osworld_match_value(4, {"method": "range.te", "ref": [4, 5]})
    assert osworld_match_value("a,b", {"method": "str_list_eq", "ref": ["a", "b"]})
    assert not osworld_match_value("1,2", {"method": "str_list_eq", "ref": [1, 2]})  # ref taken as is
    assert osworld_match_value("c,b,a", {"method": "str_set_eq", "ref": "abc"})  # a string ref: its letters
    assert not osworld_match_value("ab,c", {"method": "str_set_eq", "ref": "abc"})
    assert not osworld_match_value("x", {"method": "approx:0.1", "ref": 1.0})
    for value, rule in [
        (5, {"method": "re", "ref": "5"}),
        ("a", {"method": "re.IS", "ref": "a"}),
        ("a", {"method": "lt", "ref": 3}),
        (5, {"method": "approx:0.5", "ref": "5"}),
        (5, {"method": "range.[]", "ref": [4, 5]}),
        ([1], {"method": "str_list_eq", "ref": ["1"]}),
        (1, {"method": "same", "ref": 1}),
    ]:
        with pytest.raises(RuleError):
            osworld_match_value(value, rule)
