import csv
import json
import sqlite3

import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation.metrics.text import (
    check_csv,
    check_direct_json_object,
    check_list,
    compare_answer,
    compare_config,
    compare_python_pure_text,
    compare_result_files,
    compare_text_file,
    is_included_all_json_objects,
    run_sqlite3,
)
from mcpworld.evaluation.registry import METRICS

NAMES = [
    "check_csv",
    "check_list",
    "check_direct_json_object",
    "is_included_all_json_objects",
    "run_sqlite3",
    "compare_text_file",
    "compare_config",
    "compare_answer",
    "compare_result_files",
    "compare_python_pure_text",
]


def test_registered_with_descriptions():
    for name in NAMES:
        fn = METRICS[name]
        assert fn.__module__ == "mcpworld.evaluation.metrics.text"
        assert fn.__doc__ and fn.__doc__.strip().splitlines()[0]


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "people.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["name", "age", "city"])
        writer.writeheader()
        writer.writerow({"name": "Alice", "age": "30", "city": "Paris"})
        writer.writerow({"name": "Bob", "age": "25", "city": "Berlin, DE"})
    return str(path)


def test_check_csv(csv_file, tmp_path):
    assert check_csv(csv_file, {"expect": [{"name": "Alice", "age": "30"}, {"city": "Berlin, DE"}]}) == 1.0
    # OSWorld's exact equality: the cell "30" is not the number 30, a {method, ref} is no rule
    assert check_csv(csv_file, {"expect": [{"name": "Alice", "age": 30}]}) == 0.0
    assert check_csv(csv_file, {"expect": [{"name": {"method": "re", "ref": "^B"}}]}) == 0.0
    # a record must match within one row
    assert check_csv(csv_file, {"expect": [{"name": "Alice", "city": "Berlin, DE"}]}) == 0.0
    assert check_csv(csv_file, {"expect": [{"name": "Carol"}]}) == 0.0
    assert check_csv(csv_file, {"expect": [{"country": "FR"}]}) == 0.0
    assert check_csv(csv_file, {"unexpect": [{"name": "Bob"}]}) == 0.0
    assert check_csv(csv_file, {"expect": [{"name": "Bob"}], "unexpect": [{"name": "Carol"}]}) == 1.0
    assert check_csv(csv_file, {"unexpect": [{}]}) == 0.0  # an empty record matches every row
    assert check_csv(None, {"expect": [{"name": "Alice"}]}) == 0.0
    assert check_csv(str(tmp_path / "missing.csv"), {"expect": [{"name": "Alice"}]}) == 0.0
    with pytest.raises(UserError, match="check_csv"):
        check_csv(csv_file, {"expect": ["Alice"]})
    with pytest.raises(UserError, match="check_csv"):
        check_csv(csv_file, {"expect": {"name": "Alice"}})
    with pytest.raises(UserError, match="check_csv"):
        check_csv(csv_file, ["not", "a", "dict"])


def test_check_csv_bom_and_short_rows_as_osworld(tmp_path):
    bom = tmp_path / "bom.csv"
    bom.write_text("name,age\nAlice,30\n", encoding="utf-8-sig")
    # OSWorld opened the file as plain UTF-8: the BOM stays in the first column's name
    assert check_csv(str(bom), {"expect": [{"name": "Alice"}]}) == 0.0
    assert check_csv(str(bom), {"expect": [{"age": "30"}]}) == 1.0
    short = tmp_path / "short.csv"
    short.write_text("a,b\n1\n", encoding="utf-8")
    assert check_csv(str(short), {"expect": [{"b": None}]}) == 1.0  # the missing cell is None


