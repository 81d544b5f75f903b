import pytest

from mcpworld.errors import UserError
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
