"""Named evaluator templates: expansion, params, overrides, errors, and use from Hydra and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.core.errors import UserError
from mcpworld.evaluation.spec import evaluate_spec
from mcpworld.evaluation.templates import builtin_templates, expand

TEMPLATES = builtin_templates()


def test_expansion_renders_params_and_keeps_their_types():
    spec = expand({"template": "directory_listing", "with": {"path": "~/p", "entries": ["a", "b"]}}, TEMPLATES, "t.yaml")
    assert spec == {
        "func": "exact_match",
        "result": {"type": "list_directory", "path": "~/p"},
        "expected": {"type": "rule", "rules": {"expected": ["a", "b"]}},
    }


def test_keys_beside_template_override_and_plain_specs_pass_through():
    spec = expand(
        {"template": "file_text_equals", "with": {"path": "~/a", "text": "x"}, "postconfig": [{"sleep": 0}]}, TEMPLATES, "t.yaml"
    )
    assert spec["postconfig"] == [{"sleep": 0}] and spec["result"]["path"] == "~/a"
    plain = {"func": "exact_match", "result": {"type": "rule", "rules": {}}}
    assert expand(plain, TEMPLATES, "t.yaml") is plain


def test_template_scores_like_the_spec_it_stands_for(env):
    env.write("out.txt", "hello\n")
    ok = expand({"template": "file_text_equals", "with": {"path": "~/out.txt", "text": "hello"}}, TEMPLATES, "t")
    bad = expand({"template": "file_text_equals", "with": {"path": "~/out.txt", "text": "bye"}}, TEMPLATES, "t")
    assert evaluate_spec(env, ok, "DONE")[0] == 1.0 and evaluate_spec(env, bad, "DONE")[0] == 0.0
    inc = expand(
        {"template": "file_includes", "with": {"path": "~/out.txt", "include": ["hell"], "exclude": ["x"]}}, TEMPLATES, "t"
    )
    assert evaluate_spec(env, inc, "DONE")[0] == 1.0


@pytest.mark.parametrize(
    "spec, message",
    [
        (
            {"template": "file_text_equal", "with": {}},
            "unknown evaluator template 'file_text_equal'; did you mean file_text_equals",
        ),
        ({"template": "file_text_equals", "with": {"path": "~/a"}}, "'text' is undefined"),
        ({"template": "file_text_equals", "with": ["x"]}, "'with' must be a mapping"),
    ],
)
def test_template_mistakes_name_the_file(spec, message):
    with pytest.raises(UserError, match=message) as err:
        expand(spec, TEMPLATES, "tasks/x/task.yaml")
    assert str(err.value).startswith("tasks/x/task.yaml")


def test_the_cli_expands_shipped_templates(tmp_path):
    root = Path(__file__).resolve().parents[2]
    home = tmp_path / "home"
    (home / "projects" / "alpha" / "src").mkdir(parents=True)
    (home / "projects" / "alpha" / "tests").mkdir()
    task = root / "mcpworld/data/tasks/xterm/make_project_dirs/task.yaml"
    out = subprocess.run(
        [sys.executable, "-m", "mcpworld.evaluation", str(task), "--home", str(home)], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out)["score"] == 1.0