def test_check_list(local):
    path = local("out.txt", "alpha 1\nbeta 22\ngamma\n")
    assert check_list(path, {"expect": [r"^beta \d+$", "gam"]}) == 1.0
    assert check_list(path, {"expect": ["alpha"], "unexpect": ["error", "^delta"]}) == 1.0
    assert check_list(path, {"expect": ["delta"]}) == 0.0
    assert check_list(path, {"unexpect": [r"\d{2}"]}) == 0.0
    assert check_list(path, {"expect": ["alpha.*beta"]}) == 0.0  # per line, not across lines
    assert check_list(None, {"expect": ["alpha"]}) == 0.0
    assert check_list(path + ".missing", {"expect": ["alpha"]}) == 0.0
    with pytest.raises(UserError, match="check_list"):
        check_list(path, {"expect": ["("]})


def test_check_direct_json_object(local):
    rules = {"expected": {"name": "OBrien", "tags": ["a", "b"]}}
    assert check_direct_json_object({"name": "OBrien", "tags": ["a", "b"], "extra": 1}, rules) == 1.0
    assert check_direct_json_object(json.dumps({"name": "OBrien", "tags": ["a", "b"]}), rules) == 1.0
    # OSWorld turns every ' into " before parsing: single-quoted dicts parse, an apostrophe inside breaks it
    assert check_direct_json_object("{'name': 'OBrien', 'tags': ['a', 'b']}", rules) == 1.0
    assert check_direct_json_object(json.dumps({"name": "O'Brien"}), {"expected": {"name": "O'Brien"}}) == 0.0
    # a path is just text that is not JSON
    assert check_direct_json_object(local("r.json", json.dumps({"name": "OBrien", "tags": ["a", "b"]})), rules) == 0.0
    assert check_direct_json_object({"name": "OBrien", "tags": ["b", "a"]}, rules) == 0.0
    # OSWorld reads ignore_list_order from inside "expected", where it is compared as a key too: never passes
    assert check_direct_json_object({"name": "OBrien", "tags": ["b", "a"]}, {**rules, "ignore_list_order": True}) == 0.0
    in_expected = {"expected": {"tags": ["a", "b"], "ignore_list_order": True}}
    assert check_direct_json_object({"tags": ["b", "a"], "ignore_list_order": True}, in_expected) == 0.0
    assert check_direct_json_object({"name": "x", "tags": ["a", "b"]}, rules) == 0.0
    # a missing key is None
    assert check_direct_json_object({}, {"expected": {"k": None}}) == 1.0
    assert check_direct_json_object({"a": 1}, {"expected": {}}) == 1.0
    assert check_direct_json_object({"k": "v"}, {"expected": {"k": "__EVALUATION_FAILED__"}}) == 0.0
    assert check_direct_json_object(None, rules) == 0.0
    assert check_direct_json_object("not json at all", rules) == 0.0
    assert check_direct_json_object("[1, 2]", rules) == 0.0
    assert check_direct_json_object({"a": 1}, {"expected": ["a"]}) == 0.0
    assert check_direct_json_object({"a": 1}, {}) == 0.0


def test_check_direct_json_object_expect_in_result():
    rules = {"expect_in_result": True, "expected": {"title": "Flight", "airline": ["KLM", "Delta"]}}
    assert check_direct_json_object({"title": "Cheap Flight to AMS", "airline": ["Delta", "AF"]}, rules) == 1.0
    assert check_direct_json_object({"title": "Flight", "airline": "KLM"}, rules) == 1.0
    assert check_direct_json_object({"title": "Train", "airline": "KLM"}, rules) == 0.0
    assert check_direct_json_object({"title": "Flight", "airline": ["AF"]}, rules) == 0.0
    assert check_direct_json_object({"airline": "KLM"}, rules) == 0.0
    # OSWorld: an expected value that is neither a string nor a list scores 0, even when equal
    assert check_direct_json_object({"stops": 0}, {"expect_in_result": True, "expected": {"stops": 0}}) == 0.0
    # a list alternative only matches a list element or an equal string, not a number
    assert check_direct_json_object({"n": 1}, {"expect_in_result": True, "expected": {"n": [1]}}) == 0.0


