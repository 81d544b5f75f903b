import json
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.general import (
    check_include_exclude,
    check_json,
    check_line_number,
    diff_text_file,
    exact_match,
    file_contains,
    fuzzy_match,
    is_in_list,
    literal_match,
    match_in_list,
)


def test_exact_match():
    # strings compared stripped (a documented difference: OSWorld compares "42\n" and "42" as unequal)
    assert exact_match("42\n", {"expected": "42\n"}) == 1.0
    assert exact_match("42\n", {"expected": "42"}) == 1.0
    assert exact_match("  true ", {"expected": "true"}) == 1.0
    assert exact_match("43", {"expected": "42"}) == 0.0
    assert exact_match(["a"], {"expected": ["a"]}) == 1.0
    assert exact_match(None, {"expected": "42"}) == 0.0
    assert exact_match(None, {"expected": None}) == 1.0  # None == None, as in OSWorld
    with pytest.raises(UserError, match="'expected'"):
        exact_match("42", {"wrong": "42"})


def test_fuzzy_match():
    # case and punctuation count, as in OSWorld's plain fuzz.ratio: 0.78 (we normalised both: 1.0)
    assert fuzzy_match("Hello World!", {"expected": "hello world"}) == pytest.approx(0.782608695652174)
    assert fuzzy_match("hello world", {"expected": "hello world"}) == 1.0
    assert 0.5 < fuzzy_match("hello wrld", {"expected": "hello world"}) < 1.0
    assert fuzzy_match("xyz", {"expected": "hello world"}) < 0.3
    assert fuzzy_match("hello wrld", {"expected": "hello world", "threshold": 0.9}) == 1.0
    assert fuzzy_match("hello", {"expected": "hello world", "threshold": 0.9}) == 0.0
    # as OSWorld's plain fuzz.ratio: two empty strings are identical, None scores 0
    assert fuzzy_match("", {"expected": ""}) == 1.0
    assert fuzzy_match("", {"expected": "x"}) == 0.0
    assert fuzzy_match("!!!", {"expected": "..."}) == 0.0
    assert fuzzy_match(None, {"expected": "x"}) == 0.0
    with pytest.raises(UserError, match="threshold"):
        fuzzy_match("a", {"expected": "a", "threshold": 90})


def test_check_include_exclude():
    rules = {"include": ["alpha", "beta"], "exclude": ["error"]}
    assert check_include_exclude("alpha and beta", rules) == 1.0
    assert check_include_exclude("alpha only", rules) == 0.0
    assert check_include_exclude("alpha beta error", rules) == 0.0
    assert check_include_exclude(None, rules) == 0.0
    assert check_include_exclude("anything", {"exclude": ["x"]}) == 1.0
    # ``in`` on the result as it is (OSWorld): a list by element, a number cannot be searched
    assert check_include_exclude(["alpha", "beta"], rules) == 1.0
    assert check_include_exclude(["alpha beta"], rules) == 0.0
    assert check_include_exclude(5, {"include": ["5"]}) == 0.0


def test_diff_text_file(local):
    a = local("a.txt", "line one\nline two\n")
    same = local("b.txt", "line one\nline two\n")
    close = local("c.txt", "line one\nline 2\n")
    other = local("d.txt", "zzzzzzzzzzzzzzzzzz")
    assert diff_text_file(a, same) == 1.0
    # one of two lines edited: OSWorld's line-level difflib ratio gives 2*1/4 = 0.5 (was ~0.87 by characters)
    assert diff_text_file(a, close) == 0.5
    # empty vs empty: OSWorld 1.0; empty vs two lines: 0.0
    assert diff_text_file(local("e1.txt", ""), local("e2.txt", "")) == 1.0
    assert diff_text_file(local("e3.txt", ""), a) == 0.0
    # trailing newline only: splitlines makes these identical, OSWorld 1.0
    assert diff_text_file(local("f.txt", "line one\nline two"), a) == 1.0
    assert diff_text_file(a, other) < 0.2
    assert diff_text_file(None, a) == 0.0
    assert diff_text_file(a, None) == 0.0
    assert diff_text_file(a + ".missing", a) == 0.0


