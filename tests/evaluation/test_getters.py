from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation.getters.generic import (
    content_from_vm_file,
    list_directory,
    rule,
    vm_command_error,
    vm_command_line,
    vm_file,
)


@pytest.mark.parametrize("task_path", ["/home/user/docs/a.txt", "~/docs/a.txt", "docs/a.txt", "/root/docs/a.txt"])
def test_vm_file_paths_map_onto_the_home(env, task_path):
    env.write("docs/a.txt", "hello")
    local = vm_file(env, {"type": "vm_file", "path": task_path, "dest": "copy.txt"})
    assert local == str((env.cache_dir / "copy.txt").resolve())
    assert Path(local).read_text() == "hello"


def test_vm_file_dest_defaults_to_basename(env):
    env.write("a/b/report.csv", "x,y\n")
    assert Path(vm_file(env, {"type": "vm_file", "path": "~/a/b/report.csv"})).name == "report.csv"


def test_vm_file_missing_gives_none_and_drops_a_stale_copy(env):
    env.write("out.txt", "first")
    cfg = {"type": "vm_file", "path": "~/out.txt", "dest": "out.txt"}
    assert vm_file(env, cfg) is not None
    env.resolve("~/out.txt").unlink()
    assert vm_file(env, cfg) is None
    assert not (env.cache_dir / "out.txt").exists()


def test_vm_file_dest_cannot_escape_the_cache(env):
    env.write("a.txt", "x")
    with pytest.raises(UserError, match="outside the cache"):
        vm_file(env, {"type": "vm_file", "path": "~/a.txt", "dest": "../../escape.txt"})


def test_vm_file_requires_path(env):
    with pytest.raises(UserError, match="'path'"):
        vm_file(env, {"type": "vm_file"})


def test_vm_file_multi_and_gives(env):
    env.write("one.txt", "1")
    env.write("two.txt", "2")
    cfg = {"type": "vm_file", "multi": True, "path": ["~/one.txt", "~/missing.txt", "~/two.txt"], "dest": ["1", "m", "2"]}
    everything = vm_file(env, {**cfg, "gives": [0, 1, 2]})
    assert [Path(p).read_text() if p else None for p in everything] == ["1", None, "2"]
    assert Path(vm_file(env, {**cfg, "gives": [2]})).read_text() == "2"
    picked = vm_file(env, {**cfg, "gives": [0, 1]})
    assert isinstance(picked, list) and picked[1] is None and Path(picked[0]).read_text() == "1"
    with pytest.raises(UserError, match="gives"):
        vm_file(env, {**cfg, "gives": [7]})
    with pytest.raises(UserError, match="gives"):
        vm_file(env, {**cfg, "gives": [-1]})
    with pytest.raises(UserError, match="'dest' has 2"):
        vm_file(env, {**cfg, "dest": ["a", "b"]})


def test_vm_file_multi_without_gives_returns_the_first_file_like_osworld(env):
    """OSWorld's get_vm_file defaults ``gives`` to [0]: a multi fetch without it gives the first path
    alone (a string), while still fetching the others into the cache; several ``gives`` come back in
    ``path`` order."""
    env.write("a.xlsx", "A")
    env.write("b.csv", "B")
    cfg = {"type": "vm_file", "multi": True, "path": ["~/a.xlsx", "~/b.csv"], "dest": ["a.xlsx", "b.csv"]}
    first = vm_file(env, cfg)
    assert isinstance(first, str) and Path(first).read_text() == "A"
    assert (Path(first).parent / "b.csv").read_text() == "B"
    both = vm_file(env, {**cfg, "gives": [1, 0]})
    assert [Path(p).read_text() for p in both] == ["A", "B"]


def test_vm_command_line_runs_in_home_and_joins_lists(env):
    env.write("notes.txt", "it's here\n")
    assert vm_command_line(env, {"type": "vm_command_line", "command": "cat notes.txt"}) == "it's here\n"
    out = vm_command_line(env, {"type": "vm_command_line", "command": ["echo", "a b", "it's"], "shell": False})
    assert out == "a b it's\n"
    assert env.shell_calls[-1] == "echo 'a b' 'it'\"'\"'s'"


def test_vm_command_error_returns_stderr(env):
    assert vm_command_error(env, {"type": "vm_command_error", "command": "echo oops >&2; exit 3"}) == "oops\n"


def test_vm_command_timeout_raises(env):
    with pytest.raises(TimeoutError):
        vm_command_line(env, {"type": "vm_command_line", "command": "sleep 5", "timeout": 0.2})


def test_rule_returns_rules_verbatim(env):
    rules = {"expected": ["a", {"b": 1}]}
    assert rule(env, {"type": "rule", "rules": rules}) is rules
    with pytest.raises(UserError, match="'rules'"):
        rule(env, {"type": "rule"})


def test_list_directory(env):
    env.write("d/b.txt", "")
    env.write("d/a.txt", "")
    (env.home / "d" / "sub").mkdir()
    assert list_directory(env, {"type": "list_directory", "path": "/home/user/d"}) == ["a.txt", "b.txt", "sub"]
    assert list_directory(env, {"type": "list_directory", "path": "~/nope"}) is None


def test_content_from_vm_file(env):
    env.write("t.txt", "héllo\n")
    assert content_from_vm_file(env, {"type": "content_from_vm_file", "path": "~/t.txt", "file_type": "txt"}) == "héllo\n"
    assert content_from_vm_file(env, {"type": "content_from_vm_file", "path": "~/t.txt", "file_type": "text"}) == "héllo\n"
    assert content_from_vm_file(env, {"type": "content_from_vm_file", "path": "~/gone.txt", "file_type": "txt"}) is None
    with pytest.raises(UserError, match="xlsx"):
        content_from_vm_file(env, {"type": "content_from_vm_file", "path": "~/t.txt", "file_type": "xlsx"})


def test_active_tab_html_parse_names_a_bad_category(env):
    from mcpworld.evaluation.getters.chrome_pages import active_tab_html_parse

    with pytest.raises(UserError, match="category must be one of class, label, xpath, input, class&url"):
        active_tab_html_parse(env, {"type": "active_tab_html_parse", "category": "css"})