def test_is_included_all_json_objects(local):
    # OSWorld's behaviour: every key of the RESULT is in the expected file with an equal value
    gold = local("gold.json", json.dumps({"a": 1, "b": [1, 2]}))
    superset = local("sup.json", json.dumps({"a": 1, "b": [1, 2], "c": "extra"}))
    subset = local("sub.json", json.dumps({"a": 1}))
    wrong = local("wrong.json", json.dumps({"a": 2, "b": [1, 2]}))
    assert is_included_all_json_objects(subset, gold) == 1.0
    assert is_included_all_json_objects(gold, gold) == 1.0
    assert is_included_all_json_objects(local("empty.json", "{}"), gold) == 1.0
    assert is_included_all_json_objects(superset, gold) == 0.0  # result key "c" is not expected
    assert is_included_all_json_objects(wrong, gold) == 0.0
    gold_list = local("gl.json", json.dumps([{"id": 1}]))
    assert is_included_all_json_objects(gold_list, gold_list) == 0.0  # objects only
    assert is_included_all_json_objects(None, gold) == 0.0
    assert is_included_all_json_objects(gold + ".missing", gold) == 0.0
    assert is_included_all_json_objects(local("bad.json", "{not json"), gold) == 0.0


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "places.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE bookmarks (title TEXT, url TEXT)")
        conn.executemany("INSERT INTO bookmarks VALUES (?, ?)", [("Docs", "https://a"), ("News", "https://b")])
    conn.close()
    return str(path)


def test_run_sqlite3(db, tmp_path):
    assert run_sqlite3(db, {"sql": "SELECT count(*) = 2 FROM bookmarks"}) == 1.0
    assert run_sqlite3(db, {"sql": "select count(*) > 0 from bookmarks where title = 'Docs';"}) == 1.0
    assert run_sqlite3(db, {"sql": "WITH t AS (SELECT title FROM bookmarks) SELECT count(*) FROM t WHERE title = 'x'"}) == 0.0
    assert run_sqlite3(db, {"sql": "SELECT count(*) FROM bookmarks"}) == 1.0  # 2 clamped to 1
    assert run_sqlite3(db, {"sql": "SELECT -3"}) == 0.0
    assert run_sqlite3(db, {"sql": "SELECT 0.25"}) == 0.25
    assert run_sqlite3(db, {"sql": "SELECT title FROM bookmarks"}) == 0.0  # non-numeric
    assert run_sqlite3(db, {"sql": "SELECT 1 FROM bookmarks WHERE 0"}) == 0.0  # no row
    assert run_sqlite3(db, {"sql": "SELECT 'a;b' = 'a;b'"}) == 1.0  # a ';' inside a string is fine
    assert run_sqlite3(db, {"sql": "SELECT 1; -- a trailing comment"}) == 1.0
    assert run_sqlite3(db, {"sql": "SELECT 1 FROM missing_table"}) == 0.0
    assert run_sqlite3(None, {"sql": "SELECT 1"}) == 0.0
    assert run_sqlite3(str(tmp_path / "none.sqlite"), {"sql": "SELECT 1"}) == 0.0
    not_db = tmp_path / "not.sqlite"
    not_db.write_text("hello, this is not a database file at all" * 20)
    assert run_sqlite3(str(not_db), {"sql": "SELECT count(*) FROM bookmarks"}) == 0.0
    # a runaway query is interrupted and scores 0
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    assert run_sqlite3(db, {"sql": slow}, timeout=0.2) == 0.0


def test_run_sqlite3_refuses_anything_but_one_select(db):
    for sql in [
        "DELETE FROM bookmarks",
        "SELECT 1; DELETE FROM bookmarks",
        "SELECT 1; SELECT 2",
        "ATTACH DATABASE 'x' AS x",
        "PRAGMA table_info(bookmarks)",
        "WITH t AS (SELECT 1) DELETE FROM bookmarks",
        "SELECT FROM WHERE",
        None,
    ]:
        with pytest.raises(UserError, match="run_sqlite3"):
            run_sqlite3(db, {"sql": sql})
    with pytest.raises(UserError, match="'sql'"):
        run_sqlite3(db, {})
    with pytest.raises(UserError, match="timeout"):
        run_sqlite3(db, {"sql": "SELECT 1"}, timeout="soon")
    with sqlite3.connect(db) as conn:  # nothing was deleted
        assert conn.execute("SELECT count(*) FROM bookmarks").fetchone()[0] == 2
    conn.close()