def test_diff_text_file_large_files_compare_by_lines(local):
    body = "".join(f"row {i}\n" for i in range(40_000))
    a = local("big_a.txt", body)
    b = local("big_b.txt", body + "extra\n")
    assert 0.99 < diff_text_file(a, b) < 1.0


def test_check_json(local):
    path = local("settings.json", json.dumps({"editor": {"fontSize": 14, "theme": "Dark+"}, "files": ["a", "b"]}))
    assert check_json(path, {"expect": [{"key": ["editor", "fontSize"], "method": "eq", "ref": 14}]}) == 1.0
    assert check_json(path, {"expect": [{"key": ["editor", "fontSize"], "method": "gt", "ref": 20}]}) == 0.0
    assert check_json(path, {"expect": [{"key": ["files", 1], "method": "eq", "ref": "b"}]}) == 1.0
    assert check_json(path, {"expect": [{"key": ["editor", "missing"], "method": "eq", "ref": None}]}) == 0.0
    assert check_json(path, {"expect": [{"key": ["editor", "theme"], "method": "re.I", "ref": "^dark"}]}) == 1.0
    assert check_json(path, {"unexpect": [{"key": ["editor", "theme"], "method": "eq", "ref": "Light"}]}) == 1.0
    assert check_json(path, {"unexpect": [{"key": ["editor", "theme"], "method": "eq", "ref": "Dark+"}]}) == 0.0
    assert check_json(path, {"unexpect": [{"key": ["nope"], "method": "eq", "ref": 1}]}) == 1.0
    assert check_json(None, {"expect": []}) == 0.0
    # OSWorld's matcher raising (unknown method, regex on a number) scores 0
    assert check_json(path, {"expect": [{"key": ["editor", "fontSize"], "method": "same", "ref": 14}]}) == 0.0
    assert check_json(path, {"expect": [{"key": ["editor", "fontSize"], "method": "re", "ref": "14"}]}) == 0.0


def test_check_json_follows_osworld_key_paths_and_unexpect(local):
    path = local("s.json", json.dumps({"files": ["a", "b"], "name": "abc", "n": 5}))
    # a missing key in an unexpect item is None: "ne" matches it, a regex cannot be applied → 0
    assert check_json(path, {"unexpect": [{"key": ["nope"], "method": "ne", "ref": 1}]}) == 0.0
    assert check_json(path, {"unexpect": [{"key": ["nope"], "method": "re", "ref": "x"}]}) == 0.0
    # negative list index, string index, a string key path taken character by character
    assert check_json(path, {"expect": [{"key": ["files", -1], "method": "eq", "ref": "b"}]}) == 1.0
    assert check_json(path, {"expect": [{"key": ["name", 0], "method": "eq", "ref": "a"}]}) == 1.0
    assert check_json(path, {"expect": [{"key": "name", "method": "eq", "ref": "abc"}]}) == 0.0
    # an index out of range escapes OSWorld's per-key handling: 0 even in unexpect
    assert check_json(path, {"unexpect": [{"key": ["files", 9], "method": "eq", "ref": 1}]}) == 0.0
    # OSWorld's matcher: flag names only, e/t range ends only, numeric approx ref
    assert check_json(path, {"expect": [{"key": ["name"], "method": "re.IGNORECASE", "ref": "ABC"}]}) == 1.0
    assert check_json(path, {"expect": [{"key": ["name"], "method": "re.IS", "ref": "ABC"}]}) == 0.0
    assert check_json(path, {"expect": [{"key": ["n"], "method": "range.te", "ref": [4, 5]}]}) == 1.0
    assert check_json(path, {"expect": [{"key": ["n"], "method": "range.[]", "ref": [4, 5]}]}) == 0.0
    assert check_json(path, {"expect": [{"key": ["n"], "method": "approx:0.5", "ref": "5"}]}) == 0.0