def test_compare_text_file(local):
    a = local("a.txt", "Hello  World\n\tsecond line\n")
    same = local("b.txt", "Hello  World\n\tsecond line\n")
    spaced = local("c.txt", "Hello World second   line")
    upper = local("d.txt", "HELLO WORLD\nSECOND LINE\n")
    assert compare_text_file(a, same) == 1.0
    assert compare_text_file(a, spaced) == 0.0
    assert compare_text_file(a, spaced, ignore_blanks=True) == 1.0
    assert compare_text_file(a, upper, ignore_blanks=True) == 0.0
    assert compare_text_file(a, upper, ignore_blanks=True, ignore_case=True) == 1.0
    assert compare_text_file(None, a) == 0.0
    assert compare_text_file(a + ".missing", a) == 0.0
    assert compare_text_file(a, None) == 0.0


def test_compare_config(local):
    settings = local("settings.json", '{"workbench.colorTheme": "Visual Studio Dark", "editor.fontSize": 14}')
    want = '{"workbench.colorTheme": "Visual Studio Dark"}\n'
    assert compare_config(settings, {"expected": want}, containment_ok=True) == 1.0
    assert compare_config(settings, {"expected": want}) == 1.0
    assert compare_config(settings, {"expected": want}, containment_ok=False) == 0.0
    assert compare_config(settings, {"expected": '{"workbench.colorTheme": "Light"}'}) == 0.0
    # OSWorld's containment: lists must be equal; nested dicts by key
    lists = local("lists.json", '{"a": [1, 2], "b": {"c": 1, "d": 2}}')
    assert compare_config(lists, {"expected": '{"a": [1]}'}) == 0.0
    assert compare_config(lists, {"expected": '{"b": {"c": 1}}'}) == 1.0
    # plain JSON only: a commented file is compared as text (the expected text as a substring)
    commented = local("c.json", '// c\n{"workbench.colorTheme": "Visual Studio Dark"}')
    assert compare_config(commented, {"expected": '{"workbench.colorTheme": "Visual Studio Dark"}'}) == 1.0
    assert compare_config(commented, {"expected": '{"workbench.colorTheme":"Visual Studio Dark"}'}) == 0.0
    text = local("OpenProject.txt", "my project\n")
    assert compare_config(text, {"expected": "project"}) == 1.0
    assert compare_config(text, {"expected": "my project\n"}, containment_ok=False) == 1.0
    assert compare_config(text, {"expected": "my project"}, containment_ok=False) == 0.0  # not stripped
    assert compare_config(text, {"expected": ""}) == 0.0
    assert compare_config(text, {"expected": {"a": 1}}) == 0.0  # OSWorld needs the expected text
    assert compare_config(None, {"expected": "x"}) == 0.0
    assert compare_config(text + ".missing", {"expected": "x"}) == 0.0


def test_compare_answer():
    assert compare_answer("42", {"expected": "42"}) == 1.0
    assert compare_answer("42\n", {"expected": "42"}) == 0.0  # nothing stripped (OSWorld)
    assert compare_answer("41", {"expected": "42"}) == 0.0
    assert compare_answer("", {"expected": ""}) == 0.0
    assert compare_answer(None, {"expected": "42"}) == 0.0
    with pytest.raises(UserError, match="compare_answer"):
        compare_answer("42", {})


def test_compare_result_files(local):
    gold = local("gold.txt", "3.14159\n")
    assert compare_result_files(local("r1.txt", "3.14159"), gold) == 1.0
    assert compare_result_files(local("r2.txt", "3.141592"), gold) == 1.0  # less than 1e-4 away
    assert compare_result_files(local("r3.txt", "The answer is 3.14159."), gold) == 1.0
    assert compare_result_files(local("r4.txt", "3.15"), gold) == 0.0
    five = local("five.txt", "5")
    assert compare_result_files(local("r6.txt", "15"), five) == 1.0  # OSWorld's substring test
    assert compare_result_files(local("r7.txt", "Total: 1,234"), local("big.txt", "1234")) == 0.0
    assert compare_result_files(local("r10.txt", "42.0001"), local("ft.txt", "42")) == 1.0  # "42" in it
    assert compare_result_files(local("r11.txt", "41.99995"), local("ft2.txt", "42")) == 1.0
    word = local("word.txt", "done\n")
    assert compare_result_files(local("r8.txt", " done "), word) == 1.0
    assert compare_result_files(local("r9.txt", "not done"), word) == 0.0
    assert compare_result_files(None, gold) == 0.0
    assert compare_result_files(gold + ".missing", gold) == 0.0


def test_compare_python_pure_text(local):
    gold = local("gold.py", "def f(a, b):\n    return a + b\n\n\nprint(f(1, 2))\n")
    same = local(
        "same.py",
        "#!/usr/bin/env python3\n# a comment\ndef f(a,b):  # add\n  return a+b\n\nprint(f(1,\n        2))",
    )
    different = local("diff.py", "def f(a, b):\n    return a - b\n\n\nprint(f(1, 2))\n")
    renested = local("nest.py", "def f(a, b):\n    return a + b\nprint(f(1, 2))\n")
    moved = local("moved.py", "def f(a, b):\n    pass\nreturn a + b\nprint(f(1, 2))\n")
    fenced = local("fenced.py", "```python\ndef f(a, b):\n    return a + b\n\n\nprint(f(1, 2))\n```\n")
    string_changed = local("s.py", "def f(a, b):\n    return a + b\n\n\nprint(f(1, 2), '# not a comment')\n")
    # a comment line and other spacing: OSWorld compares text, 0.0 (we compared tokens: 1.0)
    assert compare_python_pure_text(same, gold) == 0.0
    assert compare_python_pure_text(local("ws.py", "def f(a,b):\n    return a+b\nprint(f(1, 2))\n"), gold) == 0.0
    assert compare_python_pure_text(local("ind2.py", "def f(a, b):\n  return a + b\nprint(f(1, 2))\n"), gold) == 0.0
    # header, blank lines, trailing spaces and a tab for 4 spaces do not count: OSWorld 1.0
    layout = "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\ndef f(a, b):  \n\treturn a + b\n\n\n\nprint(f(1, 2))"
    assert compare_python_pure_text(local("layout.py", layout), gold) == 1.0
    assert compare_python_pure_text(renested, gold) == 1.0  # blank lines only
    # identical text that does not tokenize as Python: OSWorld 1.0 (we scored 0.0)
    broken = "def f(:\n  '''unterminated\n"
    assert compare_python_pure_text(local("b1.py", broken), local("b2.py", broken)) == 1.0
    assert compare_python_pure_text(different, gold) == 0.0
    assert compare_python_pure_text(moved, gold) == 0.0
    assert compare_python_pure_text(fenced, gold) == 0.0
    assert compare_python_pure_text(string_changed, gold) == 0.0
    assert compare_python_pure_text(local("broken.py", "def f(:\n  '''unterminated\n"), gold) == 0.0
    assert compare_python_pure_text(None, gold) == 0.0
    assert compare_python_pure_text(gold + ".missing", gold) == 0.0


def test_check_list_lines_keep_their_newline(local):
    # OSWorld iterates the file: each line keeps its "\n", and only "\n" ends a line
    assert check_list(local("a.txt", "a \nb\n"), {"expect": [r"\s$"], "unexpect": []}) == 1.0
    assert check_list(local("b.txt", "a\n"), {"expect": [r"a\n"]}) == 1.0
    assert check_list(local("c.txt", "a\x0cb\n"), {"expect": ["^b"]}) == 0.0
    assert check_list(local("d.txt", "\n"), {"unexpect": [".+"]}) == 1.0