def test_check_json_yaml_and_invalid(local):
    path = local("conf.yaml", "server:\n  port: 8080\n  hosts: [a, b]\n")
    rules = {"expect": [{"key": ["server", "port"], "method": "range.ee", "ref": [1024, 65535]}]}
    assert check_json(path, rules, is_yaml=True) == 1.0
    assert check_json(local("empty.yaml", ""), {}, is_yaml=True) == 0.0
    broken = local("broken.json", "{not json")
    with pytest.raises(json.JSONDecodeError):  # the spec evaluator scores that 0 with the error as reason
        check_json(broken, {"expect": []})


def test_literal_match():
    assert literal_match("Paris", "Paris") == 1.0
    assert literal_match("paris", "Paris") == 0.0
    assert literal_match("paris", "Paris", ignore_case=True) == 1.0
    assert literal_match("x", {"expected": "x"}) == 1.0  # a rules object (mcpworld convenience)
    assert literal_match(["A", "b"], ["a", "b"], type="list", ignore_case=True) == 1.0
    assert literal_match(["A", 1], ["a", "1"], type="list", ignore_case=True) == 1.0  # items as strings
    assert literal_match(["a"], ["a", "b"], type="list") == 0.0
    assert literal_match("ab", ["a", "b"], type="list") == 0.0
    assert literal_match(None, "None") == 1.0
    with pytest.raises(UserError, match="type"):
        literal_match("a", "a", type="dict")


def test_match_in_list_and_is_in_list():
    assert match_in_list("blue", {"expected": ["red", "blue"]}) == 1.0
    assert match_in_list("blue\n", {"expected": ["red", "blue"]}) == 0.0  # nothing stripped (OSWorld)
    assert match_in_list("lig", {"expected": "light"}) == 1.0  # a string expected: substring
    assert match_in_list("green", {"expected": ["red", "blue"]}) == 0.0
    assert match_in_list(None, {"expected": ["red"]}) == 0.0
    assert is_in_list(["a", "b"], {"expected": "b"}) == 1.0
    assert is_in_list("a list of words", {"expected": "words"}) == 1.0
    assert is_in_list(["a"], {"expected": "b"}) == 0.0
    assert is_in_list(None, {"expected": "b"}) == 0.0
    assert is_in_list(5, {"expected": "b"}) == 0.0


def test_file_contains(local):
    path = local("log.txt", "started\nfinished ok\n")
    assert file_contains(path, {"expected": ["started", "finished ok"]}) == 1.0
    assert file_contains(path, {"expected": ["started", "failed"]}) == 0.0
    assert file_contains(path, {"expected": "started"}) == 1.0
    assert file_contains(path, {"expected": "startzz"}) == 0.0  # a string is taken letter by letter (OSWorld)
    binary = local("bin.txt", "")
    Path(binary).write_bytes(b"\xff\xfe")
    assert file_contains(binary, {"expected": []}) == 0.0  # not UTF-8: OSWorld could not read it
    assert file_contains(None, {"expected": ["started"]}) == 0.0


def test_check_line_number(local):
    path = local("times.txt", "00:01:02 start\nnote\n12:30:00 stop\n")
    assert check_line_number(path, {"expected": 2}) == 1.0
    assert check_line_number(path, {"expected": "2"}) == 1.0
    assert check_line_number(path, {"expected": 3}) == 0.0
    assert check_line_number(path, {"expected": 1, "pattern": "^note$"}) == 1.0
    assert check_line_number(None, {"expected": 0}) == 0.0


def test_check_line_number_uses_osworld_time_regex_and_file_lines(local):
    # OSWorld's regex: 00-23 hours, no word boundaries; an hour of 25 or a one-digit hour is no time
    path = local("t.txt", "25:00:00\n5:00:00\n123:45:59\n23:59:60\n")
    assert check_line_number(path, {"expected": "2"}) == 1.0  # 123:45:59 (23:45:59) and 23:59:60
    # lines as file iteration splits them: a form feed does not end a line
    assert check_line_number(local("ff.txt", "10:10:10\x0c11:11:11\n"), {"expected": "1"}) == 1.0
    assert check_line_number(path, {"expected": "two"}) == 0.0
